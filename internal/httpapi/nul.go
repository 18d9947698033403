package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/danielgtaylor/huma/v2"
	"github.com/go-chi/chi/v5"

	"github.com/graphmill/graphmill/internal/errs"
)

// A NUL character (U+0000) cannot be stored in a PostgreSQL text or jsonb
// value (SQLSTATE 22021, 22P05), so it is refused at the boundary, once
// for every route, before any handler sees it:
//
//   - JSON bodies decoded by huma go through jsonFormat, whose Unmarshal
//     checks the raw document first (the same bytes huma already holds; no
//     copy, and a plain byte search when there is no `\u0000` escape);
//   - query values and path segments are checked by the router middleware,
//     which covers the routes outside huma (event stream, MCP transports)
//     and the ops listener too; under /api/ it refuses bytes that are not
//     UTF-8 there as well (a JSON body's are replaced by U+FFFD when
//     decoded; the console checks its own);
//   - header values cannot carry one: net/http refuses the request (400)
//     before any handler runs.
//
// Handlers that read a JSON body themselves call CheckJSON.

// nulMessage ends the detail of every refusal.
const nulMessage = "must not contain the NUL character (U+0000)"

// nulEscape is how a JSON document spells U+0000 in a string: a raw NUL
// byte is not valid JSON, so a document without this sequence has none.
var nulEscape = []byte(`\u0000`) //nolint:gochecknoglobals // constant bytes

// jsonFormat is huma's JSON format with the NUL check in front of decoding.
func jsonFormat() huma.Format {
	return huma.Format{
		Marshal: huma.DefaultJSONFormat.Marshal,
		Unmarshal: func(data []byte, v any) error {
			if err := CheckJSON(data); err != nil {
				return err
			}
			return json.Unmarshal(data, v)
		},
	}
}

// CheckJSON refuses a JSON request body whose strings (member names or
// values) hold U+0000, with an invalid_argument error naming the first one
// ("body.name", "body.items[2].title"). A malformed document passes: the
// decoder that follows reports it.
func CheckJSON(data []byte) error { return CheckJSONAt("body", data) }

// CheckJSONAt is CheckJSON for a document named root in the error
// ("arguments.city" for root "arguments").
func CheckJSONAt(root string, data []byte) error {
	if !bytes.Contains(data, nulEscape) {
		return nil
	}
	if field, ok := jsonNUL(root, data); ok {
		return errs.Errorf(errs.Invalid, "%s: %s", field, nulMessage)
	}
	return nil
}

// jsonFrame is an open object or array while walking a document.
type jsonFrame struct {
	array   bool
	index   int    // current element of an array
	key     string // current member of an object
	wantKey bool   // the next string of an object is a member name
}

// jsonNUL walks the tokens of data and names the first string holding
// U+0000.
func jsonNUL(root string, data []byte) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var stack []*jsonFrame
	path := func() string {
		var sb strings.Builder
		sb.WriteString(root)
		for _, f := range stack {
			if f.array {
				sb.WriteString("[" + strconv.Itoa(f.index) + "]")
			} else if !f.wantKey {
				sb.WriteString("." + f.key)
			}
		}
		return sb.String()
	}
	done := func() { // a value of the innermost container ended
		if len(stack) == 0 {
			return
		}
		if top := stack[len(stack)-1]; top.array {
			top.index++
		} else {
			top.wantKey = true
		}
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			return "", false
		}
		switch tok := tok.(type) {
		case json.Delim:
			switch tok {
			case '{', '[':
				stack = append(stack, &jsonFrame{array: tok == '[', wantKey: tok == '{'})
			default:
				stack = stack[:len(stack)-1]
				done()
			}
		case string:
			if n := len(stack); n > 0 && !stack[n-1].array && stack[n-1].wantKey {
				if strings.IndexByte(tok, 0) >= 0 {
					return path() + " (a member name)", true
				}
				stack[n-1].key, stack[n-1].wantKey = tok, false
				continue
			}
			if strings.IndexByte(tok, 0) >= 0 {
				return path(), true
			}
			done()
		default:
			done()
		}
	}
}

// utf8Message ends the detail of a refusal of a query value, query
// parameter name or path segment that is not UTF-8 once percent-decoded:
// PostgreSQL (a UTF8 database) would refuse it as text too, without
// naming it.
const utf8Message = "must be valid UTF-8"

// textProblem is what is wrong with a decoded request value: a NUL, bytes
// that are not UTF-8 (when utf8Too is set), or nothing ("").
func textProblem(v string, utf8Too bool) string {
	switch {
	case strings.IndexByte(v, 0) >= 0:
		return nulMessage
	case utf8Too && !utf8.ValidString(v):
		return utf8Message
	}
	return ""
}

// plainASCII reports whether raw, a raw path or query, can hold neither a
// NUL nor a byte that is not UTF-8: no percent escape, no byte outside
// 0x01-0x7f.
func plainASCII(raw string) bool {
	for i := range len(raw) {
		if c := raw[i]; c == '%' || c == 0 || c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// queryField names query parameter k in a refusal: query.<k>, or, for a
// name longer than errs.QuotedMax characters (the caller's choice, up to
// the size of a request line), the name quoted and cut.
func queryField(k string) string {
	if utf8.RuneCountInString(k) > errs.QuotedMax {
		return "query (a parameter named " + errs.Quoted(k) + ")"
	}
	return "query." + k
}

// requestText refuses a request whose path or query holds U+0000, or,
// under /api/ (the API, its streams, MCP and the ops routes), bytes that
// are not UTF-8, naming the path parameter (routed by mux) or the query
// parameter. The console's pages check their own queries and forms for
// both, answering with a page.
func requestText(mux *chi.Mux, r *http.Request) error {
	utf8Too := strings.HasPrefix(r.URL.Path, "/api/")
	if msg := textProblem(r.URL.Path, utf8Too); msg != "" {
		field := "path"
		rctx := chi.NewRouteContext()
		if mux.Find(rctx, r.Method, r.URL.Path) != "" {
			for i, k := range rctx.URLParams.Keys {
				v := rctx.URLParams.Values[i]
				if dec, err := url.PathUnescape(v); err == nil {
					v = dec // chi may route on the raw path
				}
				if k != "*" && textProblem(v, utf8Too) != "" {
					field = "path." + k
					break
				}
			}
		}
		return errs.Errorf(errs.Invalid, "%s: %s", field, msg)
	}
	if plainASCII(r.URL.RawQuery) {
		return nil
	}
	q, _ := url.ParseQuery(r.URL.RawQuery) // what parses is what handlers see
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if msg := textProblem(k, utf8Too); msg != "" {
			return errs.Errorf(errs.Invalid, "query (a parameter name): %s", msg)
		}
		for _, v := range q[k] {
			if msg := textProblem(v, utf8Too); msg != "" {
				return errs.Errorf(errs.Invalid, "%s: %s", queryField(k), msg)
			}
		}
	}
	return nil
}
