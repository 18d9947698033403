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
