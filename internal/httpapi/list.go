package httpapi

import "net/http"

// Default and maximum page sizes of list endpoints without a spec'd limit.
const (
	LimitDefault = 50
	LimitMax     = 200
)

// PageParams are the limit/offset query parameters of list endpoints. Out
// of range values are refused, never clamped.
type PageParams struct {
	Limit  int `query:"limit" default:"50" minimum:"1" maximum:"200" doc:"Page size."`
	Offset int `query:"offset" default:"0" minimum:"0" doc:"Items to skip."`
}

// List is the envelope of list responses without a spec'd one.
type List[T any] struct {
	Data   []T `json:"data"`
	Total  int `json:"total"`
	Limit  int `json:"limit"`
	Offset int `json:"offset"`
}

// NewList wraps a page of items; a nil slice becomes [].
func NewList[T any](items []T, total int, p PageParams) List[T] {
	if items == nil {
		items = []T{}
	}
	return List[T]{Data: items, Total: total, Limit: p.Limit, Offset: p.Offset}
}

// Out is a response with a body.
type Out[T any] struct {
	Body T
}

// Created is a response with a body and a chosen status (201 on creation).
type Created[T any] struct {
	Status int
	Body   T
}

// NoContent is the output of operations that answer 204 No Content (huma
// answers 204 for an output without a body); handlers return nil.
type NoContent struct{}

// Reply answers v, or err when the call that gave it failed; a handler
// ends with `return httpapi.Reply(h.svc.Get(ctx, project, id))`.
func Reply[T any](v T, err error) (*Out[T], error) {
	if err != nil {
		return nil, err
	}
	return &Out[T]{Body: v}, nil
}

// ReplyList answers a page of items in the List envelope, or err when the
// call that gave them failed.
func ReplyList[T any](items []T, total int, p PageParams, err error) (*Out[List[T]], error) {
	if err != nil {
		return nil, err
	}
	return &Out[List[T]]{Body: NewList(items, total, p)}, nil
}

// ReplyCreated answers v with 201 Created, or err when the call that
// created it failed.
func ReplyCreated[T any](v T, err error) (*Created[T], error) {
	if err != nil {
		return nil, err
	}
	return &Created[T]{Status: http.StatusCreated, Body: v}, nil
}
