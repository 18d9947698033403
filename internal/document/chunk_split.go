package document

import (
	"unicode"
	"unicode/utf8"
)

// splitLevel is how finely a piece of text is divided.
type splitLevel int

const (
	splitNone      splitLevel = iota // the whole text, trimmed
	splitSentences                   // sentences and lines
	splitWords                       // whitespace-separated words
)

// brk is the break kind before a piece produced at this level.
func (l splitLevel) brk() breakKind {
	switch l {
	case splitSentences:
		return breakSentence
	case splitWords:
		return breakWord
	default:
		return breakBlock
	}
}

// spans returns the [start, end) byte ranges of the pieces of s at level,
// each trimmed of surrounding whitespace and non-empty, in order.
//
// A sentence ends after a run of terminators (. ! ? and their CJK forms, or
// an ellipsis) plus closing quotes and brackets, when followed by whitespace
// or the end; CJK terminators need no whitespace. A newline always ends a
// sentence, so list items, table rows and code lines are sentences too.
func spans(s string, level splitLevel) [][2]int {
	var out [][2]int
	start := -1 // start of the current piece, or -1 between pieces
	lastNonSpace := 0
	emit := func() {
		if start >= 0 {
			out = append(out, [2]int{start, lastNonSpace})
			start = -1
		}
	}
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if unicode.IsSpace(r) {
			if level == splitWords || (level == splitSentences && r == '\n') {
				emit()
			}
			i += size
			continue
		}
		if start < 0 {
			start = i
		}
		i += size
		lastNonSpace = i
		if level != splitSentences || !isTerminator(r) {
			continue
		}
		for i < len(s) {
			r2, n := utf8.DecodeRuneInString(s[i:])
			if !isTerminator(r2) && !isCloser(r2) {
				break
			}
			i += n
			lastNonSpace = i
		}
		if i == len(s) || isCJKTerminator(r) {
			emit()
			continue
		}
		if r2, _ := utf8.DecodeRuneInString(s[i:]); unicode.IsSpace(r2) {
			emit()
		}
	}
	emit()
	return out
}

func isTerminator(r rune) bool {
	switch r {
	case '.', '!', '?', '…', '‼', '⁇', '⁈', '⁉':
		return true
	}
	return isCJKTerminator(r)
}

func isCJKTerminator(r rune) bool {
	switch r {
	case '。', '！', '？', '｡':
		return true
	}
	return false
}

func isCloser(r rune) bool {
	switch r {
	case '"', '\'', ')', ']', '}', '»', '”', '’', '」', '』', '）', '】':
		return true
	}
	return false
}
