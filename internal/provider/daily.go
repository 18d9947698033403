package provider

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/graphmill/graphmill/internal/errs"
)

// UsageDay sums a project's ledger for one UTC day: the tokens of every
// modality and output, and the estimated cost (as Usage sums them).
type UsageDay struct {
	Day     time.Time
	Tokens  int64
	CostUSD float64
	Calls   int64
}

// DailyUsage sums project's ledger per UTC day from since (inclusive) to
// until (exclusive), both at midnight UTC; days without calls are
// present, with zeros. Errors: invalid_argument.
func (s *Service) DailyUsage(ctx context.Context, project uuid.UUID, since, until time.Time) ([]UsageDay, error) {
	since, until = since.UTC().Truncate(24*time.Hour), until.UTC().Truncate(24*time.Hour)
	if !until.After(since) || until.Sub(since) > 366*24*time.Hour {
		return nil, errs.New(errs.Invalid, "the period must span 1 to 366 days")
	}
	// One aggregate over the period's rows (the project's index), the
	// empty days filled in here: a join on a series of days is estimated
	// at millions of rows, which costs a JIT compilation each time.
	rows, _ := s.cfg.Pool.Query(ctx, `SELECT date_bin('24 hours', created_at, $2::timestamptz),
			sum(text_tokens + image_tokens + video_tokens + audio_tokens + output_tokens)::bigint, sum(estimated_cost_usd)::float8, count(*)
		FROM provider_usage WHERE project_id = $1 AND created_at >= $2 AND created_at < $3
		GROUP BY 1`, project, since, until)
	sums, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (UsageDay, error) {
		var d UsageDay
		err := row.Scan(&d.Day, &d.Tokens, &d.CostUSD, &d.Calls)
		return d, err
	})
	if err != nil {
		return nil, fmt.Errorf("daily usage: %w", err)
	}
	byDay := make(map[int64]UsageDay, len(sums))
	for _, d := range sums {
		byDay[d.Day.Unix()] = d
	}
	var out []UsageDay
	for day := since; day.Before(until); day = day.Add(24 * time.Hour) {
		d := byDay[day.Unix()]
		d.Day = day
		out = append(out, d)
	}
	return out, nil
}
