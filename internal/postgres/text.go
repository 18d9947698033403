package postgres

import (
	"bytes"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// The one rule for text from outside the server (a connector, a model, an
// MCP server, a provider's error) on its way to a text or jsonb column,
// which cannot hold the NUL character (SQLSTATE 22021, in jsonb 22P05 for
// the \u0000 escape) nor, as text, invalid UTF-8: a NUL is dropped and
// each run of invalid bytes becomes U+FFFD (the replacement character
// encoding/json writes for them).
// A value that names something (an id, a key) is refused instead, with
// ValidText, where a changed spelling would name something else; one that
// cannot be refused keeps every change visible (NameText).

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

// TextMax is Text cut to at most n bytes on a rune boundary (Clip): how
// an error message or log line from outside fits its column.
func TextMax(s string, n int) string { return Clip(Text(s), n) }

// Clip cuts s to at most n bytes on a rune boundary: how a job's error
// message is bounded to fit its column, and how the domains bound the
// texts they record about their jobs.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut]
}

// NameText returns s as a text column holds it, for a value that names
// something and cannot be refused (a model's tool call names the tool to
// run, its id the call a result answers): each NUL, like each run of
// invalid bytes, becomes U+FFFD, so that a changed spelling never names
// something else ("sea\x00rch" is not "search").
func NameText(s string) string {
	if ValidText(s) {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

// JSONB returns raw, JSON text, as a jsonb column holds it: the \u0000
// escapes dropped from its strings (and names), an escape of half a
// surrogate pair (which jsonb refuses, 22P02) replaced by \ufffd (what
// encoding/json decodes it to), each run of invalid bytes replaced by
// U+FFFD. raw is returned unchanged, without allocating, when it needs
// none of that: it is called on every event published and every model
// answer.
func JSONB(raw []byte) []byte {
	if !utf8.Valid(raw) {
		raw = bytes.ToValidUTF8(raw, []byte("\uFFFD"))
	}
	if !bytes.Contains(raw, []byte(`\u`)) {
		return raw
	}
	// In JSON a backslash occurs only in a string, as the first byte of
	// an escape: walking escape by escape tells \u0000 from \\u0000. out
	// stays nil until the first change.
	var out []byte
	keep := func(i, n int) {
		if out != nil {
			out = append(out, raw[i:i+n]...)
		}
	}
	change := func(i int, with string) {
		if out == nil {
			out = append(make([]byte, 0, len(raw)), raw[:i]...)
		}
		out = append(out, with...)
	}
	for i := 0; i < len(raw); {
		j := bytes.IndexByte(raw[i:], '\\')
		if j < 0 || i+j+1 == len(raw) {
			keep(i, len(raw)-i)
			break
		}
		keep(i, j)
		i += j
		r, ok := unicodeEscape(raw, i)
		switch {
		case !ok:
			keep(i, 2)
			i += 2
		case r == 0:
			change(i, "")
			i += 6
		case utf16.IsSurrogate(r):
			if low, ok := unicodeEscape(raw, i+6); ok && r < 0xdc00 && low >= 0xdc00 && utf16.IsSurrogate(low) {
				keep(i, 12)
				i += 12
				continue
			}
			change(i, `\ufffd`)
			i += 6
		default:
			keep(i, 6)
			i += 6
		}
	}
	if out == nil {
		return raw
	}
	return out
}

// unicodeEscape is the code unit of the \uXXXX escape at raw[i], if
// there is one.
func unicodeEscape(raw []byte, i int) (rune, bool) {
	if i+6 > len(raw) || raw[i] != '\\' || raw[i+1] != 'u' {
		return 0, false
	}
	var r rune
	for _, c := range raw[i+2 : i+6] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
