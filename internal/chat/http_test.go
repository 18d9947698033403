package chat

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWantsStreamHonoursQuality: the reply streams when Accept asks for
// text/event-stream with a quality above 0 that no JSON type beats
// (RFC 9110 12.5.1: q=0 means "not acceptable").
func TestWantsStreamHonoursQuality(t *testing.T) {
	t.Parallel()
	for accept, want := range map[string]bool{
		"":                                    false,
		"*/*":                                 false,
		"application/json":                    false,
		"text/event-stream":                   true,
		"TEXT/EVENT-STREAM":                   true,
		"text/event-stream; charset=utf-8":    true,
		"application/json, text/event-stream": true,
		"text/event-stream, application/json": true,
		"text/event-stream;q=0":               false,
		"text/event-stream; q=0.000":          false,
		"text/event-stream;q=0.1, application/json": false,
		"application/json;q=0.5, text/event-stream": true,
		"text/event-stream;q=0.9, */*;q=0.1":        true,
		"text/event-stream;q=0.5, application/*":    false,
		"text/event-stream;q=abc":                   false,
		"text/event-stream;q=2":                     false,
	} {
		require.Equal(t, want, wantsStream(accept), "%q", accept)
	}
}
