package httpapi_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/httpapi"
)

func TestParseOptionalID(t *testing.T) {
	t.Parallel()
	got, err := httpapi.ParseOptionalID("orgId", "")
	require.NoError(t, err)
	require.Nil(t, got)
	id := uuid.New()
	got, err = httpapi.ParseOptionalID("orgId", id.String())
	require.NoError(t, err)
	require.Equal(t, id, *got)
	for _, raw := range []string{"x", " " + id.String(), id.String()[:35]} {
		got, err = httpapi.ParseOptionalID("orgId", raw)
		require.Nil(t, got, raw)
		require.Equal(t, errs.Invalid, errs.CodeOf(err), raw)
		require.EqualError(t, err, "orgId must be a UUID", raw)
	}
}

func TestParseTime(t *testing.T) {
	t.Parallel()
	cases := []struct {
		raw  string
		want *time.Time
		bad  bool
	}{
		{raw: "", want: nil},
		{raw: "2026-01-31T00:00:00Z", want: new(time.Date(2026, 1, 31, 0, 0, 0, 0, time.UTC))},
		{raw: "2026-01-31T01:00:00.5+01:00", want: new(time.Date(2026, 1, 31, 0, 0, 0, 500_000_000, time.UTC))},
		{raw: "2026-01-31", bad: true},
		{raw: "yesterday", bad: true},
		{raw: "2026-13-01T00:00:00Z", bad: true},
	}
	for _, c := range cases {
		got, err := httpapi.ParseTime("fromDate", c.raw)
		if c.bad {
			require.Equal(t, errs.Invalid, errs.CodeOf(err), c.raw)
			require.Contains(t, err.Error(), "fromDate must be an RFC 3339 time", c.raw)
			continue
		}
		require.NoError(t, err, c.raw)
		if c.want == nil {
			require.Nil(t, got, c.raw)
			continue
		}
		require.True(t, c.want.Equal(*got), c.raw)
	}
}

// TestParseTimeRange: the one rule of a date range filter (extraction
// monitoring's date_from/date_to, superadmin's fromDate/toDate): either
// bound optional, each RFC 3339, from not after to.
func TestParseTimeRange(t *testing.T) {
	t.Parallel()
	early, late := "2026-01-31T00:00:00Z", "2026-01-31T01:00:00+01:00" // the same instant
	from, to, err := httpapi.ParseTimeRange("date_from", early, "date_to", late)
	require.NoError(t, err)
	require.True(t, from.Equal(*to))
	from, to, err = httpapi.ParseTimeRange("date_from", "", "date_to", late)
	require.NoError(t, err)
	require.Nil(t, from)
	require.NotNil(t, to)
	from, to, err = httpapi.ParseTimeRange("date_from", early, "date_to", "")
	require.NoError(t, err)
	require.NotNil(t, from)
	require.Nil(t, to)

	for _, c := range []struct{ from, to, detail string }{
		{"2026-01-31T00:00:00.001Z", early, "date_from must not be after date_to"},
		{"yesterday", early, "date_from must be an RFC 3339 time"},
		{early, "2026-13-01T00:00:00Z", "date_to must be an RFC 3339 time"},
	} {
		_, _, err := httpapi.ParseTimeRange("date_from", c.from, "date_to", c.to)
		require.Equal(t, errs.Invalid, errs.CodeOf(err), c)
		require.Contains(t, err.Error(), c.detail, c)
	}
}
