package main

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/graphmill/graphmill/internal/client"
	"github.com/graphmill/graphmill/internal/httpapi"
)

// byIDs reads the records of ids through a list route's ids filter: the
// distinct ids ("" left out), httpapi.IDsMax a request, so n ids take
// ceil(n/200) requests. list asks for the records of one batch (limit:
// the batch's size); key is a record's id. Ids of no record of the
// project are absent from the answer.
func byIDs[T any](ids []string, key func(T) string, list func(batch []string, limit int64) (*[]T, error)) (map[string]T, error) {
	var distinct []string
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		if id != "" && !seen[id] {
			seen[id] = true
			distinct = append(distinct, id)
		}
	}
	out := make(map[string]T, len(distinct))
	for batch := range slices.Chunk(distinct, httpapi.IDsMax) {
		got, err := list(batch, int64(len(batch)))
		if err != nil {
			return nil, err
		}
		for _, r := range deref(got) {
			out[key(r)] = r
		}
	}
	return out, nil
}

// documentsByID reads the project's documents among ids, by id.
func (s *session) documentsByID(ctx context.Context, ids []string) (map[string]client.Document, error) {
	return byIDs(ids, func(d client.Document) string { return d.Id }, func(batch []string, limit int64) (*[]client.Document, error) {
		page, err := call[client.ListDocument](s.api.ListDocuments(ctx, &client.ListDocumentsParams{Ids: &batch, Limit: &limit})) //nolint:bodyclose // call closes it
		return page.Data, err
	})
}

// objectsByID reads the project's graph objects among ids, by id.
func (s *session) objectsByID(ids []string) (map[string]client.GraphObject, error) {
	return byIDs(ids, func(o client.GraphObject) string { return o.Id }, func(batch []string, limit int64) (*[]client.GraphObject, error) {
		page, err := call[client.ListObject](s.api.ListGraphObjects(s.ctx, &client.ListGraphObjectsParams{Ids: &batch, Limit: &limit})) //nolint:bodyclose // call closes it
		return page.Data, err
	})
}

// documentNames is the file name of each of the project's documents
// among ids, for a table that names documents. A token that may not read
// documents (no documents:read) leaves the table with the ids: a warning,
// not the command's failure.
func (s *session) documentNames(ids []string) (map[string]string, error) {
	docs, err := s.documentsByID(s.ctx, ids)
	if e, ok := errors.AsType[*exitCodeError](err); ok && e.code == exitAuth {
		fmt.Fprintf(s.stderr, "warning: %v; documents shown by id\n", err)
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	names := make(map[string]string, len(docs))
	for id, d := range docs {
		names[id] = d.Filename
	}
	return names, nil
}
