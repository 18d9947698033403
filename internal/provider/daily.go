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
	rows, _ := s.cfg.Pool.Query(ctx, `SELECT d.day, coalesce(sum(u.text_tokens + u.image_tokens + u.video_tokens + u.audio_tokens + u.output_tokens), 0)::bigint,
			coalesce(sum(u.estimated_cost_usd), 0)::float8, count(u.id)
		FROM generate_series($2::timestamptz, $3::timestamptz - interval '24 hours', interval '24 hours') AS d(day)
		LEFT JOIN provider_usage u ON u.project_id = $1 AND u.created_at >= d.day AND u.created_at < d.day + interval '24 hours'
		GROUP BY d.day ORDER BY d.day`, project, since, until)
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (UsageDay, error) {
		var d UsageDay
		err := row.Scan(&d.Day, &d.Tokens, &d.CostUSD, &d.Calls)
		d.Day = d.Day.UTC()
		return d, err
	})
	if err != nil {
		return nil, fmt.Errorf("daily usage: %w", err)
	}
	return out, nil
}
