package search_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/search"
)

// embedder is an llm.Embedder that counts its calls and runs embed.
type embedder struct {
	model string
	calls atomic.Int32
	embed func(ctx context.Context) ([]float32, error)
}

func (e *embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	e.calls.Add(1)
	v, err := e.embed(ctx)
	if err != nil {
		return nil, err
	}
	return [][]float32{v}, nil
}
func (e *embedder) Model() string  { return e.model }
func (e *embedder) Dimension() int { return 2 }

// TestQueryVectorsOncePerModel: a model embeds one search's text once
// however often it is asked; a failure is not kept (the next asker
// embeds again).
func TestQueryVectorsOncePerModel(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	fail := true
	e := &embedder{model: "m", embed: func(context.Context) ([]float32, error) {
		if fail {
			return nil, errors.New("provider down")
		}
		return []float32{1, 2}, nil
	}}
	q := search.NewQueryVectors("loom")
	_, err := q.Vector(ctx, "m", e)
	require.ErrorContains(t, err, "provider down")
	fail = false
	for range 3 {
		v, err := q.Vector(ctx, "m", e)
		require.NoError(t, err)
		require.Equal(t, []float32{1, 2}, v)
	}
	require.Equal(t, int32(2), e.calls.Load())
}

// TestQueryVectorsModelsEmbedAtOnce: two models (a hybrid search whose
// chunks and objects use different models) embed at the same time: the
// first model's embedding waits for the second's to start, which it could
// not if one model's embedding held up every other. The deadline only
// bounds a failure.
func TestQueryVectorsModelsEmbedAtOnce(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	aIn, bStarted := make(chan struct{}), make(chan struct{})
	a := &embedder{model: "a", embed: func(ctx context.Context) ([]float32, error) {
		close(aIn)
		select {
		case <-bStarted:
			return []float32{1, 0}, nil
		case <-ctx.Done():
			return nil, errors.New("model b never started while model a embedded")
		}
	}}
	b := &embedder{model: "b", embed: func(context.Context) ([]float32, error) {
		close(bStarted)
		return []float32{0, 1}, nil
	}}
	q := search.NewQueryVectors("loom")
	aDone := make(chan error, 1)
	go func() {
		_, err := q.Vector(ctx, "a", a)
		aDone <- err
	}()
	<-aIn // model a is embedding
	v, err := q.Vector(ctx, "b", b)
	require.NoError(t, err)
	require.Equal(t, []float32{0, 1}, v)
	require.NoError(t, <-aDone)
}
