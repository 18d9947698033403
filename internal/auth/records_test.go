package auth_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/auth"
)

func TestOwnRecords(t *testing.T) {
	t.Parallel()
	p := &auth.Principal{UserID: uuid.New()}

	t.Run("EveryProject", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, auth.OwnRecords{UserID: p.UserID}, auth.OwnRecordsOf(p, auth.Access{OrgID: uuid.New()}))
	})

	t.Run("NarrowedToTheRequestsProject", func(t *testing.T) {
		t.Parallel()
		project := uuid.New()
		a := auth.Access{ProjectID: project}
		require.Equal(t, auth.OwnRecords{UserID: p.UserID, ProjectID: &project}, auth.OwnRecordsOf(p, a))

		ctx := auth.WithAccess(auth.WithPrincipal(context.Background(), p), a)
		got := auth.OwnRecordsFrom(ctx)
		require.Equal(t, auth.OwnRecords{UserID: p.UserID, ProjectID: &project}, got)
		*got.ProjectID = uuid.Nil
		require.Equal(t, project, auth.AccessFrom(ctx).ProjectID, "the project is a copy")
	})
}
