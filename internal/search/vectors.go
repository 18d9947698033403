package search

import (
	"context"
	"sort"
	"strings"

	"github.com/google/uuid"

	"github.com/graphmill/graphmill/internal/llm"
	"github.com/graphmill/graphmill/internal/vectorindex"
)

// QueryEmbedders gives the embedder that embeds a query for project with
// model; ok is false when the project's provider cannot use that model
// (vectors stored under another provider's model are then not searched).
type QueryEmbedders interface {
	QueryEmbedder(ctx context.Context, project uuid.UUID, model string) (emb llm.Embedder, ok bool, err error)
}

// IndexVectors is the VectorSearcher over the in-process vector index: for
// every embedding space of the target in the project, the query is embedded
// with that space's model and searched there; spaces never mix, and the
// best score of an id across spaces counts.
type IndexVectors struct {
	Index     *vectorindex.Index
	Embedders QueryEmbedders
}

// Nearest implements VectorSearcher.
func (v IndexVectors) Nearest(ctx context.Context, project uuid.UUID, target string, query *QueryVectors, k int, keep func(uuid.UUID) bool) ([]Hit, string, error) {
	kind := vectorindex.KindChunks
	hitTarget := "chunk"
	if target == TargetObjects {
		kind, hitTarget = vectorindex.KindObjects, "object"
	}
	spaces, err := v.Index.Spaces(ctx, project)
	if err != nil {
		return nil, "", err
	}
	best := map[uuid.UUID]float32{}
	var models []string
	for _, sp := range spaces {
		if sp.Kind != kind {
			continue
		}
		emb, ok, err := v.Embedders.QueryEmbedder(ctx, project, sp.Model)
		if err != nil {
			return nil, "", err
		}
		if !ok {
			continue
		}
		vec, err := query.Vector(ctx, sp.Model, emb)
		if err != nil {
			return nil, "", err
		}
		if len(vec) != sp.Dimension {
			continue // the model now answers in another dimension: not this space
		}
		hits, err := v.Index.Search(ctx, project, sp, vec, k, keep)
		if err != nil {
			return nil, "", err
		}
		models = append(models, sp.Model)
		for _, h := range hits {
			if s, seen := best[h.ID]; !seen || h.Score > s {
				best[h.ID] = h.Score
			}
		}
	}
	out := make([]Hit, 0, len(best))
	for id, s := range best {
		out = append(out, Hit{Target: hitTarget, ID: id, Score: float64(s)})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Score != out[j].Score {
			return out[i].Score > out[j].Score
		}
		return out[i].ID.String() < out[j].ID.String()
	})
	if len(out) > k {
		out = out[:k]
	}
	return out, strings.Join(models, ","), nil
}
