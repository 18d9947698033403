package agent_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/agent"
	"github.com/graphmill/graphmill/internal/errs"
)

func TestParseSchedule(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 24, 9, 7, 30, 0, time.UTC)
	for expr, next := range map[string]time.Time{
		"*/5 * * * *":                time.Date(2026, 11, 24, 9, 10, 0, 0, time.UTC),
		"0 6 * * 1-5":                time.Date(2026, 11, 25, 6, 0, 0, 0, time.UTC),
		"@hourly":                    time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC),
		"@daily":                     time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC),
		"@every 90m":                 at.Add(90 * time.Minute).Truncate(time.Second),
		"CRON_TZ=UTC 30 9 * * *":     time.Date(2026, 11, 24, 9, 30, 0, 0, time.UTC),
		"TZ=Europe/Paris 0 11 * * *": time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC),
		"0 0 29 2 *":                 time.Date(2028, 2, 29, 0, 0, 0, 0, time.UTC),
	} {
		s, err := agent.ParseSchedule(expr)
		require.NoError(t, err, expr)
		require.Equal(t, next, s.Next(at).UTC(), expr)
	}
	for expr, want := range map[string]string{
		"":                               "schedule must be a cron expression",
		"61 * * * *":                     "schedule must be a cron expression",
		"* * * * * *":                    "schedule must be a cron expression",
		"@every 59s":                     "schedule: @every must be at least 1m0s",
		"0 0 30 2 *":                     `schedule "0 0 30 2 *" never fires`,
		"CRON_TZ=Nowhere/Land 0 6 * * *": `schedule: unknown time zone "Nowhere/Land"`,
		// The cron parser panics on a prefix without a space.
		"TZ=0":                    "a time zone prefix is CRON_TZ=<zone> followed by a space",
		"CRON_TZ=UTC":             "a time zone prefix is CRON_TZ=<zone> followed by a space",
		"TZ=":                     "a time zone prefix is CRON_TZ=<zone> followed by a space",
		"CRON_TZ= 0 6 * * *":      "a time zone prefix is CRON_TZ=<zone> followed by a space",
		"CRON_TZ=UTC   ":          "a time zone prefix is CRON_TZ=<zone> followed by a space",
		"CRON_TZ=Local 0 6 * * *": "CRON_TZ=Local is not accepted",
		"TZ=Local 0 6 * * *":      "CRON_TZ=Local is not accepted",
	} {
		_, err := agent.ParseSchedule(expr)
		require.Equal(t, errs.Invalid, errs.CodeOf(err), expr)
		require.Contains(t, errs.MessageOf(err), want, expr)
	}
	_, err := agent.ParseSchedule("0 6 * * *" + string(make([]byte, agent.ScheduleMax)))
	require.Equal(t, "schedule must be at most 200 characters", errs.MessageOf(err))
}

// TestScheduleDayOfMonthOrDayOfWeek: when both day-of-month and
// day-of-week are restricted, a schedule fires on a day matching either,
// as classic cron (Vixie, POSIX) does; when either is *, the other alone
// decides. The expected times are classic cron's, worked out by hand.
func TestScheduleDayOfMonthOrDayOfWeek(t *testing.T) {
	t.Parallel()
	utc := func(y int, m time.Month, d, h, mi int) time.Time { return time.Date(y, m, d, h, mi, 0, 0, time.UTC) }
	for _, c := range []struct {
		expr       string
		from, want time.Time
	}{
		// The 1st or any Monday: the next Monday, then Sunday 1 February.
		{"0 0 1 * 1", utc(2026, 1, 5, 12, 0), utc(2026, 1, 12, 0, 0)},
		{"0 0 1 * 1", utc(2026, 1, 26, 12, 0), utc(2026, 2, 1, 0, 0)},
		// 29 February or any Monday of February: fires every year.
		{"0 0 29 2 1", utc(2026, 1, 5, 12, 0), utc(2026, 2, 2, 0, 0)},
		{"0 0 29 2 1", utc(2026, 2, 24, 12, 0), utc(2027, 2, 1, 0, 0)},
		{"0 0 29 2 1", utc(2028, 2, 28, 12, 0), utc(2028, 2, 29, 0, 0)},
		// The 13th or any Friday.
		{"30 6 13 * 5", utc(2026, 4, 9, 0, 0), utc(2026, 4, 10, 6, 30)},
		{"30 6 13 * 5", utc(2026, 4, 11, 0, 0), utc(2026, 4, 13, 6, 30)},
		// One field *: the other alone.
		{"0 0 * * 1", utc(2026, 1, 26, 12, 0), utc(2026, 2, 2, 0, 0)},
		{"0 0 1 * *", utc(2026, 1, 5, 12, 0), utc(2026, 2, 1, 0, 0)},
	} {
		s, err := agent.ParseSchedule(c.expr)
		require.NoError(t, err, c.expr)
		require.Equal(t, c.want, s.Next(c.from).UTC(), "%s from %s", c.expr, c.from)
	}
}
