package httpapi_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/httpapi"
)

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
