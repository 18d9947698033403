package search

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"sync"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"

	"github.com/graphmill/graphmill/internal/llm"
	"github.com/graphmill/graphmill/internal/postgres"
)

// rrfK is the reciprocal-rank-fusion constant (Cormack et al.): a hit's
// fused score is the sum over lists of 1/(rrfK + rank).
const rrfK = 60

// Config wires a Service.
type Config struct {
	Pool *pgxpool.Pool
	// Vectors answers the vector side; nil makes vector and hybrid
	// searches fail with a clear error (keyword only).
	Vectors VectorSearcher
	Logger  *slog.Logger
	// MaxConns bounds the pool connections that the service's own
	// queries (keyword, filters, hit details) hold at once, all searches
	// together; 0 takes 1/MaxConnsShare of the pool's (at least one).
	// Vectors' reads (embedder resolution, index loads) are its own.
	MaxConns int
}

// MaxConnsShare divides the pool's connections into the default
// Config.MaxConns: a quarter (5 of the default 20) keeps one hybrid
// search's four queries running at once and leaves the rest to the API's
// other requests and the job workers however many searches run
// (BenchmarkSearchConns; docs/decisions.md, "Session 11: search
// connections").
const MaxConnsShare = 4

// VectorSearcher finds the stored vectors nearest to the query, embedding
// the query with the model of the vectors searched.
type VectorSearcher interface {
	// Nearest returns up to k hits of target (chunks or objects) of
	// project by cosine similarity, best first, and the embedding model
	// used; keep filters the candidates. query embeds the search's text
	// once per model for all the targets of one search.
	Nearest(ctx context.Context, project uuid.UUID, target string, query *QueryVectors, k int, keep func(uuid.UUID) bool) ([]Hit, string, error)
}

// QueryVectors is one search's query text and its embeddings: each model
// embeds the text at most once however many targets and spaces use it
// (a hybrid search over chunks and objects asks twice). Safe for
// concurrent use: a second asker of the same model waits for the first;
// different models embed at once.
type QueryVectors struct {
	text    string
	mu      sync.Mutex // guards byModel
	byModel map[string]*modelVector
}

// modelVector is the text's embedding under one model, once embedded.
type modelVector struct {
	mu   sync.Mutex // held while the model embeds
	done bool
	vec  []float32
}

// NewQueryVectors returns the embeddings cache of one search of text.
func NewQueryVectors(text string) *QueryVectors {
	return &QueryVectors{text: text, byModel: map[string]*modelVector{}}
}

// Vector returns the text's embedding under model, embedding it with emb
// on first use (a failure is not kept: the next asker tries again).
func (q *QueryVectors) Vector(ctx context.Context, model string, emb llm.Embedder) ([]float32, error) {
	q.mu.Lock()
	m := q.byModel[model]
	if m == nil {
		m = &modelVector{}
		q.byModel[model] = m
	}
	q.mu.Unlock()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.done {
		return m.vec, nil
	}
	vecs, err := emb.Embed(ctx, []string{q.text})
	if err != nil {
		return nil, fmt.Errorf("embed the query with %s: %w", model, err)
	}
	if len(vecs) != 1 {
		return nil, fmt.Errorf("embed the query with %s: %d vectors for one text", model, len(vecs))
	}
	m.vec, m.done = vecs[0], true
	return m.vec, nil
}

// Service runs searches.
type Service struct {
	cfg   Config
	conns *conns
}

// NewService builds the service.
func NewService(c Config) *Service {
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.MaxConns <= 0 {
		c.MaxConns = max(1, int(c.Pool.Config().MaxConns)/MaxConnsShare)
	}
	return &Service{cfg: c, conns: newConns(c.Pool, c.MaxConns)}
}

// Search runs req over project's chunks and objects.
func (s *Service) Search(ctx context.Context, project uuid.UUID, req Request) (Response, error) {
	if err := req.Normalize(); err != nil {
		return Response{}, err
	}
	if req.Mode != ModeKeyword && s.cfg.Vectors == nil {
		return Response{}, fmt.Errorf("vector search is not available in this process")
	}
	// Each side fetches more than the limit so that fusion has material.
	// The sides (keyword and vector, per target) run at once, their
	// queries within the service's connection slots (conns); their lists
	// keep the request's order, so fusion is deterministic.
	depth := min(req.Limit*3, 300)
	type side struct {
		target string
		vector bool
		hits   []Hit
		model  string
	}
	var sides []*side
	for _, target := range req.Targets {
		if req.Mode != ModeVector {
			sides = append(sides, &side{target: target})
		}
		if req.Mode != ModeKeyword {
			sides = append(sides, &side{target: target, vector: true})
		}
	}
	query := NewQueryVectors(req.Query)
	g, gctx := errgroup.WithContext(ctx)
	for _, sd := range sides {
		g.Go(func() error {
			var err error
			if sd.vector {
				sd.hits, sd.model, err = s.vector(gctx, project, sd.target, req, query, depth)
			} else {
				sd.hits, err = s.keyword(gctx, project, sd.target, req, depth)
			}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return Response{}, err
	}
	out := Response{Mode: req.Mode, Data: []Hit{}}
	lists := make([][]Hit, 0, len(sides))
	for _, sd := range sides {
		if sd.model != "" {
			if out.Models == nil {
				out.Models = map[string]string{}
			}
			out.Models[sd.target] = sd.model
		}
		lists = append(lists, sd.hits)
	}
	if req.Mode == ModeHybrid {
		out.Data = fuse(lists, req.Limit)
	} else {
		out.Data = byScore(lists, req.Limit)
	}
	return out, nil
}

func (s *Service) keyword(ctx context.Context, project uuid.UUID, target string, req Request, depth int) ([]Hit, error) {
	q := req.Query
	if req.KeywordQuery != "" {
		q = req.KeywordQuery
	}
	return lend(ctx, s.conns, func(db postgres.DBTX) ([]Hit, error) {
		if target == TargetChunks {
			return keywordChunks(ctx, db, project, q, req.DocumentIDs, depth)
		}
		return keywordObjects(ctx, db, project, q, req.ObjectTypes, depth)
	})
}

// vector runs the vector side for target, then loads the hits' details
// (and applies the filters that the index cannot see).
func (s *Service) vector(ctx context.Context, project uuid.UUID, target string, req Request, query *QueryVectors, depth int) ([]Hit, string, error) {
	keep, err := s.filter(ctx, project, target, req)
	if err != nil {
		return nil, "", err
	}
	hits, model, err := s.cfg.Vectors.Nearest(ctx, project, target, query, depth, keep)
	if err != nil {
		return nil, "", err
	}
	if len(hits) == 0 {
		return hits, model, nil
	}
	hits, err = lend(ctx, s.conns, func(db postgres.DBTX) ([]Hit, error) {
		return describe(ctx, db, project, target, hits)
	})
	if err != nil {
		return nil, "", err
	}
	return hits, model, nil
}

// filter returns the candidate test of the request's filters for target
// (nil when there is none).
func (s *Service) filter(ctx context.Context, project uuid.UUID, target string, req Request) (func(uuid.UUID) bool, error) {
	var ids map[uuid.UUID]bool
	var err error
	switch {
	case target == TargetChunks && len(req.DocumentIDs) > 0:
		ids, err = s.idSet(ctx, `SELECT id FROM document_chunks WHERE project_id = $1 AND document_id = ANY($2)`, project, req.DocumentIDs)
	case target == TargetObjects && len(req.ObjectTypes) > 0:
		ids, err = s.idSet(ctx, `SELECT id FROM graph_objects WHERE project_id = $1 AND type = ANY($2) AND deleted_at IS NULL`, project, req.ObjectTypes)
	default:
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return func(id uuid.UUID) bool { return ids[id] }, nil
}

func (s *Service) idSet(ctx context.Context, sql string, args ...any) (map[uuid.UUID]bool, error) {
	set, err := lend(ctx, s.conns, func(db postgres.DBTX) (map[uuid.UUID]bool, error) {
		rows, _ := db.Query(ctx, sql, args...)
		return postgres.CollectIDSet(rows)
	})
	if err != nil {
		return nil, fmt.Errorf("search filter: %w", err)
	}
	return set, nil
}

// fuse merges ranked lists by reciprocal rank: a hit found by several
// lists (keyword and vector) adds up.
func fuse(lists [][]Hit, limit int) []Hit {
	type entry struct {
		hit   Hit
		score float64
	}
	byID := map[uuid.UUID]*entry{}
	var order []uuid.UUID
	for _, list := range lists {
		for rank, h := range list {
			e, ok := byID[h.ID]
			if !ok {
				e = &entry{hit: h}
				byID[h.ID] = e
				order = append(order, h.ID)
			} else if e.hit.Snippet == "" || (h.Snippet != "" && !hasHighlight(e.hit.Snippet) && hasHighlight(h.Snippet)) {
				e.hit.Snippet = h.Snippet // keep the highlighted snippet
			}
			e.score += 1 / float64(rrfK+rank+1)
		}
	}
	out := make([]Hit, 0, len(order))
	for _, id := range order {
		e := byID[id]
		e.hit.Score = e.score
		out = append(out, e.hit)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Score > out[j].Score })
	if len(out) > limit {
		out = out[:limit]
	}
	return out
}

// byScore merges lists whose scores are comparable (one mode).
func byScore(lists [][]Hit, limit int) []Hit {
	var out []Hit
	for _, l := range lists {
		out = append(out, l...)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Score > out[j].Score })
	if len(out) > limit {
		out = out[:limit]
	}
	if out == nil {
		out = []Hit{}
	}
	return out
}

func hasHighlight(s string) bool {
	for i := 0; i+3 <= len(s); i++ {
		if s[i:i+3] == "<b>" {
			return true
		}
	}
	return false
}
