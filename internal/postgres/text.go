package postgres

import (
	"bytes"
	"strings"
	"unicode/utf8"
)

// The one rule for text from outside the server (a connector, a model, an
// MCP server, a provider's error) on its way to a text or jsonb column,
// which cannot hold the NUL character (SQLSTATE 22021, in jsonb 22P05 for
// the \u0000 escape) nor, as text, invalid UTF-8: a NUL is dropped and
// each run of invalid bytes becomes U+FFFD (the replacement character
// encoding/json writes for them).
// A value that names something (an id, a key) is refused instead, with
// ValidText, where a changed spelling would name something else.

// ValidText reports whether a text column holds s as it is: valid UTF-8
// without NUL.
func ValidText(s string) bool {
	return utf8.ValidString(s) && strings.IndexByte(s, 0) < 0
}

// Text returns s as a text column holds it: NULs dropped, each run of
// invalid bytes replaced by U+FFFD.
func Text(s string) string {
	if ValidText(s) {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "")
}

// JSONB returns raw, JSON text, as a jsonb column holds it: the \u0000
// escapes dropped from its strings (and names), each run of invalid bytes
// replaced by U+FFFD. raw is returned unchanged when it needs neither.
func JSONB(raw []byte) []byte {
	if !utf8.Valid(raw) {
		raw = bytes.ToValidUTF8(raw, []byte("\uFFFD"))
	}
	if !bytes.Contains(raw, []byte(`\u0000`)) {
		return raw
	}
	// In JSON a backslash occurs only in a string, as the first byte of
	// an escape: walking escape by escape tells \u0000 from \\u0000.
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c != '\\' || i+1 == len(raw) {
			out = append(out, c)
			continue
		}
		if bytes.HasPrefix(raw[i:], []byte(`\u0000`)) {
			i += len(`\u0000`) - 1
			continue
		}
		out = append(out, c, raw[i+1])
		i++
	}
	return out
}
