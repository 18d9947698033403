package llm

import (
	"context"
	"math"
	"strings"
	"unicode"
)

// LocalEmbedModel is the model name of the local embedder, labelled as such
// wherever vectors are shown.
const LocalEmbedModel = "local/feature-hash-v1"

// LocalDimensionDefault is the default vector length.
const LocalDimensionDefault = 768

// LocalEmbedder is the offline embedder: feature hashing of word unigrams,
// word bigrams and character trigrams into a fixed-size signed vector,
// L2-normalised. It is deterministic and needs no model weights; texts
// sharing words and word pieces land near each other, which is enough for
// keyword-like similarity search without a provider.
type LocalEmbedder struct {
	dim int
}

// NewLocalEmbedder returns a local embedder of dimension dim (the default
// when dim <= 0).
func NewLocalEmbedder(dim int) *LocalEmbedder {
	if dim <= 0 {
		dim = LocalDimensionDefault
	}
	return &LocalEmbedder{dim: dim}
}

// Model implements Embedder.
func (e *LocalEmbedder) Model() string { return LocalEmbedModel }

// Dimension implements Embedder.
func (e *LocalEmbedder) Dimension() int { return e.dim }

// Embed implements Embedder.
func (e *LocalEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		out[i] = e.embed(t)
	}
	return out, nil
}

// Feature weights: whole words carry most meaning, trigrams catch
// inflections and typos.
const (
	weightWord    = 1.0
	weightBigram  = 0.5
	weightTrigram = 0.25
)

func (e *LocalEmbedder) embed(text string) []float32 {
	v := make([]float64, e.dim)
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	var r []rune
	for i, w := range words {
		e.add(v, hash("w:", w, ""), weightWord)
		if i > 0 {
			e.add(v, hash("b:", words[i-1], w), weightBigram)
		}
		r = append(append(append(r[:0], '<'), []rune(w)...), '>')
		for j := 0; j+3 <= len(r); j++ {
			e.add(v, hashRunes(r[j:j+3]), weightTrigram)
		}
	}
	var norm float64
	for _, x := range v {
		norm += x * x
	}
	out := make([]float32, e.dim)
	if norm == 0 {
		return out
	}
	norm = math.Sqrt(norm)
	for i, x := range v {
		out[i] = float32(x / norm)
	}
	return out
}

// FNV-1a, 64 bit, written out so that hashing allocates nothing.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func hashString(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime
	}
	return h
}

// hash is the feature hash of kind+a (+ " " + b when b is set).
func hash(kind, a, b string) uint64 {
	h := hashString(hashString(fnvOffset, kind), a)
	if b != "" {
		h = hashString(hashString(h, " "), b)
	}
	return h
}

func hashRunes(r []rune) uint64 {
	h := hashString(fnvOffset, "c:")
	for _, c := range r {
		for c > 0 {
			h ^= uint64(c & 0xff)
			h *= fnvPrime
			c >>= 8
		}
	}
	return h
}

// add adds a feature to an index chosen by its hash, with a sign from the
// hash (the sign halves the bias that collisions would otherwise add).
func (e *LocalEmbedder) add(v []float64, s uint64, w float64) {
	idx := int(s % uint64(e.dim)) //nolint:gosec // dim is a positive int; the remainder fits
	if s>>63 == 1 {
		w = -w
	}
	v[idx] += w
}
