package auth_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/pgtest"
	"github.com/graphmill/graphmill/internal/tenancy"
)

// countingDirectory counts the token look-ups that reach the real
// directory (each one is a few database queries).
type countingDirectory struct {
	auth.Directory
	tokenLookups atomic.Int64
}

func (d *countingDirectory) PrincipalByTokenHash(ctx context.Context, hash [32]byte) (*auth.Principal, error) {
	d.tokenLookups.Add(1)
	return d.Directory.PrincipalByTokenHash(ctx, hash)
}

// bootstrapped returns a guard over the real directory of a fresh database
// holding the bootstrap admin, and the admin's token.
func bootstrapped(tb testing.TB) (*auth.Guard, *countingDirectory, string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool := pgtest.New(tb)
	token, err := tenancy.NewService(pool, nil, time.Now).Bootstrap(ctx, "")
	require.NoError(tb, err)
	require.True(tb, auth.ValidTokenFormat(token))
	dir := &countingDirectory{Directory: tenancy.NewDirectory(pool, time.Now)}
	g := auth.NewGuard(auth.GuardConfig{Directory: dir, TTL: time.Hour})
	return g, dir, token
}

// TestAuthenticateWarmNoQueries proves that a warm cache answers without
// touching the database.
func TestAuthenticateWarmNoQueries(t *testing.T) {
	t.Parallel()
	g, dir, token := bootstrapped(t)
	ctx := context.Background()

	first, err := g.Authenticate(ctx, "Bearer "+token)
	require.NoError(t, err)
	require.True(t, first.Superadmin)
	require.Equal(t, auth.AllScopes, first.Scopes)
	require.Equal(t, auth.KindAPIToken, first.Kind)
	require.Len(t, first.OrgRoles, 1)
	require.Len(t, first.ProjectRoles, 1)

	for range 1000 {
		p, err := g.Authenticate(ctx, "Bearer "+token)
		require.NoError(t, err)
		require.Same(t, first, p)
	}
	require.EqualValues(t, 1, dir.tokenLookups.Load())

	// And the cache is not hiding a broken look-up: a fresh one works.
	g.Invalidate()
	p, err := g.Authenticate(ctx, "Bearer "+token)
	require.NoError(t, err)
	require.Equal(t, first.UserID, p.UserID)
	require.EqualValues(t, 2, dir.tokenLookups.Load())
}

// BenchmarkAuthenticate measures a warm-cache authentication of a real
// token (hash, cache look-up, expiry check).
func BenchmarkAuthenticate(b *testing.B) {
	g, dir, token := bootstrapped(b)
	ctx := context.Background()
	header := "Bearer " + token
	_, err := g.Authenticate(ctx, header)
	require.NoError(b, err)

	b.ReportAllocs()
	for b.Loop() {
		if _, err := g.Authenticate(ctx, header); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	require.EqualValues(b, 1, dir.tokenLookups.Load())
}

// BenchmarkAuthenticateParallel is BenchmarkAuthenticate from GOMAXPROCS
// goroutines at once, as concurrent requests do.
func BenchmarkAuthenticateParallel(b *testing.B) {
	g, dir, token := bootstrapped(b)
	ctx := context.Background()
	header := "Bearer " + token
	_, err := g.Authenticate(ctx, header)
	require.NoError(b, err)

	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := g.Authenticate(ctx, header); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	require.EqualValues(b, 1, dir.tokenLookups.Load())
}

// TestPrincipalOfUser: the directory rebuilds a user's rights without a
// credential (an agent run's, at every step): memberships and the
// superadmin grant as of now, no scopes; a deleted or unknown user is
// unauthenticated.
func TestPrincipalOfUser(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.New(t)
	token, err := tenancy.NewService(pool, nil, time.Now).Bootstrap(ctx, "")
	require.NoError(t, err)
	dir := tenancy.NewDirectory(pool, time.Now)
	admin, err := dir.PrincipalByTokenHash(ctx, auth.HashToken(token))
	require.NoError(t, err)

	p, err := dir.PrincipalOfUser(ctx, admin.UserID)
	require.NoError(t, err)
	require.Equal(t, admin.UserID, p.UserID)
	require.True(t, p.Superadmin)
	require.Equal(t, admin.OrgRoles, p.OrgRoles)
	require.Equal(t, admin.ProjectRoles, p.ProjectRoles)
	require.Zero(t, p.Scopes)
	require.Zero(t, p.TokenID)

	_, err = dir.PrincipalOfUser(ctx, uuid.New())
	require.Equal(t, errs.Unauthenticated, errs.CodeOf(err))
	_, err = pool.Exec(ctx, `UPDATE users SET deleted_at = now() WHERE id = $1`, admin.UserID)
	require.NoError(t, err)
	_, err = dir.PrincipalOfUser(ctx, admin.UserID)
	require.Equal(t, errs.Unauthenticated, errs.CodeOf(err))
}
