// Package displayname is the one rule for the characters of a name people
// read on one line, in the console, the CLI's tables and emails: a
// template's object and relationship type names, and the names of agents,
// projects, organizations, tokens and chat session titles. Such a name
// holds no control character (a line feed, a tab, U+0007) nor format
// character (a zero-width space or joiner, a direction mark, U+FEFF),
// which would break its line or hide what it reads.
package displayname

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/graphmill/graphmill/internal/errs"
)

// Invisible reports whether a name refuses r: a control character (tab
// included) or a format character.
func Invisible(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Cf, r)
}

// Check refuses name, what it is ("agent name", "chat session title",
// ...), when it is not valid UTF-8 or holds an Invisible character.
// Errors: invalid_argument.
func Check(what, name string) error {
	if !utf8.ValidString(name) || strings.ContainsFunc(name, Invisible) {
		return errs.Errorf(errs.Invalid, "%s %q: no control or invisible characters (line breaks, tabs, zero-width and direction marks)", what, name)
	}
	return nil
}

// Strip is s without its Invisible characters: a name derived from text
// (a chat session's first question) rather than given.
func Strip(s string) string {
	return strings.Map(func(r rune) rune {
		if Invisible(r) {
			return -1
		}
		return r
	}, s)
}
