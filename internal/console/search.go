package console

import (
	"html"
	"net/http"
	"strings"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/search"
)

// searchRule is the API's rule of POST /api/search (search.Register).
//
//nolint:gochecknoglobals // constant rule
var searchRule = auth.Rule{Scope: auth.SearchRead, Resource: auth.Project}

// searchPage searches the project (query q, mode keyword, vector or
// hybrid) with the API's service and shows the hits with their
// highlights.
func (h *Handler) searchPage(w http.ResponseWriter, r *http.Request, c caller) {
	a, p, err := h.projectContext(r, c, searchRule, "")
	if err != nil {
		h.fail(w, r, err)
		return
	}
	q := r.URL.Query()
	form := searchForm{Query: strings.TrimSpace(q.Get("q")), Mode: q.Get("mode")}
	var res search.Response
	if form.Query != "" {
		res, err = h.cfg.Search.Search(r.Context(), a.ProjectID, search.Request{Query: form.Query, Mode: form.Mode, Limit: 20})
		if err != nil {
			h.fail(w, r, err)
			return
		}
	}
	h.render(w, r, http.StatusOK, searchResults(c.sess.CSRF, projectView{Project: p}, form, res))
}

// searchForm is the search page's query.
type searchForm struct {
	Query string
	Mode  string
}

// snippetPart is a run of a snippet's text, highlighted or not.
type snippetPart struct {
	Text string
	Mark bool
}

// snippetParts splits a search snippet (escaped text with <b>...</b>
// highlights, search.Hit) on its highlights and unescapes the text, so
// that the page escapes all of it again (templ) and marks the highlights
// itself: nothing of a snippet is rendered as HTML.
func snippetParts(snippet string) []snippetPart {
	var out []snippetPart
	for snippet != "" {
		open := strings.Index(snippet, "<b>")
		if open < 0 {
			out = append(out, snippetPart{Text: html.UnescapeString(snippet)})
			break
		}
		if open > 0 {
			out = append(out, snippetPart{Text: html.UnescapeString(snippet[:open])})
		}
		rest := snippet[open+len("<b>"):]
		end := strings.Index(rest, "</b>")
		if end < 0 {
			out = append(out, snippetPart{Text: html.UnescapeString(rest), Mark: true})
			break
		}
		out = append(out, snippetPart{Text: html.UnescapeString(rest[:end]), Mark: true})
		snippet = rest[end+len("</b>"):]
	}
	return out
}
