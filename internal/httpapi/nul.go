package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

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
//     and the ops listener too;
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

// requestNUL refuses a request whose path or query holds U+0000, naming
// the path parameter (routed by mux) or the query parameter.
func requestNUL(mux *chi.Mux, r *http.Request) error {
	if strings.IndexByte(r.URL.Path, 0) >= 0 {
		field := "path"
		rctx := chi.NewRouteContext()
		if mux.Find(rctx, r.Method, r.URL.Path) != "" {
			for i, k := range rctx.URLParams.Keys {
				v := rctx.URLParams.Values[i]
				if k != "*" && (strings.IndexByte(v, 0) >= 0 || strings.Contains(v, "%00")) {
					field = "path." + k
					break
				}
			}
		}
		return errs.Errorf(errs.Invalid, "%s: %s", field, nulMessage)
	}
	if !strings.Contains(r.URL.RawQuery, "%00") && strings.IndexByte(r.URL.RawQuery, 0) < 0 {
		return nil
	}
	q, _ := url.ParseQuery(r.URL.RawQuery) // what parses is what handlers see
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if strings.IndexByte(k, 0) >= 0 {
			return errs.Errorf(errs.Invalid, "query (a parameter name): %s", nulMessage)
		}
		for _, v := range q[k] {
			if strings.IndexByte(v, 0) >= 0 {
				return errs.Errorf(errs.Invalid, "query.%s: %s", k, nulMessage)
			}
		}
	}
	return nil
}
