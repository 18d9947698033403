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

	"github.com/danielgtaylor/huma/v2"
	"github.com/google/uuid"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/httpapi"
)

// UploadMaxDefault is the default cap on an uploaded file.
const UploadMaxDefault = 100 << 20

type (
	uploadIn struct {
		ContentType string `header:"Content-Type"`
		RawBody     []byte
	}
	uploadOut struct {
		Status int
		Body   Document
	}
	listIn struct {
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
		Filename string `json:"filename"`
		Content  string `json:"content"`
		MimeType string `json:"mimeType"`
	}
)

func docID(s string) (uuid.UUID, error) {
	id, err := uuid.Parse(s)
	if err != nil {
		return uuid.Nil, ErrNotFound
	}
	return id, nil
}

// Register adds the document routes; uploads are capped at maxUpload bytes.
func Register(api huma.API, svc *Service, maxUpload int64) {
	read := auth.Rule{Scope: auth.DocumentsRead, Resource: auth.Project, ProjectRole: auth.ProjectViewer}
	write := auth.Rule{Scope: auth.DocumentsWrite, Resource: auth.Project, ProjectRole: auth.ProjectEditor}

	up := httpapi.Op("upload-document", http.MethodPost, "/api/documents",
		"Upload a document (multipart field \"file\", or JSON {filename, content, mimeType}); project from X-Project-ID", write)
	up.MaxBodyBytes = maxUpload + 64<<10 // multipart framing
	up.Errors = append(up.Errors, http.StatusRequestEntityTooLarge)
	huma.Register(api, up, func(ctx context.Context, in *uploadIn) (*uploadOut, error) {
		a, p := auth.AccessFrom(ctx), auth.PrincipalFrom(ctx)
		u, err := decodeUpload(in, maxUpload)
		if err != nil {
			return nil, err
		}
		u.ProjectID, u.UserID = a.ProjectID, p.UserID
		d, err := svc.Upload(ctx, u)
		if err != nil {
			return nil, err
		}
		status := http.StatusCreated
		if d.Duplicate {
			status = http.StatusOK
		}
		return &uploadOut{Status: status, Body: d}, nil
	})

	huma.Register(api, httpapi.Op("list-documents", http.MethodGet, "/api/documents", "List the project's documents, newest first", read),
		func(ctx context.Context, in *listIn) (*httpapi.Out[httpapi.List[Document]], error) {
			list, total, err := svc.List(ctx, auth.AccessFrom(ctx).ProjectID, in.Limit, in.Offset)
			if err != nil {
				return nil, err
			}
			return &httpapi.Out[httpapi.List[Document]]{Body: httpapi.NewList(list, total, in.PageParams)}, nil
		})

	huma.Register(api, httpapi.Op("get-document", http.MethodGet, "/api/documents/{id}", "Get a document and its pipeline status", read),
		func(ctx context.Context, in *idIn) (*httpapi.Out[Document], error) {
			id, err := docID(in.ID)
			if err != nil {
				return nil, err
			}
			d, err := svc.Get(ctx, auth.AccessFrom(ctx).ProjectID, id)
			if err != nil {
				return nil, err
			}
			return &httpapi.Out[Document]{Body: d}, nil
		})

	huma.Register(api, httpapi.Op("list-document-chunks", http.MethodGet, "/api/documents/{id}/chunks", "List a document's chunks in order", read),
		func(ctx context.Context, in *chunksIn) (*httpapi.Out[httpapi.List[StoredChunk]], error) {
			id, err := docID(in.ID)
			if err != nil {
				return nil, err
			}
			list, total, err := svc.Chunks(ctx, auth.AccessFrom(ctx).ProjectID, id, in.Limit, in.Offset)
			if err != nil {
				return nil, err
			}
			return &httpapi.Out[httpapi.List[StoredChunk]]{Body: httpapi.NewList(list, total, in.PageParams)}, nil
		})

	del := httpapi.Op("delete-document", http.MethodDelete, "/api/documents/{id}", "Delete a document, its chunks and its jobs", write)
	del.DefaultStatus = http.StatusNoContent
	huma.Register(api, del, func(ctx context.Context, in *idIn) (*struct{}, error) {
		id, err := docID(in.ID)
		if err != nil {
			return nil, err
		}
		return nil, svc.Delete(ctx, auth.AccessFrom(ctx).ProjectID, id)
	})
}

func decodeUpload(in *uploadIn, maxUpload int64) (Upload, error) {
	mt, params, err := mime.ParseMediaType(in.ContentType)
	if err != nil {
		return Upload{}, errs.New(errs.Invalid, "Content-Type must be multipart/form-data or application/json")
	}
	switch mt {
	case "application/json":
		var j jsonUpload
		dec := json.NewDecoder(bytes.NewReader(in.RawBody))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&j); err != nil {
			return Upload{}, errs.Errorf(errs.Invalid, "body must be JSON {filename, content, mimeType}: %v", err)
		}
		if int64(len(j.Content)) > maxUpload {
			return Upload{}, errs.New(errs.PayloadTooLarge, "the document exceeds the upload limit")
		}
		if j.MimeType == "" {
			j.MimeType = "text/plain"
		}
		return Upload{Filename: j.Filename, MimeType: j.MimeType, Data: []byte(j.Content)}, nil
	case "multipart/form-data":
		r := multipart.NewReader(bytes.NewReader(in.RawBody), params["boundary"])
		for {
			part, err := r.NextPart()
			if errors.Is(err, io.EOF) {
				return Upload{}, errs.New(errs.Invalid, `multipart body has no "file" part`)
			}
			if err != nil {
				return Upload{}, errs.Errorf(errs.Invalid, "malformed multipart body: %v", err)
			}
			if part.FormName() != "file" {
				continue
			}
			data, err := io.ReadAll(io.LimitReader(part, maxUpload+1))
			if err != nil {
				return Upload{}, errs.Errorf(errs.Invalid, "malformed multipart body: %v", err)
			}
			if int64(len(data)) > maxUpload {
				return Upload{}, errs.New(errs.PayloadTooLarge, "the document exceeds the upload limit")
			}
			ct := part.Header.Get("Content-Type")
			if ct == "application/octet-stream" {
				ct = ""
			}
			return Upload{Filename: part.FileName(), MimeType: ct, Data: data}, nil
		}
	}
	return Upload{}, errs.Errorf(errs.Invalid, "Content-Type %s is not accepted: use multipart/form-data or application/json", mt)
}
