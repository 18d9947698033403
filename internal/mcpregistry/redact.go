package mcpregistry

import (
	"net/url"
	"regexp"
	"sort"
	"strings"

	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/postgres"
)

// minRedactBytes is the shortest sealed value hidden in error text: a
// value of one to three bytes is no secret, and replacing every "1" or
// "eu" would garble the message.
const minRedactBytes = 4

// urlInText finds absolute URLs in error text (go-sdk and net/http print
// the URL a request went to, quoted).
var urlInText = regexp.MustCompile("[A-Za-z][A-Za-z0-9+.-]*://[^\\s\"'<>`]+") //nolint:gochecknoglobals // compiled pattern, constant

// reduceURL keeps the scheme, host and path of a URL: its query and
// fragment (where registry URL variables usually go) and its userinfo are
// dropped. It works on the text, so a URL that does not parse is cut too.
func reduceURL(raw string) string {
	scheme, rest, _ := strings.Cut(raw, "://")
	if i := strings.IndexAny(rest, "?#"); i >= 0 {
		rest = rest[:i]
	}
	authority, path := rest, ""
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		authority, path = rest[:i], rest[i:]
	}
	if i := strings.LastIndexByte(authority, '@'); i >= 0 {
		authority = authority[i+1:]
	}
	return scheme + "://" + authority + path
}

// redact hides srv's sealed values in text that leaves the registry (error
// answers and log lines): URLs lose their query, fragment and userinfo;
// then each install variable's value becomes {name} and each header and
// env value ***, as written and as URL encoding writes it. The text is
// cleaned first (postgres.Text): a value split by a NUL would be whole
// where the text is stored, the NUL dropped.
func (srv Server) redact(text string) string {
	text = postgres.Text(text)
	text = urlInText.ReplaceAllStringFunc(text, reduceURL)
	type pair struct{ value, with string }
	var pairs []pair
	add := func(m map[string]string, with func(name string) string) {
		for k, v := range m {
			if len(v) < minRedactBytes {
				continue
			}
			for _, form := range []string{v, url.QueryEscape(v), url.PathEscape(v)} {
				pairs = append(pairs, pair{form, with(k)})
			}
		}
	}
	add(srv.vars, func(name string) string { return "{" + name + "}" })
	add(srv.headers, func(string) string { return Masked })
	add(srv.env, func(string) string { return Masked })
	if len(pairs) == 0 {
		return text
	}
	// The longest value first: a value holding another is hidden whole.
	sort.SliceStable(pairs, func(i, j int) bool { return len(pairs[i].value) > len(pairs[j].value) })
	args := make([]string, 0, 2*len(pairs))
	for _, p := range pairs {
		args = append(args, p.value, p.with)
	}
	return strings.NewReplacer(args...).Replace(text)
}

// maxErrorText bounds the message of a server's error, cut after
// redaction (a value cut in half would no longer be recognised).
const maxErrorText = 400

// redactError returns err as a domain error of the same code whose message
// srv.redact has cleaned, then shortened to maxErrorText bytes; the chain
// (which may print the values) is dropped. Sentinels whose message holds
// no value still match errors.Is.
func (srv Server) redactError(err error) error {
	if err == nil {
		return nil
	}
	msg := srv.redact(errs.MessageOf(err))
	if len(msg) > maxErrorText {
		msg = postgres.Clip(msg, maxErrorText) + "..."
	}
	return &errs.Error{Code: errs.CodeOf(err), Message: msg}
}
