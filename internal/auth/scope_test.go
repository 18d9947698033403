package auth_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/auth"
)

// designScopes is the list of DESIGN.md section 4, in its order.
const designScopes = `admin:read admin:write extraction:read extraction:write
  documents:read documents:write graph:read graph:write search:read
  mcp:use mcp:admin providers:read providers:write tasks:read tasks:write
  notifications:read notifications:write user-activity:read
  user-activity:write integrations:read integrations:write discovery:read
  discovery:write schema:read schema:write`

func TestAllScopes(t *testing.T) {
	t.Parallel()

	names := auth.AllScopes.Names()
	require.Len(t, names, 25)
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
