package console

import (
	"net/http"

	"github.com/a-h/templ"
)

// show ends a handler that reads and shows: it fails with err (h.fail)
// when the read failed, else renders page with 200. page is only built,
// not rendered, when err is set, so its arguments may be the zero values
// a failed read returns.
func (h *Handler) show(w http.ResponseWriter, r *http.Request, page templ.Component, err error) {
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.render(w, r, http.StatusOK, page)
}
