// Package llm is the language-model boundary: the interfaces the pipeline
// uses for embeddings (and, later, structured generation), and the offline
// "local" provider that needs no key and no network.
package llm

import "context"

// Embedder turns texts into vectors, many texts per call: callers batch,
// and an implementation makes one provider request per call (or as few as
// the provider's batch limit allows).
type Embedder interface {
	// Embed returns one vector per text, in order.
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	// Model names the model, stored beside every vector.
	Model() string
	// Dimension is the length of every vector.
	Dimension() int
}
