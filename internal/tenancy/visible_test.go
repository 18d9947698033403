package tenancy_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/pgtest"
	"github.com/graphmill/graphmill/internal/tenancy"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// TestSeesProjectAgreesWithVisibleProjects: the SQL condition other
// packages filter a user's records with says yes exactly for the projects
// VisibleProjects lists for the user's principal: a superadmin every live
// one, an organization owner the live ones of their organization, a member
// theirs, a member who left none; never a deleted project, nor one of a
// deleted organization.
func TestSeesProjectAgreesWithVisibleProjects(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.New(t)
	ten := tenancy.NewService(pool, nil, time.Now)
	_, err := ten.Bootstrap(ctx, "")
	require.NoError(t, err)
	dir := tenancy.NewDirectory(pool, time.Now)
	user := func(email string) uuid.UUID {
		u, err := ten.CreateUser(ctx, email, email, nil)
		require.NoError(t, err)
		return u.ID
	}
	admin, err := ten.ResolveUser(ctx, "admin@localhost")
	require.NoError(t, err)
	owner, otherOwner, member, leaver, stranger := user("owner@x.org"), user("other@x.org"), user("member@x.org"), user("leaver@x.org"), user("stranger@x.org")
	org := func(by uuid.UUID, name string) uuid.UUID {
		o, err := ten.CreateOrg(ctx, &auth.Principal{UserID: by}, name)
		require.NoError(t, err)
		return o.ID
	}
	project := func(by, in uuid.UUID, name string) uuid.UUID {
		p, err := ten.CreateProject(ctx, &auth.Principal{UserID: by}, in, name)
		require.NoError(t, err)
		return p.ID
	}
	orgA, orgB, orgC := org(owner, "a"), org(otherOwner, "b"), org(otherOwner, "c")
	a1, a2, gone := project(owner, orgA, "a1"), project(owner, orgA, "a2"), project(owner, orgA, "gone")
	b1, c1 := project(otherOwner, orgB, "b1"), project(otherOwner, orgC, "c1")
	for _, p := range []uuid.UUID{a1, gone, b1, c1} {
		_, err := ten.AddMember(ctx, p, member, "viewer")
		require.NoError(t, err)
	}
	_, err = ten.AddMember(ctx, a2, leaver, "editor")
	require.NoError(t, err)
	require.NoError(t, ten.RemoveMember(ctx, a2, leaver))
	require.NoError(t, ten.DeleteProject(ctx, gone, nil))
	require.NoError(t, ten.DeleteOrg(ctx, orgC, nil))

	projects := []uuid.UUID{a1, a2, gone, b1, c1}
	want := map[uuid.UUID][]uuid.UUID{
		owner: {a1, a2}, otherOwner: {b1}, member: {a1, b1}, leaver: nil, stranger: nil,
	}
	for _, u := range []uuid.UUID{admin, owner, otherOwner, member, leaver, stranger} {
		p, err := dir.PrincipalOfUser(ctx, u)
		require.NoError(t, err)
		visible, err := ten.VisibleProjects(ctx, p, nil)
		require.NoError(t, err)
		var sees []uuid.UUID
		for _, pr := range projects {
			var ok bool
			require.NoError(t, pool.QueryRow(ctx, `SELECT `+tenancy.SeesProject("$1::uuid", "$2::uuid"), u, pr).Scan(&ok))
			require.Equal(t, slices.Contains(visible, pr), ok, "user %s, project %s", u, pr)
			if ok {
				sees = append(sees, pr)
			}
		}
		if u == admin {
			require.Equal(t, []uuid.UUID{a1, a2, b1}, sees)
			continue
		}
		require.Equal(t, want[u], sees)
	}
}
