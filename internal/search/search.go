// Package search answers POST /api/search: keyword search through
// PostgreSQL full-text search (websearch syntax, ranked, with highlighted
// snippets), vector search through the in-process vector index (the query
// embedded with the same provider and model as the stored vectors), and
// hybrid search fusing both by reciprocal rank.
package search

import (
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/postgres"
)

// Modes.
const (
	ModeKeyword = "keyword"
	ModeVector  = "vector"
	ModeHybrid  = "hybrid"
)

// Targets.
const (
	TargetChunks  = "chunks"
	TargetObjects = "objects"
)

// Limits.
const (
	LimitDefault = 10
	LimitMax     = 100
	// QueryMax is the longest query, in characters (the API's maxLength).
	QueryMax = 2000
)

// Request is a search.
type Request struct {
	Query       string      `json:"query" minLength:"1" maxLength:"2000"`
	Mode        string      `json:"mode,omitempty" enum:"keyword,vector,hybrid" doc:"Default hybrid."`
	Targets     []string    `json:"targets,omitempty" doc:"chunks, objects or both (default both)."`
	ObjectTypes []string    `json:"objectTypes,omitempty" doc:"Only objects of these types."`
	DocumentIDs []uuid.UUID `json:"documentIds,omitempty" doc:"Only chunks of these documents."`
	Limit       int         `json:"limit,omitempty" doc:"1 to 100, default 10."`
	// KeywordQuery, when set, is what the keyword side searches instead of
	// Query (chat searches a question's words OR-ed, and embeds the
	// question itself). Not part of the API.
	KeywordQuery string `json:"-"`
}

// Hit is one result: a chunk or a graph object.
type Hit struct {
	Target string    `json:"target" enum:"chunk,object"`
	ID     uuid.UUID `json:"id"`
	// Score orders the results: the fused reciprocal-rank score in hybrid
	// mode, the text rank in keyword mode, the cosine similarity in vector
	// mode.
	Score   float64 `json:"score"`
	Snippet string  `json:"snippet,omitempty" doc:"HTML: the matching text, escaped, with <b>...</b> around keyword matches as its only markup; else the start of the text, escaped."`
	// Chunks.
	DocumentID  *uuid.UUID `json:"documentId,omitempty"`
	ChunkIndex  *int       `json:"chunkIndex,omitempty"`
	HeadingPath []string   `json:"headingPath,omitempty"`
	// Objects.
	ObjectType string `json:"objectType,omitempty"`
	Name       string `json:"name,omitempty"`
	Key        string `json:"key,omitempty"`
}

// Response is what a search returns.
type Response struct {
	Mode string `json:"mode"`
	Data []Hit  `json:"data"`
	// Models names the embedding models the vector side used, per target.
	Models map[string]string `json:"models,omitempty"`
}

// Normalize applies the defaults and checks the request: every caller
// (the API, the console, chat, MCP) gets the same answers.
func (r *Request) Normalize() error {
	switch {
	case r.Query == "":
		return errs.New(errs.Invalid, "query is required")
	case !postgres.ValidText(r.Query):
		return errs.New(errs.Invalid, "query must be valid UTF-8 without the NUL character (U+0000)")
	case utf8.RuneCountInString(r.Query) > QueryMax:
		return errs.Errorf(errs.Invalid, "query must be at most %d characters", QueryMax)
	}
	switch r.Mode {
	case "":
		r.Mode = ModeHybrid
	case ModeKeyword, ModeVector, ModeHybrid:
	default:
		return errs.New(errs.Invalid, "mode must be keyword, vector or hybrid")
	}
	if len(r.Targets) == 0 {
		r.Targets = []string{TargetChunks, TargetObjects}
	}
	for _, t := range r.Targets {
		if t != TargetChunks && t != TargetObjects {
			return errs.New(errs.Invalid, "targets may hold only chunks and objects")
		}
	}
	switch {
	case r.Limit == 0:
		r.Limit = LimitDefault
	case r.Limit < 1 || r.Limit > LimitMax:
		return errs.Errorf(errs.Invalid, "limit must be between 1 and %d", LimitMax)
	}
	return nil
}
