package provider_test

import (
	"context"
	"log/slog"
	"math"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/pgtest"
	"github.com/graphmill/graphmill/internal/provider"
	"github.com/graphmill/graphmill/internal/secrets"
)

// TestMigrationBoundsLedgerCounts applies migration 00045 over a ledger
// holding the counts a hostile endpoint reported before calls were
// bounded (near the int64 limit, negative): the sums overflowed and every
// usage summary of the project and organization failed. Each count is
// then within 0 and llm.MaxCallTokens, a negative cost 0; the summaries
// answer, and rows already in range are left as they were.
func TestMigrationBoundsLedgerCounts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, migrate := pgtest.NewAtVersion(t, 41)
	org, project := uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())
	pgtest.Exec(t, pool, `INSERT INTO orgs (id, name, created_at, updated_at) VALUES ($1, 'o', now(), now())`, org)
	pgtest.Exec(t, pool, `INSERT INTO projects (id, org_id, name, created_at, updated_at) VALUES ($1, $2, 'p', now(), now())`, project, org)
	for _, r := range []struct {
		model        string
		text, output int64
		cost         float64
	}{
		{"big", math.MaxInt64, math.MaxInt64, 1e12},
		{"big", math.MaxInt64, 3, 1e12},
		{"neg", -1000000, -5, -0.5},
		{"fine", 120, 30, 0.25},
	} {
		pgtest.Exec(t, pool, `INSERT INTO provider_usage (id, org_id, project_id, provider, model, operation, source, text_tokens, output_tokens,
				duration_ms, status, estimated_cost_usd, created_at)
			VALUES ($1, $2, $3, 'openai', $4, 'generate', 'organization', $5, $6, 1, 'ok', $7, now())`,
			uuid.Must(uuid.NewV7()), org, project, r.model, r.text, r.output, r.cost)
	}
	_, err := migrate.UpTo(ctx, 45)
	require.NoError(t, err)

	box, err := secrets.New(secrets.GenerateKey())
	require.NoError(t, err)
	svc := provider.NewService(provider.Config{Pool: pool, Box: box, Logger: slog.New(slog.DiscardHandler)})
	for _, p := range []*uuid.UUID{&project, nil} {
		sum, err := svc.Usage(ctx, org, p, nil, nil)
		require.NoError(t, err)
		got := map[string][2]int64{}
		for _, row := range sum.Data {
			got[row.Model] = [2]int64{row.TotalText, row.TotalOutput}
			require.GreaterOrEqual(t, row.EstimatedCostUSD, 0.0, row.Model)
		}
		require.Equal(t, map[string][2]int64{"big": {2 * math.MaxInt32, math.MaxInt32 + 3}, "neg": {0, 0}, "fine": {120, 30}}, got)
	}
}
