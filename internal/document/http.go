package document

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"os"
	"reflect"
	"strconv"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/httpapi"
)

// UploadMaxDefault is the default cap on an uploaded file.
const UploadMaxDefault = 100 << 20

// UploadRetryAfter is the Retry-After of an upload refused because too many
// are in progress.
const UploadRetryAfter = 5 * time.Second

// multipartOverhead is what multipart framing may add to a file's bytes.
const multipartOverhead = 64 << 10

// UploadLimits bound uploads.
type UploadLimits struct {
	// MaxBytes caps a document (a multipart file, or JSON content).
	MaxBytes int64
	// MaxJSONBytes caps the body of a JSON upload, which is decoded in
	// memory; multipart uploads stream to a spool file instead.
	MaxJSONBytes int64
	// MaxConcurrent bounds the uploads in progress in this process;
	// beyond it an upload answers 429 with Retry-After.
	MaxConcurrent int
	// SpoolDir holds multipart uploads while they are stored (empty: the
	// system's temporary directory).
	SpoolDir string
}

// ErrBusy refuses an upload while MaxConcurrent are in progress.
var ErrBusy = errs.New(errs.RateLimited, "too many uploads are in progress; retry later")

type (
	// uploadIn holds the request body for the handler, which streams it:
	// the operation declares no body field, so huma reads none.
	uploadIn struct {
		ContentType   string `header:"Content-Type"`
		ContentLength int64  `header:"Content-Length"`
		body          io.Reader
	}
	uploadOut struct {
		Status int
		Body   Document
	}
	listIn struct {
		IDs []string `query:"ids" doc:"Only these documents (at most 200 ids, separated by commas); ids of no document of the project are left out."`
		httpapi.PageParams
	}
	idIn struct {
		ID string `path:"id"`
	}
	chunksIn struct {
		ID string `path:"id"`
		httpapi.PageParams
	}
	jsonUpload struct {
		Filename string `json:"filename" minLength:"1" maxLength:"500"`
		Content  string `json:"content" minLength:"1" doc:"The document's text."`
		MimeType string `json:"mimeType,omitempty" doc:"Default text/plain."`
	}
)

// Resolve implements huma.Resolver: it keeps the body reader for the
// handler, and ends reading it at the request's deadline, so that a client
// trickling its body cannot hold an upload slot beyond it.
func (in *uploadIn) Resolve(ctx huma.Context) []error {
	in.body = ctx.BodyReader()
	if d, ok := ctx.Context().Deadline(); ok {
		_ = ctx.SetReadDeadline(d)
	}
	return nil
}

// Register adds the document routes; uploads are bounded by lim.
func Register(api huma.API, svc *Service, lim UploadLimits) {
	read := auth.Rule{Scope: auth.DocumentsRead, Resource: auth.Project, ProjectRole: auth.ProjectViewer}
	write := auth.Rule{Scope: auth.DocumentsWrite, Resource: auth.Project, ProjectRole: auth.ProjectEditor}
	doc := &auth.Owner{Param: "id", Kind: "document", Resolve: auth.InProject(svc.DocumentProject), NotFound: ErrNotFound, NamedProject: true}
	h := handlers{svc: svc, lim: lim, slots: make(chan struct{}, max(lim.MaxConcurrent, 1))}

	up := httpapi.Op("upload-document", http.MethodPost, "/api/documents",
		"Upload a document (multipart field \"file\", or JSON {filename, content, mimeType}); project from X-Project-ID", write)
	up.Errors = append(up.Errors, http.StatusRequestEntityTooLarge, http.StatusTooManyRequests)
	huma.Register(api, up, h.upload)
	// The document shows both bodies; setting them on the operation before
	// registration would make huma read and decode the body itself.
	reg := api.OpenAPI().Components.Schemas
	api.OpenAPI().Paths["/api/documents"].Post.RequestBody = &huma.RequestBody{
		Required: true,
		Content: map[string]*huma.MediaType{
			"multipart/form-data": {Schema: &huma.Schema{
				Type: huma.TypeObject, Required: []string{"file"},
				Properties: map[string]*huma.Schema{"file": {
					Type: huma.TypeString, Format: "binary",
					Description: "The document; the part's filename and Content-Type are used.",
				}},
			}},
			"application/json": {Schema: reg.Schema(reflect.TypeFor[jsonUpload](), true, "DocumentJSONUpload")},
		},
	}

	huma.Register(api, httpapi.Op("list-documents", http.MethodGet, "/api/documents", "List the project's documents, newest first", read), h.list)
	huma.Register(api, httpapi.Op("get-document", http.MethodGet, "/api/documents/{id}", "Get a document and its pipeline status", read.WithOwner(doc)), h.get)
	huma.Register(api, httpapi.Op("list-document-chunks", http.MethodGet, "/api/documents/{id}/chunks", "List a document's chunks in order", read.WithOwner(doc)), h.chunks)
	huma.Register(api, httpapi.Op("delete-document", http.MethodDelete, "/api/documents/{id}", "Delete a document, its chunks and its jobs", write.WithOwner(doc)), h.delete)
}

// handlers are the document routes' handlers: each decodes, calls the
// service with the project and document the middleware authorised
// (auth.Access), and encodes. slots bounds concurrent uploads.
type handlers struct {
	svc   *Service
	lim   UploadLimits
	slots chan struct{}
}

func (h handlers) upload(ctx context.Context, in *uploadIn) (*uploadOut, error) {
	select {
	case h.slots <- struct{}{}:
		defer func() { <-h.slots }()
	default:
		return nil, huma.ErrorWithHeaders(ErrBusy, http.Header{"Retry-After": {strconv.Itoa(int(UploadRetryAfter.Seconds()))}})
	}
	a, p := auth.AccessFrom(ctx), auth.PrincipalFrom(ctx)
	u, closeUpload, err := decodeUpload(in, h.lim)
	if err != nil {
		return nil, err
	}
	defer closeUpload()
	u.ProjectID, u.UserID = a.ProjectID, p.UserID
	d, err := h.svc.Upload(ctx, u)
	if err != nil {
		return nil, err
	}
	status := http.StatusCreated
	if d.Duplicate {
		status = http.StatusOK
	}
	return &uploadOut{Status: status, Body: d}, nil
}

// Resolve implements huma.Resolver: the ids filter is given once.
func (in *listIn) Resolve(ctx huma.Context) []error { return httpapi.QueryOnce(ctx, "ids") }

func (h handlers) list(ctx context.Context, in *listIn) (*httpapi.Out[httpapi.List[Document]], error) {
	ids, err := httpapi.ParseIDs("ids", in.IDs)
	if err != nil {
		return nil, err
	}
	list, total, err := h.svc.ListByIDs(ctx, auth.AccessFrom(ctx).ProjectID, ids, in.Limit, in.Offset)
	return httpapi.ReplyList(list, total, in.PageParams, err)
}

func (h handlers) get(ctx context.Context, _ *idIn) (*httpapi.Out[Document], error) {
	a := auth.AccessFrom(ctx)
	return httpapi.Reply(h.svc.Get(ctx, a.ProjectID, a.ResourceID))
}

func (h handlers) chunks(ctx context.Context, in *chunksIn) (*httpapi.Out[httpapi.List[StoredChunk]], error) {
	a := auth.AccessFrom(ctx)
	list, total, err := h.svc.Chunks(ctx, a.ProjectID, a.ResourceID, in.Limit, in.Offset)
	return httpapi.ReplyList(list, total, in.PageParams, err)
}

func (h handlers) delete(ctx context.Context, _ *idIn) (*httpapi.NoContent, error) {
	a := auth.AccessFrom(ctx)
	return nil, h.svc.Delete(ctx, a.ProjectID, a.ResourceID)
}

// decodeUpload reads an upload from the request body: a multipart file
// spooled to a file while hashed (never in memory), or a JSON body of at
// most MaxJSONBytes decoded in memory. The returned func releases it.
func decodeUpload(in *uploadIn, lim UploadLimits) (Upload, func(), error) {
	nothing := func() {}
	mt, params, err := mime.ParseMediaType(in.ContentType)
	if err != nil {
		return Upload{}, nothing, errs.New(errs.Invalid, "Content-Type must be multipart/form-data or application/json")
	}
	body := in.body
	if body == nil {
		body = http.NoBody
	}
	switch mt {
	case "application/json":
		u, err := decodeJSONUpload(body, in.ContentLength, lim)
		return u, nothing, err
	case "multipart/form-data":
		// The whole body is bounded too: parts other than the file are
		// skipped, not stored, but must not run forever.
		r := multipart.NewReader(&limitedBody{r: body, left: lim.MaxBytes + multipartOverhead}, params["boundary"])
		for {
			part, err := r.NextPart()
			if errors.Is(err, io.EOF) {
				return Upload{}, nothing, errs.New(errs.Invalid, `multipart body has no "file" part`)
			}
			if err != nil {
				return Upload{}, nothing, multipartError(err)
			}
			if part.FormName() != "file" {
				continue
			}
			sp, err := NewSpool(lim.SpoolDir, part, lim.MaxBytes)
			if errors.Is(err, ErrSpool) {
				return Upload{}, nothing, err // logged; the client sees an internal error
			}
			if err != nil {
				return Upload{}, nothing, multipartError(err)
			}
			return Upload{Filename: part.FileName(), MimeType: part.Header.Get("Content-Type"), Content: sp}, func() { _ = sp.Close() }, nil
		}
	}
	return Upload{}, nothing, errs.Errorf(errs.Invalid, "Content-Type %s is not accepted: use multipart/form-data or application/json", mt)
}

// decodeJSONUpload decodes {filename, content, mimeType}. The body is read
// once into memory (at most MaxJSONBytes) and released once decoded; the
// content string is then streamed to storage without another copy.
func decodeJSONUpload(body io.Reader, length int64, lim UploadLimits) (Upload, error) {
	var buf bytes.Buffer
	if length > 0 && length <= lim.MaxJSONBytes {
		buf.Grow(int(length) + bytes.MinRead) // one allocation, not a doubling series
	}
	if _, err := buf.ReadFrom(&limitedBody{r: body, left: lim.MaxJSONBytes}); err != nil {
		if errors.Is(err, errBodyTooLarge) {
			return Upload{}, errs.Errorf(errs.PayloadTooLarge,
				"a JSON upload is limited to %d bytes: send larger documents as multipart/form-data", lim.MaxJSONBytes)
		}
		return Upload{}, bodyError("cannot read body", err, error.Error)
	}
	data := buf.Bytes()
	if err := httpapi.CheckJSON(data); err != nil {
		return Upload{}, err
	}
	// json.Unmarshal decodes in place (a json.Decoder would copy the body
	// into its own buffer first); unknown members are found by a first
	// pass that skips every value.
	var members map[string]skipValue
	if err := json.Unmarshal(data, &members); err != nil {
		return Upload{}, errs.Errorf(errs.Invalid, "body must be JSON {filename, content, mimeType}: %v", err)
	}
	for k := range members {
		if k != "filename" && k != "content" && k != "mimeType" {
			return Upload{}, errs.Errorf(errs.Invalid, "body must be JSON {filename, content, mimeType}: unknown member %q", k)
		}
	}
	var j jsonUpload
	if err := json.Unmarshal(data, &j); err != nil {
		return Upload{}, errs.Errorf(errs.Invalid, "body must be JSON {filename, content, mimeType}: %v", err)
	}
	if int64(len(j.Content)) > lim.MaxBytes {
		return Upload{}, ErrTooLarge
	}
	if j.MimeType == "" {
		j.MimeType = "text/plain"
	}
	return Upload{Filename: j.Filename, MimeType: j.MimeType, Content: StringContent(j.Content)}, nil
}

// skipValue decodes any JSON value into nothing, without copying it.
type skipValue struct{}

// UnmarshalJSON implements json.Unmarshaler.
func (*skipValue) UnmarshalJSON([]byte) error { return nil }

// errBodyTooLarge ends a body read past its limit.
var errBodyTooLarge = errors.New("request body too large")

// limitedBody fails with errBodyTooLarge once more than left bytes were
// read, where io.LimitReader would end the body quietly.
type limitedBody struct {
	r    io.Reader
	left int64
}

func (l *limitedBody) Read(p []byte) (int, error) {
	if l.left < 0 {
		return 0, errBodyTooLarge
	}
	if int64(len(p)) > l.left+1 {
		p = p[:l.left+1]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	if l.left < 0 {
		return n, errBodyTooLarge
	}
	return n, err
}

// bodyError turns a failure to read an upload into its answer: 413 over
// the limit, 400 for a malformed body, its detail what and describe's
// words for err.
func bodyError(what string, err error, describe func(error) string) error {
	if errors.Is(err, errBodyTooLarge) || errors.Is(err, ErrTooLarge) {
		return ErrTooLarge
	}
	var e *errs.Error
	if errors.As(err, &e) {
		return err
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return errs.New(errs.Invalid, "the request body did not arrive before the request's deadline")
	}
	return errs.Errorf(errs.Invalid, "%s: %s", what, describe(err))
}

// multipartError is bodyError for a multipart body: its reader's errors
// quote the client's text (a part's header line), so the detail says
// what is wrong in words of its own (httpapi.MultipartDetail).
func multipartError(err error) error {
	return bodyError("malformed multipart body", err, httpapi.MultipartDetail)
}
