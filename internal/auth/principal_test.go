package auth_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/auth"
)

func TestUserFrom(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	require.Nil(t, auth.UserFrom(ctx), "no principal")
	require.Nil(t, auth.UserFrom(auth.WithPrincipal(ctx, &auth.Principal{})), "a principal that is no user")

	p := &auth.Principal{UserID: uuid.New()}
	got := auth.UserFrom(auth.WithPrincipal(ctx, p))
	require.NotNil(t, got)
	require.Equal(t, p.UserID, *got)
	*got = uuid.Nil
	require.NotEqual(t, uuid.Nil, p.UserID, "the id is a copy: the principal cannot be changed through it")
}
