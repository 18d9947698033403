// Package auth authenticates callers (API tokens and OIDC access tokens) and
// decides, in one place, what each caller may reach: every route declares a
// Rule, and Guard.Check applies it.
package auth

import (
	"fmt"
	"strings"
)

// Scope is one permission a token can carry.
type Scope uint8

// The scopes of DESIGN.md section 4.
const (
	ScopeNone Scope = iota
	AdminRead
	AdminWrite
	ExtractionRead
	ExtractionWrite
	DocumentsRead
	DocumentsWrite
	GraphRead
	GraphWrite
	SearchRead
	MCPUse
	MCPAdmin
	ProvidersRead
	ProvidersWrite
	TasksRead
	TasksWrite
	NotificationsRead
	NotificationsWrite
	UserActivityRead
	UserActivityWrite
	IntegrationsRead
	IntegrationsWrite
	DiscoveryRead
	DiscoveryWrite
	SchemaRead
	SchemaWrite
	ChatUse
	AgentsRead
	AgentsRun
	scopeCount
)

var scopeNames = [scopeCount]string{ //nolint:gochecknoglobals // constant table
	"", "admin:read", "admin:write", "extraction:read", "extraction:write", "documents:read", "documents:write",
	"graph:read", "graph:write", "search:read", "mcp:use", "mcp:admin", "providers:read", "providers:write",
	"tasks:read", "tasks:write", "notifications:read", "notifications:write", "user-activity:read",
	"user-activity:write", "integrations:read", "integrations:write", "discovery:read", "discovery:write",
	"schema:read", "schema:write", "chat:use", "agents:read", "agents:run",
}

// String is the scope's wire name.
func (s Scope) String() string {
	if s < scopeCount {
		return scopeNames[s]
	}
	return fmt.Sprintf("scope(%d)", s)
}

// ParseScope reads a wire name.
func ParseScope(name string) (Scope, bool) {
	for i := Scope(1); i < scopeCount; i++ {
		if scopeNames[i] == name {
			return i, true
		}
	}
	return ScopeNone, false
}

// Scopes is a set of scopes.
type Scopes uint32

// AllScopes holds every scope.
const AllScopes = Scopes(1<<scopeCount - 2)

// Has reports whether s holds scope.
func (s Scopes) Has(scope Scope) bool { return scope != ScopeNone && s&(1<<scope) != 0 }

// With returns s plus scope.
func (s Scopes) With(scope Scope) Scopes { return s | 1<<scope }

// Covers reports whether every scope of other is in s.
func (s Scopes) Covers(other Scopes) bool { return other&^s == 0 }

// Names lists the wire names in a fixed order.
func (s Scopes) Names() []string {
	out := []string{}
	for i := Scope(1); i < scopeCount; i++ {
		if s.Has(i) {
			out = append(out, scopeNames[i])
		}
	}
	return out
}

// ParseScopes reads a list of wire names; an unknown name is an error that
// names it.
func ParseScopes(names []string) (Scopes, error) {
	var s Scopes
	for _, n := range names {
		n = strings.TrimSpace(n)
		sc, ok := ParseScope(n)
		if !ok {
			return 0, fmt.Errorf("unknown scope %q", n)
		}
		s = s.With(sc)
	}
	return s, nil
}

// Access levels of the role→scope mapping of OIDC sessions, lowest first.
type level uint8

const (
	levelNone   level = iota
	levelPerson       // any signed-in person, without a role
	levelViewer       // project viewer, organization member
	levelEditor       // project editor
	levelAdmin        // project admin, organization owner or admin, superadmin
)

// scopeLevel is the lowest level whose OIDC sessions hold scope: the one
// place that maps roles to scopes (DESIGN 4: "OIDC sessions get the scopes
// of the user's roles"). A person without a role manages their own account
// (tokens, new organizations), inbox and history; viewers read everything
// of their projects, search and use MCP tools; editors also change content
// and resolve tasks; admins also manage providers, MCP servers, schemas,
// integrations and discovery. Chat and reading agents are for viewers,
// running agents for editors (agents change content through their tools).
// A new scope must be placed here.
func scopeLevel(s Scope) level {
	switch s {
	case AdminRead, AdminWrite, NotificationsRead, NotificationsWrite, UserActivityRead, UserActivityWrite:
		return levelPerson
	case ExtractionRead, DocumentsRead, GraphRead, SearchRead, MCPUse, ProvidersRead, TasksRead,
		IntegrationsRead, DiscoveryRead, SchemaRead, ChatUse, AgentsRead:
		return levelViewer
	case ExtractionWrite, DocumentsWrite, GraphWrite, TasksWrite, AgentsRun:
		return levelEditor
	case MCPAdmin, ProvidersWrite, IntegrationsWrite, DiscoveryWrite, SchemaWrite:
		return levelAdmin
	}
	return levelNone
}

// scopesUpTo holds the scopes of the levels up to l.
func scopesUpTo(l level) Scopes {
	var out Scopes
	for s := Scope(1); s < scopeCount; s++ {
		if sl := scopeLevel(s); sl != levelNone && sl <= l {
			out = out.With(s)
		}
	}
	return out
}

// RoleScopes are the scopes an OIDC session of p holds: those of the
// highest of p's roles (superadmins hold every scope). Where a scope is
// used is still checked against the role there: a user who administers
// one project and views another holds graph:write, and writes only in the
// first.
func RoleScopes(p *Principal) Scopes {
	if p.Superadmin {
		return AllScopes
	}
	l := levelPerson
	for _, r := range p.OrgRoles {
		switch {
		case r.rank() >= OrgAdmin.rank():
			l = max(l, levelAdmin)
		case r.rank() > 0:
			l = max(l, levelViewer)
		}
	}
	for _, r := range p.ProjectRoles {
		switch r {
		case ProjectAdmin:
			l = max(l, levelAdmin)
		case ProjectEditor:
			l = max(l, levelEditor)
		case ProjectViewer:
			l = max(l, levelViewer)
		}
	}
	return scopesUpTo(l)
}
