package console

import "github.com/go-chi/chi/v5"

// pages registers the console's pages on a router, each behind signedIn
// (a live session, its CSRF token checked on a change): a page cannot be
// mounted without it.
type pages struct {
	r chi.Router
	h *Handler
}

// get registers page for GET requests to path.
func (p pages) get(path string, page pageFunc) { p.r.Get(path, p.h.signedIn(page, formBody)) }

// post registers page for POST requests to path: a form, read under
// FormMax whatever its encoding.
func (p pages) post(path string, page pageFunc) { p.r.Post(path, p.h.signedIn(page, formBody)) }

// upload registers page for POST requests to path whose multipart body
// page streams itself, under its own limit (the document upload).
func (p pages) upload(path string, page pageFunc) { p.r.Post(path, p.h.signedIn(page, uploadBody)) }
