package chat

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWantsStreamHonoursQuality: the reply streams when Accept asks for
// text/event-stream with a quality above 0 that no JSON type beats, each
// type's quality that of the most specific range matching it (RFC 9110
// 12.5.1: q=0 means "not acceptable").
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
		// The most specific range decides (session 11, rev2):
		// application/json;q=0 refuses JSON whatever */* says, and text/*
		// or */* accept the stream; */* alone still answers JSON.
		"application/json;q=0, */*":                       true,
		"application/json;q=0.5, */*;q=0.9":               true,
		"application/*;q=0.2, */*":                        true,
		"text/*":                                          true,
		"TEXT/*":                                          true,
		"text/*, application/json":                        true,
		"text/*;q=0.5, application/json":                  false,
		"text/*, text/event-stream;q=0":                   false,
		"*/*;q=0.5":                                       false,
		"*/*, application/json;q=0.9":                     true,
		"text/event-stream;q=0.5, */*":                    false,
		"application/json;q=0, text/event-stream;q=0":     false,
		"application/json;q=0, */*;q=0":                   false,
		"text/event-stream;Q=0.2, application/json;q=0.1": true,
		"text/html,application/xhtml+xml,*/*;q=0.8":       false,
	} {
		require.Equal(t, want, wantsStream(accept), "%q", accept)
	}
}
