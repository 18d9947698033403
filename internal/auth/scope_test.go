package auth_test

import (
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/auth"
)

// designScopes is the list of DESIGN.md section 4, in its order.
const designScopes = `admin:read admin:write extraction:read extraction:write
  documents:read documents:write graph:read graph:write search:read
  mcp:use mcp:admin providers:read providers:write tasks:read tasks:write
  notifications:read notifications:write user-activity:read
  user-activity:write integrations:read integrations:write discovery:read
  discovery:write schema:read schema:write chat:use agents:read agents:run`

func TestAllScopes(t *testing.T) {
	t.Parallel()

	names := auth.AllScopes.Names()
	require.Len(t, names, 28)
	require.Equal(t, strings.Fields(designScopes), names)
	for _, n := range names {
		s, ok := auth.ParseScope(n)
		require.True(t, ok, n)
		require.Equal(t, n, s.String())
		require.True(t, auth.AllScopes.Has(s), n)
	}
	require.False(t, auth.AllScopes.Has(auth.ScopeNone))
}

func TestParseScopes(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		in      []string
		want    []string // Names of the result; nil for an error
		wantErr string
	}{
		{name: "Empty", in: nil, want: []string{}},
		{name: "One", in: []string{"graph:read"}, want: []string{"graph:read"}},
		{name: "SortedByDeclaration", in: []string{"schema:write", "admin:read", "mcp:use"}, want: []string{"admin:read", "mcp:use", "schema:write"}},
		{name: "Duplicates", in: []string{"tasks:read", "tasks:read"}, want: []string{"tasks:read"}},
		{name: "Spaces", in: []string{" search:read "}, want: []string{"search:read"}},
		{name: "All", in: strings.Fields(designScopes), want: strings.Fields(designScopes)},
		{name: "Unknown", in: []string{"graph:read", "graph:delete"}, wantErr: `unknown scope "graph:delete"`},
		{name: "WrongCase", in: []string{"Graph:Read"}, wantErr: `unknown scope "Graph:Read"`},
		{name: "EmptyName", in: []string{""}, wantErr: `unknown scope ""`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := auth.ParseScopes(tt.in)
			if tt.wantErr != "" {
				require.EqualError(t, err, tt.wantErr)
				require.Zero(t, got)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got.Names())
			// Round trip: the names parse back to the same set.
			again, err := auth.ParseScopes(got.Names())
			require.NoError(t, err)
			require.Equal(t, got, again)
		})
	}
}

func TestScopesCovers(t *testing.T) {
	t.Parallel()

	set := func(names ...string) auth.Scopes {
		s, err := auth.ParseScopes(names)
		require.NoError(t, err)
		return s
	}
	tests := []struct {
		name  string
		s     auth.Scopes
		other auth.Scopes
		want  bool
	}{
		{name: "EmptyCoversEmpty", s: 0, other: 0, want: true},
		{name: "AnyCoversEmpty", s: set("graph:read"), other: 0, want: true},
		{name: "Equal", s: set("graph:read", "graph:write"), other: set("graph:read", "graph:write"), want: true},
		{name: "Superset", s: set("graph:read", "graph:write"), other: set("graph:write"), want: true},
		{name: "Subset", s: set("graph:write"), other: set("graph:read", "graph:write"), want: false},
		{name: "Disjoint", s: set("graph:read"), other: set("search:read"), want: false},
		{name: "AllCoversAll", s: auth.AllScopes, other: auth.AllScopes, want: true},
		{name: "AllCoversOne", s: auth.AllScopes, other: set("schema:write"), want: true},
		{name: "EmptyCoversNone", s: 0, other: set("admin:read"), want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, tt.s.Covers(tt.other))
		})
	}
}

func TestScopeString(t *testing.T) {
	t.Parallel()

	require.Equal(t, "admin:read", auth.AdminRead.String())
	require.Equal(t, "schema:write", auth.SchemaWrite.String())
	require.Equal(t, "scope(200)", auth.Scope(200).String())
	_, ok := auth.ParseScope("")
	require.False(t, ok)
	require.True(t, auth.Scopes(0).With(auth.MCPUse).Has(auth.MCPUse))
	require.False(t, auth.Scopes(0).With(auth.MCPUse).Has(auth.MCPAdmin))
}

// TestRoleScopes pins the role→scope mapping of OIDC sessions: each role
// holds the scopes of the roles below it and adds its own; every scope is
// placed (the administrators hold them all).
func TestRoleScopes(t *testing.T) {
	t.Parallel()
	parse := func(names string) auth.Scopes {
		s, err := auth.ParseScopes(strings.Fields(names))
		require.NoError(t, err)
		return s
	}
	person := parse("admin:read admin:write notifications:read notifications:write user-activity:read user-activity:write")
	viewer := person | parse(`extraction:read documents:read graph:read search:read mcp:use providers:read tasks:read
		integrations:read discovery:read schema:read chat:use agents:read`)
	editor := viewer | parse("extraction:write documents:write graph:write tasks:write agents:run")
	p, o := uuid.New(), uuid.New()
	for _, tc := range []struct {
		name string
		p    auth.Principal
		want auth.Scopes
	}{
		{"NoRole", auth.Principal{}, person},
		{"ProjectViewer", auth.Principal{ProjectRoles: map[uuid.UUID]auth.ProjectRole{p: auth.ProjectViewer}}, viewer},
		{"OrgMember", auth.Principal{OrgRoles: map[uuid.UUID]auth.OrgRole{o: auth.OrgMember}}, viewer},
		{"ProjectEditor", auth.Principal{ProjectRoles: map[uuid.UUID]auth.ProjectRole{p: auth.ProjectEditor}}, editor},
		{"HighestRoleWins", auth.Principal{
			OrgRoles:     map[uuid.UUID]auth.OrgRole{o: auth.OrgMember},
			ProjectRoles: map[uuid.UUID]auth.ProjectRole{p: auth.ProjectEditor, uuid.New(): auth.ProjectViewer},
		}, editor},
		{"ProjectAdmin", auth.Principal{ProjectRoles: map[uuid.UUID]auth.ProjectRole{p: auth.ProjectAdmin}}, auth.AllScopes},
		{"OrgAdmin", auth.Principal{OrgRoles: map[uuid.UUID]auth.OrgRole{o: auth.OrgAdmin}}, auth.AllScopes},
		{"OrgOwner", auth.Principal{OrgRoles: map[uuid.UUID]auth.OrgRole{o: auth.OrgOwner}}, auth.AllScopes},
		{"Superadmin", auth.Principal{Superadmin: true}, auth.AllScopes},
	} {
		require.Equal(t, tc.want.Names(), auth.RoleScopes(&tc.p).Names(), tc.name)
	}
	require.Equal(t, []string{"mcp:admin", "providers:write", "integrations:write", "discovery:write", "schema:write"}, (auth.AllScopes &^ editor).Names())
}
