// Package displayname is the one rule for the characters of a name people
// read on one line, in the console, the CLI's tables and emails: a
// template's object and relationship type names, and the names of agents,
// projects, organizations, tokens and chat session titles. Such a name
// holds no control character (a line feed, a tab, U+0007) nor format
// character (a zero-width space, a direction mark, U+FEFF), which would
// break its line or hide what it reads, except the zero-width joiner and
// non-joiner between two visible characters (or after a mark): emoji
// sequences, Persian, Indic and Sinhala words are written with them.
package displayname

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/graphmill/graphmill/internal/errs"
)

// The zero-width non-joiner and joiner, the format characters a name may
// hold between two visible characters.
const (
	zwnj = '\u200c'
	zwj  = '\u200d'
)

// Invisible reports whether a name refuses r wherever it stands: a
// control character (tab included) or a format character other than a
// joiner (Valid places those).
func Invisible(r rune) bool {
	return (unicode.IsControl(r) || unicode.Is(unicode.Cf, r)) && !joiner(r)
}

func joiner(r rune) bool { return r == zwnj || r == zwj }

// visible reports whether r may stand beside a joiner: neither Invisible,
// a joiner nor a space.
func visible(r rune) bool {
	return r != utf8.RuneError && !Invisible(r) && !joiner(r) && !unicode.IsSpace(r)
}

// placed reports whether a joiner at i in s, after prev, joins something:
// it follows a visible character, and precedes one unless it follows a
// mark (a virama: Malayalam's chillu letters were long written as a
// virama and a joiner at the end of a word).
func placed(s string, i int, prev rune) bool {
	next, _ := utf8.DecodeRuneInString(s[i+utf8.RuneLen(zwj):])
	return visible(prev) && (visible(next) || unicode.Is(unicode.M, prev))
}

// Valid reports whether name is valid UTF-8 without an Invisible
// character, each joiner placed between two visible characters (or
// after a mark).
func Valid(name string) bool {
	if !utf8.ValidString(name) {
		return false
	}
	prev := ' '
	for i, r := range name {
		switch {
		case Invisible(r):
			return false
		case joiner(r) && !placed(name, i, prev):
			return false
		}
		prev = r
	}
	return true
}

// Check refuses name, what it is ("agent name", "chat session title",
// ...), when it is not Valid. Errors: invalid_argument.
func Check(what, name string) error {
	if !Valid(name) {
		return errs.Errorf(errs.Invalid, "%s %q: no control or invisible characters (line breaks, tabs, zero-width spaces, direction marks; a zero-width joiner only between two visible characters)", what, name)
	}
	return nil
}

// Strip is s without its Invisible characters nor the joiners then left
// out of place, so that Check accepts it: a name derived from text (a chat
// session's first question) rather than given.
func Strip(s string) string {
	s = strings.Map(func(r rune) rune {
		if Invisible(r) {
			return -1
		}
		return r
	}, s)
	if !strings.ContainsFunc(s, joiner) {
		return s
	}
	var b strings.Builder
	prev := ' '
	for i, r := range s {
		if !joiner(r) || placed(s, i, prev) {
			b.WriteRune(r)
		}
		prev = r
	}
	return b.String()
}
