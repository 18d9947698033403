package auth_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/errs"
)

// TestCheckOwner walks the routes whose path names a resource: the guard
// resolves it to its tenant and checks the tenant as on any other route,
// answering the resource's own not-found for a malformed, unknown or
// invisible id, before any permission_denied.
func TestCheckOwner(t *testing.T) {
	t.Parallel()

	var (
		orgA, orgB = uuid.New(), uuid.New()
		pA1, pA2   = uuid.New(), uuid.New()
		pB         = uuid.New()
	)
	graph := auth.Scopes(0).With(auth.GraphRead).With(auth.GraphWrite)
	viewer := &auth.Principal{
		UserID: uuid.New(), Scopes: graph,
		OrgRoles: map[uuid.UUID]auth.OrgRole{orgA: auth.OrgMember}, ProjectRoles: map[uuid.UUID]auth.ProjectRole{pA1: auth.ProjectViewer},
	}
	viewerNoScope := &auth.Principal{UserID: viewer.UserID, OrgRoles: viewer.OrgRoles, ProjectRoles: viewer.ProjectRoles}
	orgAdmin := &auth.Principal{UserID: uuid.New(), Scopes: auth.AllScopes, OrgRoles: map[uuid.UUID]auth.OrgRole{orgA: auth.OrgAdmin}}
	super := &auth.Principal{UserID: uuid.New(), Scopes: auth.AllScopes, Superadmin: true}
	bound := &auth.Principal{
		UserID: uuid.New(), Scopes: auth.AllScopes, BoundProject: pA1,
		ProjectRoles: map[uuid.UUID]auth.ProjectRole{pA1: auth.ProjectEditor, pA2: auth.ProjectEditor},
	}

	// The resources, by id.
	var (
		docA1, docA2, docB         = uuid.New(), uuid.New(), uuid.New()
		noteMine, noteMineElse     = uuid.New(), uuid.New()
		noteMineNowhere, noteOther = uuid.New(), uuid.New()
		tokenMine, tokenOther      = uuid.New(), uuid.New()
		packShared, packA, packB   = uuid.New(), uuid.New(), uuid.New()
		credA, credB               = uuid.New(), uuid.New()
	)
	tenants := map[uuid.UUID]auth.Tenant{
		docA1: {Project: pA1}, docA2: {Project: pA2}, docB: {Project: pB},
		noteMine: {User: viewer.UserID, Project: pA1}, noteMineElse: {User: viewer.UserID, Project: pA2},
		noteMineNowhere: {User: viewer.UserID}, noteOther: {User: uuid.New(), Project: pA1},
		tokenMine: {User: viewer.UserID}, tokenOther: {User: orgAdmin.UserID},
		packShared: {}, packA: {Org: orgA}, packB: {Org: orgB},
		credA: {Org: orgA}, credB: {Org: orgB},
	}
	errLookup := errors.New("connection refused")
	failing := uuid.New()
	owner := func(kind string) *auth.Owner {
		return &auth.Owner{
			Param: "id", Kind: kind, NotFound: errs.New(errs.NotFound, kind+" not found"),
			Resolve: func(_ context.Context, id uuid.UUID) (auth.Tenant, error) {
				if id == failing {
					return auth.Tenant{}, errLookup
				}
				t, ok := tenants[id]
				if !ok {
					return auth.Tenant{}, errs.New(errs.NotFound, "no such row")
				}
				return t, nil
			},
		}
	}
	read := auth.Rule{Scope: auth.GraphRead, Resource: auth.Project, ProjectRole: auth.ProjectViewer, Owner: owner("document")}
	adminWrite := auth.Rule{Scope: auth.AdminWrite, Resource: auth.Project, ProjectRole: auth.ProjectViewer, Owner: owner("document")}
	write := auth.Rule{Scope: auth.GraphWrite, Resource: auth.Project, ProjectRole: auth.ProjectEditor, Owner: owner("document")}
	named := read
	named.Owner = owner("document")
	named.Owner.NamedProject = true
	notes := auth.Rule{Scope: auth.GraphRead, Resource: auth.Personal, Owner: owner("notification")}
	tokens := auth.Rule{Scope: auth.GraphRead, Resource: auth.Self, Owner: owner("token")}
	users := auth.Rule{Scope: auth.AdminWrite, Resource: auth.Superadmin, Owner: owner("token")}
	packs := auth.Rule{Scope: auth.GraphRead, Resource: auth.Authenticated, Owner: owner("pack")}
	creds := auth.Rule{Scope: auth.GraphRead, Resource: auth.Org, OrgRole: auth.OrgAdmin, Owner: owner("credential")}

	res := func(id uuid.UUID) auth.Request { return auth.Request{ResourceID: id.String()} }
	in := func(project, id uuid.UUID) auth.Request {
		return auth.Request{ProjectID: project.String(), ResourceID: id.String()}
	}
	tests := []struct {
		name    string
		p       *auth.Principal
		rule    auth.Rule
		req     auth.Request
		want    auth.Access
		code    errs.Code
		message string
	}{
		// Project routes: the resource's project is the request's.
		{name: "ResourceOfVisibleProject", p: viewer, rule: read, req: res(docA1), want: auth.Access{ProjectID: pA1, OrgID: orgA, ResourceID: docA1}},
		{name: "ResourceOfInvisibleProject", p: viewer, rule: read, req: res(docA2), code: errs.NotFound, message: "document not found"},
		{name: "ResourceOfOtherTenant", p: viewer, rule: read, req: res(docB), code: errs.NotFound, message: "document not found"},
		{name: "MalformedID", p: super, rule: read, req: auth.Request{ResourceID: "not-a-uuid"}, code: errs.NotFound, message: "document not found"},
		{name: "UnknownID", p: super, rule: read, req: res(uuid.New()), code: errs.NotFound, message: "document not found"},
		{name: "LookupFails", p: super, rule: read, req: res(failing), code: errs.Internal},
		{name: "InvisibleBeforeMissingScope", p: viewer, rule: adminWrite, req: res(docB), code: errs.NotFound},
		{name: "VisibleMissingScope", p: viewer, rule: adminWrite, req: res(docA1), code: errs.PermissionDenied, message: "admin:write"},
		{name: "VisibleRoleTooLow", p: viewer, rule: write, req: res(docA1), code: errs.PermissionDenied, message: "editor"},
		{name: "NamedProjectIsTheResources", p: viewer, rule: read, req: in(pA1, docA1), want: auth.Access{ProjectID: pA1, OrgID: orgA, ResourceID: docA1}},
		{name: "NamedProjectIsNotTheResources", p: super, rule: read, req: in(pA2, docA1), code: errs.NotFound, message: "document not found"},
		{name: "NamedProjectInvisible", p: viewer, rule: read, req: in(pB, docA1), code: errs.NotFound, message: "document not found"},
		{name: "NamedProjectMalformed", p: viewer, rule: read, req: auth.Request{ProjectID: "x", ResourceID: docA1.String()}, code: errs.NotFound, message: "document not found"},
		{name: "HeaderOrgMismatch", p: viewer, rule: read, req: auth.Request{ResourceID: docA1.String(), HeaderOrgID: orgB.String()}, code: errs.NotFound, message: "document not found"},
		{name: "BoundTokenOwnProject", p: bound, rule: write, req: res(docA1), want: auth.Access{ProjectID: pA1, OrgID: orgA, ResourceID: docA1}},
		{name: "BoundTokenResourceElsewhere", p: bound, rule: write, req: res(docA2), code: errs.PermissionDenied, message: "bound"},
		{name: "BoundTokenResourceInvisible", p: bound, rule: write, req: res(docB), code: errs.NotFound, message: "document not found"},
		{name: "BoundTokenNamesAnotherProject", p: bound, rule: write, req: in(pA2, docA2), code: errs.PermissionDenied, message: "bound"},
		{name: "NamedProjectRequired", p: viewer, rule: named, req: res(docA1), code: errs.Invalid},
		{name: "NamedProjectGiven", p: viewer, rule: named, req: in(pA1, docA1), want: auth.Access{ProjectID: pA1, OrgID: orgA, ResourceID: docA1}},
		{name: "NamedProjectOfBoundToken", p: bound, rule: named, req: res(docA1), want: auth.Access{ProjectID: pA1, OrgID: orgA, ResourceID: docA1}},
		// Personal routes: the caller's own, in the project named.
		{name: "OwnNotification", p: viewer, rule: notes, req: res(noteMine), want: auth.Access{ResourceID: noteMine}},
		{name: "OwnNotificationInProject", p: viewer, rule: notes, req: in(pA1, noteMine), want: auth.Access{ProjectID: pA1, OrgID: orgA, ResourceID: noteMine}},
		{name: "OwnNotificationOfAnotherProject", p: viewer, rule: notes, req: in(pA1, noteMineElse), code: errs.NotFound, message: "notification not found"},
		{name: "OwnNotificationOfNoProject", p: viewer, rule: notes, req: in(pA1, noteMineNowhere), code: errs.NotFound, message: "notification not found"},
		{name: "SomeoneElsesNotification", p: viewer, rule: notes, req: res(noteOther), code: errs.NotFound, message: "notification not found"},
		{name: "SomeoneElsesNotificationInProject", p: viewer, rule: notes, req: in(pA1, noteOther), code: errs.NotFound},
		{name: "OwnNotificationOrgHeader", p: viewer, rule: notes, req: auth.Request{ResourceID: noteMine.String(), HeaderOrgID: orgA.String()}, want: auth.Access{OrgID: orgA, ResourceID: noteMine}},
		{name: "OwnNotificationForeignOrgHeader", p: viewer, rule: notes, req: auth.Request{ResourceID: noteMine.String(), HeaderOrgID: orgB.String()}, code: errs.NotFound, message: "notification not found"},
		{name: "OwnNotificationMissingScope", p: viewerNoScope, rule: notes, req: res(noteMine), code: errs.PermissionDenied, message: "graph:read"},
		{name: "SomeoneElsesNotificationMissingScope", p: viewerNoScope, rule: notes, req: res(noteOther), code: errs.PermissionDenied, message: "graph:read"},
		// Self routes: the caller's own.
		{name: "OwnToken", p: viewer, rule: tokens, req: res(tokenMine), want: auth.Access{ResourceID: tokenMine}},
		{name: "SomeoneElsesToken", p: viewer, rule: tokens, req: res(tokenOther), code: errs.NotFound, message: "token not found"},
		{name: "OwnTokenBoundToken", p: bound, rule: tokens, req: res(tokenMine), code: errs.PermissionDenied},
		// Superadmin routes: the grant before the look-up, then anyone's.
		{name: "SuperadminAnyToken", p: super, rule: users, req: res(tokenOther), want: auth.Access{ResourceID: tokenOther}},
		{name: "SuperadminUnknown", p: super, rule: users, req: res(uuid.New()), code: errs.NotFound},
		{name: "NotSuperadminUnknown", p: orgAdmin, rule: users, req: res(uuid.New()), code: errs.PermissionDenied, message: "superadmin"},
		// Authenticated routes: shared, or of a tenant the caller sees.
		{name: "SharedPack", p: viewer, rule: packs, req: res(packShared), want: auth.Access{ResourceID: packShared}},
		{name: "PackOfProjectsOrg", p: viewer, rule: packs, req: res(packA), want: auth.Access{OrgID: orgA, ResourceID: packA}},
		{name: "PackOfAdministeredOrg", p: orgAdmin, rule: packs, req: res(packA), want: auth.Access{OrgID: orgA, ResourceID: packA}},
		{name: "PackOfOtherOrg", p: viewer, rule: packs, req: res(packB), code: errs.NotFound, message: "pack not found"},
		{name: "PackOfOtherOrgBoundToken", p: bound, rule: packs, req: res(packB), code: errs.NotFound},
		{name: "PackOfOtherOrgSuperadmin", p: super, rule: packs, req: res(packB), want: auth.Access{OrgID: orgB, ResourceID: packB}},
		// Org routes.
		{name: "CredentialOfAdministeredOrg", p: orgAdmin, rule: creds, req: res(credA), want: auth.Access{OrgID: orgA, ResourceID: credA}},
		{name: "CredentialRoleTooLow", p: viewer, rule: creds, req: res(credA), code: errs.PermissionDenied, message: "admin"},
		{name: "CredentialOfOtherOrg", p: viewer, rule: creds, req: res(credB), code: errs.NotFound, message: "credential not found"},
		{name: "CredentialNamedOrgMismatch", p: orgAdmin, rule: creds, req: auth.Request{OrgID: orgB.String(), ResourceID: credA.String()}, code: errs.NotFound, message: "credential not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setupGuard(t, nil)
			b.dir.projects = map[uuid.UUID]uuid.UUID{pA1: orgA, pA2: orgA, pB: orgB}
			b.dir.orgs = map[uuid.UUID]bool{orgA: true, orgB: true}

			got, err := b.guard.Check(context.Background(), tt.p, tt.rule, tt.req)
			if tt.code == "" {
				require.NoError(t, err)
				require.Equal(t, tt.want, got)
				return
			}
			require.Error(t, err)
			require.Equal(t, tt.code, errs.CodeOf(err), "error: %v", err)
			require.Contains(t, err.Error(), tt.message)
			require.Equal(t, auth.Access{}, got)
		})
	}
}
