package search

import (
	"context"
	"fmt"
	"html"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/graphmill/graphmill/internal/postgres"
)

// A snippet is HTML: the text escaped, with <b> and </b> around keyword
// matches as its only markup, so that a client may render it as HTML
// whatever the documents hold. ts_headline marks matches with two
// private-use characters (markOpen, markClose) that are removed from the
// text before (headlineText), so every marker in its result is its own;
// snippetHTML escapes the text, then turns the markers into <b> and </b>.
// The vector side's snippets (the start of the text) are escaped alone.
const (
	markOpen  = "\ue000"
	markClose = "\ue001"
	// headline is ts_headline's option string: up to two fragments.
	headline = `StartSel=` + markOpen + `, StopSel=` + markClose + `, MaxFragments=2, MaxWords=35, MinWords=12, FragmentDelimiter=" … "`
)

// headlineText is the SQL of a text column without the markers.
func headlineText(column string) string {
	return "translate(" + column + ", '" + markOpen + markClose + "', '')"
}

// snippetHTML is the snippet of a ts_headline result (a plain text, as
// the vector side's, is html.EscapeString'd alone: a marker in it is text).
func snippetHTML(text string) string {
	return strings.NewReplacer(markOpen, "<b>", markClose, "</b>").Replace(html.EscapeString(text))
}

// keywordChunks ranks project's chunks against a websearch query; the
// headline is computed for the ranked top only.
func keywordChunks(ctx context.Context, db postgres.DBTX, project uuid.UUID, query string, docs []uuid.UUID, limit int) ([]Hit, error) {
	var docFilter []uuid.UUID
	if len(docs) > 0 {
		docFilter = docs
	}
	rows, _ := db.Query(ctx, `WITH q AS (SELECT websearch_to_tsquery('english', $2) AS q),
		top AS (
			SELECT c.id, c.document_id, c.chunk_index, c.heading_path, c.text, ts_rank_cd(c.tsv, q.q) AS rank
			FROM document_chunks c, q
			WHERE c.project_id = $1 AND c.tsv @@ q.q AND ($3::uuid[] IS NULL OR c.document_id = ANY($3))
			ORDER BY rank DESC, c.id LIMIT $4)
		SELECT top.id, top.document_id, top.chunk_index, top.heading_path, top.rank::float8,
			ts_headline('english', `+headlineText("top.text")+`, q.q, '`+headline+`')
		FROM top, q ORDER BY top.rank DESC, top.id`, project, query, docFilter, limit)
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Hit, error) {
		h := Hit{Target: "chunk"}
		var doc uuid.UUID
		var idx int
		err := r.Scan(&h.ID, &doc, &idx, &h.HeadingPath, &h.Score, &h.Snippet)
		h.DocumentID, h.ChunkIndex, h.Snippet = &doc, &idx, snippetHTML(h.Snippet)
		return h, err
	})
}

// keywordObjects ranks project's live objects against a websearch query.
func keywordObjects(ctx context.Context, db postgres.DBTX, project uuid.UUID, query string, types []string, limit int) ([]Hit, error) {
	var typeFilter []string
	if len(types) > 0 {
		typeFilter = types
	}
	rows, _ := db.Query(ctx, `WITH q AS (SELECT websearch_to_tsquery('english', $2) AS q),
		top AS (
			SELECT o.id, o.type, o.name, o.key, coalesce(o.description, '') AS description, ts_rank_cd(o.tsv, q.q) AS rank
			FROM graph_objects o, q
			WHERE o.project_id = $1 AND o.deleted_at IS NULL AND o.tsv @@ q.q AND ($3::text[] IS NULL OR o.type = ANY($3))
			ORDER BY rank DESC, o.id LIMIT $4)
		SELECT top.id, top.type, top.name, top.key, top.rank::float8,
			ts_headline('english', `+headlineText("top.name || CASE WHEN top.description = '' THEN '' ELSE ': ' || top.description END")+`, q.q, '`+headline+`')
		FROM top, q ORDER BY top.rank DESC, top.id`, project, query, typeFilter, limit)
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Hit, error) {
		h := Hit{Target: "object"}
		err := r.Scan(&h.ID, &h.ObjectType, &h.Name, &h.Key, &h.Score, &h.Snippet)
		h.Snippet = snippetHTML(h.Snippet)
		return h, err
	})
}

// describe fills the details of vector hits of target (their order and
// scores stay) and drops hits whose rows are gone.
func describe(ctx context.Context, db postgres.DBTX, project uuid.UUID, target string, hits []Hit) ([]Hit, error) {
	ids := make([]uuid.UUID, len(hits))
	at := make(map[uuid.UUID]int, len(hits))
	for i, h := range hits {
		ids[i] = h.ID
		at[h.ID] = i
	}
	found := make([]bool, len(hits))
	if target == TargetChunks {
		rows, _ := db.Query(ctx, `SELECT id, document_id, chunk_index, heading_path, left(text, 240)
			FROM document_chunks WHERE project_id = $1 AND id = ANY($2)`, project, ids)
		defer rows.Close()
		for rows.Next() {
			var id, doc uuid.UUID
			var idx int
			var path []string
			var text string
			if err := rows.Scan(&id, &doc, &idx, &path, &text); err != nil {
				return nil, fmt.Errorf("describe chunks: %w", err)
			}
			h := &hits[at[id]]
			h.Target, h.DocumentID, h.ChunkIndex, h.HeadingPath, h.Snippet = "chunk", &doc, &idx, path, html.EscapeString(text)
			found[at[id]] = true
		}
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("describe chunks: %w", err)
		}
	} else {
		rows, _ := db.Query(ctx, `SELECT id, type, name, key, left(coalesce(description, ''), 240)
			FROM graph_objects WHERE project_id = $1 AND id = ANY($2) AND deleted_at IS NULL`, project, ids)
		defer rows.Close()
		for rows.Next() {
			var id uuid.UUID
			var typ, name, key, desc string
			if err := rows.Scan(&id, &typ, &name, &key, &desc); err != nil {
				return nil, fmt.Errorf("describe objects: %w", err)
			}
			h := &hits[at[id]]
			h.Target, h.ObjectType, h.Name, h.Key, h.Snippet = "object", typ, name, key, html.EscapeString(desc)
			found[at[id]] = true
		}
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("describe objects: %w", err)
		}
	}
	n := 0
	for i := range hits {
		if found[i] {
			hits[n] = hits[i]
			n++
		}
	}
	return hits[:n], nil
}
