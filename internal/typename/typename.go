// Package typename normalises the names of object, relationship and
// property types, so that spellings of one name compare equal: case,
// separators and, for type names, the plural of the last word
// ("Software_Projects", "software project" and "SoftwareProject" are one
// name). Schema discovery merges proposals by it and the local provider
// names the types it discovers with it.
package typename

import (
	"strings"
	"unicode"
)

// Key is the normalised form of a type name: words split at case
// changes and separators, lower-cased, the last reduced to its stem,
// joined ("Software_Projects", "software project" and "SoftwareProject"
// give "softwareproject"; "Movies" and "Movie" give "movy", "Houses" and
// "House" give "hous"). A key is for comparing, not for showing.
func Key(name string) string {
	words := Words(name)
	if len(words) == 0 {
		return ""
	}
	words[len(words)-1] = stem(words[len(words)-1])
	return strings.Join(words, "")
}

// stem is a word's singular in a form its plurals share: the -es of a
// plural is either a sibilant's ending (status-es, box-es, church-es) or
// the -e of the singular plus -s (house-s, cache-s), and -ies the plural
// of -y (company) or of -ie (movie), so the stem drops an -e after
// s, x, z, ch or sh and ends -ie as -y: "houses", "house" and "hous"
// are "hous"; "statuses" and "status" "status"; "movies" and "movie"
// "movy". Only spellings of one singular meet (house/hous, movie/movy
// are no two English words), so distinct words stay apart.
func stem(w string) string {
	w = Singular(w)
	n := len(w)
	switch {
	case n <= 2:
		return w
	case strings.HasSuffix(w, "ie"):
		return w[:n-2] + "y"
	case strings.HasSuffix(w, "se"), strings.HasSuffix(w, "xe"), strings.HasSuffix(w, "ze"),
		strings.HasSuffix(w, "che"), strings.HasSuffix(w, "she"):
		return w[:n-1]
	}
	return w
}

// PropertyKey is the normalised form of a property or relation name: case
// and separators only ("first_name", "firstName" and "First Name" give
// "firstname").
func PropertyKey(name string) string {
	return strings.Join(Words(name), "")
}

// Words splits at non-alphanumerics and at lower-to-upper case
// changes ("HTTPServer" gives "http", "server"), lower-cased.
func Words(s string) []string {
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			out = append(out, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	rs := []rune(s)
	for i, r := range rs {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			flush()
			continue
		}
		if unicode.IsUpper(r) && len(cur) > 0 {
			prev := cur[len(cur)-1]
			nextLower := i+1 < len(rs) && unicode.IsLower(rs[i+1])
			if unicode.IsLower(prev) || unicode.IsDigit(prev) || (unicode.IsUpper(prev) && nextLower) {
				flush()
			}
		}
		cur = append(cur, r)
	}
	flush()
	return out
}

// irregularPlural maps an irregular plural to its singular.
func irregularPlural(w string) (string, bool) {
	s, ok := map[string]string{
		"people": "person", "children": "child", "men": "man", "women": "woman",
		"mice": "mouse", "feet": "foot", "teeth": "tooth", "geese": "goose",
		"criteria": "criterion", "phenomena": "phenomenon", "indices": "index",
		"matrices": "matrix", "vertices": "vertex", "analyses": "analysis",
		"theses": "thesis", "hypotheses": "hypothesis", "crises": "crisis", "leaves": "leaf",
		"lives": "life", "wives": "wife", "knives": "knife", "halves": "half",
	}[w]
	return s, ok
}

// ieSingular lists common words whose plural ends -ies that are
// singular in -ie, not -y.
func ieSingular(w string) bool {
	switch w {
	case "movies", "cookies", "zombies", "calories", "selfies", "rookies", "hoodies",
		"smoothies", "brownies", "prairies", "genies", "pixies", "goalies", "sorties", "freebies",
		"newbies", "aunties", "birdies", "eyries", "hippies", "yuppies":
		return true
	}
	return false
}

// Singular is an English word's singular by the common rules: irregular
// plurals; -ies to -y (-ie for a few words: movies, cookies, ...);
// -sses, -uses (but a vowel before -uses: houses, causes, clauses keep
// the -e), -xes, -zzes, -ches, -shes drop -es; a final -s is dropped
// unless the word ends in -ss, -us or -is or is short (bus, gas, news
// stay). Plurals the rules get wrong still share their singular's Key.
func Singular(w string) string {
	if s, ok := irregularPlural(w); ok {
		return s
	}
	n := len(w)
	switch {
	case n <= 3, w == "news", w == "series", w == "species":
		return w
	case strings.HasSuffix(w, "ies") && n > 4 && ieSingular(w):
		return w[:n-1]
	case strings.HasSuffix(w, "ies") && n > 4:
		return w[:n-3] + "y"
	case strings.HasSuffix(w, "uses") && n > 4 && strings.ContainsRune("aeiou", rune(w[n-5])):
		return w[:n-1]
	case strings.HasSuffix(w, "sses"), strings.HasSuffix(w, "uses"), strings.HasSuffix(w, "xes"),
		strings.HasSuffix(w, "zzes"), strings.HasSuffix(w, "ches"), strings.HasSuffix(w, "shes"):
		return w[:n-2]
	case strings.HasSuffix(w, "ss"), strings.HasSuffix(w, "us"), strings.HasSuffix(w, "is"):
		return w
	case strings.HasSuffix(w, "s"):
		return w[:n-1]
	}
	return w
}
