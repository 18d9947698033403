package document

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/tiktoken-go/tokenizer"
)

// Chunking defaults, used when ChunkOptions leaves a field zero, and the
// smallest budget honoured: a chunk must hold any single character, which
// o200k encodes in at most four tokens, beside its overlap.
const (
	MaxTokensDefault     = 512
	OverlapTokensDefault = 64
	MaxTokensMin         = 8
)

// ChunkOptions sets the token budget of chunks. MaxTokens zero means
// MaxTokensDefault and values below MaxTokensMin mean MaxTokensMin. OverlapTokens zero means OverlapTokensDefault and a
// negative value means no overlap; it is capped at half of MaxTokens so every
// chunk carries new text.
type ChunkOptions struct {
	MaxTokens     int
	OverlapTokens int
}

func (o ChunkOptions) withDefaults() ChunkOptions {
	if o.MaxTokens <= 0 {
		o.MaxTokens = MaxTokensDefault
	}
	o.MaxTokens = max(o.MaxTokens, MaxTokensMin)
	switch {
	case o.OverlapTokens == 0:
		o.OverlapTokens = OverlapTokensDefault
	case o.OverlapTokens < 0:
		o.OverlapTokens = 0
	}
	o.OverlapTokens = min(o.OverlapTokens, o.MaxTokens/2)
	return o
}

// Chunk is a contiguous piece of a document's text sized for embedding and
// extraction. Text is exactly Parsed.Text[StartOffset:EndOffset] (byte
// offsets). HeadingPath holds the headings in force at StartOffset, outermost
// first, and is empty (not nil) before the first heading. TokenCount is the
// o200k token count of Text.
type Chunk struct {
	Index       int
	Text        string
	StartOffset int
	EndOffset   int
	HeadingPath []string
	TokenCount  int
}

// Chunker splits documents into chunks, counting tokens with the o200k
// encoding. It is safe for concurrent use; build one and share it, since
// loading the vocabulary is costly.
type Chunker struct {
	codec tokenizer.Codec
}

// NewChunker returns a Chunker with the o200k_base vocabulary loaded.
func NewChunker() (*Chunker, error) {
	codec, err := tokenizer.Get(tokenizer.O200kBase)
	if err != nil {
		return nil, fmt.Errorf("load o200k tokenizer: %w", err)
	}
	return &Chunker{codec: codec}, nil
}

// CountTokens returns the number of o200k tokens in s.
func (c *Chunker) CountTokens(s string) int {
	n, err := c.codec.Count(s)
	if err != nil {
		// No token is shorter than a byte, so this bound keeps budgets safe.
		return len(s)
	}
	return n
}

// breakKind ranks the places a chunk may end, weakest first.
type breakKind int

const (
	breakHard       breakKind = iota // inside a word
	breakWord                        // between words
	breakSentence                    // between sentences or lines
	breakBlock                       // between blocks
	breakHeading                     // before a sub-heading
	breakTopHeading                  // before a top-level heading
)

// unit is an atomic piece of text the packer places whole: a block, or a
// sentence, word or word fragment of a block too large to fit a chunk.
type unit struct {
	start, end int // byte range in the joined text, trimmed
	tokens     int
	brk        breakKind // the break just before the unit
	heading    bool      // part of a heading block
}

// Chunk splits blocks into chunks of at most opts.MaxTokens tokens, with
// offsets into JoinBlocks(blocks) (which is Parsed.Text for parsed blocks).
//
// Chunks follow the structure. A top-level heading (the document's highest
// level) always starts a new chunk. Otherwise a chunk is filled greedily and
// ends at the strongest break that leaves it at least half full (a quarter
// for a break before a sub-heading): before a heading, then between blocks,
// then between sentences, then between words; inside a word only when the
// word alone is over budget. A block or sentence is split only when it is
// larger than the budget for new text (MaxTokens less OverlapTokens), and a
// chunk does not end on a heading.
//
// A chunk that does not start at a heading begins with up to
// opts.OverlapTokens tokens of whole trailing sentences (else words) of the
// previous chunk, never reaching back past a heading. The output is
// deterministic, and nil when blocks hold no text.
func (c *Chunker) Chunk(blocks []Block, opts ChunkOptions) []Chunk {
	opts = opts.withDefaults()
	text := JoinBlocks(blocks)
	offsets := blockOffsets(blocks)
	units := c.units(text, blocks, offsets, opts.MaxTokens-opts.OverlapTokens)
	if len(units) == 0 {
		return nil
	}
	paths := headingPaths(blocks)

	var chunks []Chunk
	prevFirst := 0
	for pos := 0; pos < len(units); {
		start := units[pos].start
		if len(chunks) > 0 && units[pos].brk < breakHeading {
			if s, ok := c.overlapStart(text, units, chunks[len(chunks)-1].StartOffset, prevFirst, pos, opts.OverlapTokens); ok {
				start = s
			}
		}
		overlap := 0
		if start < units[pos].start {
			overlap = c.CountTokens(text[start:units[pos-1].end]) + gapTokens(text, units, pos)
		}
		end := cut(text, units, pos, opts.MaxTokens-overlap)

		// Unit sums are estimates: shed units, then the overlap, until the real
		// count fits. A lone unit always fits (see MaxTokensMin).
		tokens := c.CountTokens(text[start:units[end-1].end])
		for tokens > opts.MaxTokens && (end-1 > pos || start < units[pos].start) {
			if end-1 > pos {
				end--
			} else {
				start = units[pos].start
			}
			tokens = c.CountTokens(text[start:units[end-1].end])
		}

		b := sort.Search(len(offsets), func(i int) bool { return offsets[i] > start }) - 1
		chunks = append(chunks, Chunk{
			Index:       len(chunks),
			Text:        text[start:units[end-1].end],
			StartOffset: start,
			EndOffset:   units[end-1].end,
			HeadingPath: slices.Clone(paths[b]),
			TokenCount:  tokens,
		})
		prevFirst, pos = pos, end
	}
	return chunks
}

// blockOffsets returns the byte offset of each block in JoinBlocks(blocks).
func blockOffsets(blocks []Block) []int {
	offsets := make([]int, len(blocks))
	off := 0
	for i, b := range blocks {
		offsets[i] = off
		off += len(b.Text) + len(BlockSeparator)
	}
	return offsets
}

// headingPaths returns, for each block, the headings in force at it: a
// heading closes those of its level and deeper, then opens its own.
func headingPaths(blocks []Block) [][]string {
	type heading struct {
		level int
		text  string
	}
	var stack []heading
	paths := make([][]string, len(blocks))
	for i, b := range blocks {
		if b.Kind == BlockHeading {
			level := max(b.Level, 1)
			for len(stack) > 0 && stack[len(stack)-1].level >= level {
				stack = stack[:len(stack)-1]
			}
			stack = append(stack, heading{level: level, text: strings.TrimSpace(b.Text)})
		}
		path := make([]string, len(stack))
		for j, h := range stack {
			path[j] = h.text
		}
		paths[i] = path
	}
	return paths
}

// units cuts the text into atomic units of at most limit tokens, splitting
// a block only as finely as needed: into sentences, then words, then word
// fragments. The first piece after a run of headings is kept small enough to
// share a chunk with them, so a heading does not end up alone.
func (c *Chunker) units(text string, blocks []Block, offsets []int, limit int) []unit {
	topLevel := 0
	for _, b := range blocks {
		if b.Kind == BlockHeading && (topLevel == 0 || max(b.Level, 1) < topLevel) {
			topLevel = max(b.Level, 1)
		}
	}
	var units []unit
	headingTokens := 0 // tokens of the headings just before, with separators
	for i, b := range blocks {
		first := len(units)
		firstLimit := limit
		if b.Kind != BlockHeading && headingTokens <= limit/2 {
			firstLimit = limit - headingTokens
		}
		for _, s := range spans(b.Text, splitNone) {
			c.split(&units, text, offsets[i]+s[0], offsets[i]+s[1], limit, firstLimit, splitNone)
		}
		if len(units) == first {
			continue
		}
		if b.Kind != BlockHeading {
			headingTokens = 0
			continue
		}
		units[first].brk = breakHeading
		if max(b.Level, 1) == topLevel {
			units[first].brk = breakTopHeading
		}
		for j := first; j < len(units); j++ {
			units[j].heading = true
			headingTokens += units[j].tokens + 1
		}
	}
	return units
}

// split appends [start, end) as one unit if it fits, else splits it at the
// next finer level. The first unit it appends must fit first tokens, the
// others limit, and carries the break of level.
func (c *Chunker) split(units *[]unit, text string, start, end, limit, first int, level splitLevel) {
	n := len(*units)
	defer func() {
		if len(*units) > n {
			(*units)[n].brk = level.brk()
		}
	}()
	tokens := c.CountTokens(text[start:end])
	if tokens <= first {
		*units = append(*units, unit{start: start, end: end, tokens: tokens})
		return
	}
	if level == splitWords {
		c.hardSplit(units, text, start, end, limit, first)
		return
	}
	next := level + 1
	parts := spans(text[start:end], next)
	if len(parts) == 1 && next == splitSentences {
		next = splitWords
		parts = spans(text[start:end], next)
	}
	for _, s := range parts {
		c.split(units, text, start+s[0], start+s[1], limit, first, next)
		first = limit
	}
}

// hardSplit cuts a word that alone is over budget into fragments of at most
// limit tokens (first for the first one), at token boundaries moved back to
// the start of a character.
func (c *Chunker) hardSplit(units *[]unit, text string, start, end, limit, first int) {
	word := text[start:end]
	_, toks, err := c.codec.Encode(word)
	if err != nil || len(toks) == 0 {
		toks = strings.SplitAfter(word, "")
	}
	bounds := make([]int, 0, len(toks)) // byte offset after each token
	off := 0
	for _, t := range toks {
		off += len(t)
		bounds = append(bounds, off)
	}
	pos, ti := 0, 0 // ti: tokens wholly before pos
	for pos < len(word) {
		budget := limit
		if pos == 0 {
			budget = first
		}
		for n := budget; ; n-- {
			cutAt := len(word)
			if ti+n < len(bounds) {
				cutAt = runeStartAtOrBefore(word, bounds[ti+n-1], pos)
			}
			tokens := c.CountTokens(word[pos:cutAt])
			if tokens <= budget || n <= 1 {
				*units = append(*units, unit{start: start + pos, end: start + cutAt, tokens: tokens, brk: breakHard})
				pos = cutAt
				for ti < len(bounds) && bounds[ti] <= pos {
					ti++
				}
				break
			}
		}
	}
}

// runeStartAtOrBefore moves i back to the start of a UTF-8 character, but
// not to or before floor, in which case it moves forward instead.
func runeStartAtOrBefore(s string, i, floor int) int {
	j := i
	for j > floor && !isRuneStart(s[j]) {
		j--
	}
	if j > floor {
		return j
	}
	for j = i + 1; j < len(s) && !isRuneStart(s[j]); j++ {
	}
	return j
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// gapTokens estimates the tokens of the whitespace before units[i]: a
// newline run is a token of its own, a space joins the next word.
func gapTokens(text string, units []unit, i int) int {
	if i == 0 || !strings.Contains(text[units[i-1].end:units[i].start], "\n") {
		return 0
	}
	return 1
}

// cut returns the end (exclusive unit index) of the chunk whose new text
// starts at units[pos], given budget tokens for it. Sums of unit counts are
// estimates; the caller checks the real count.
func cut(text string, units []unit, pos, budget int) int {
	fills := []int{0} // fills[k-pos]: estimated tokens of units[pos:k]
	content := false
	e := pos
	for ; e < len(units); e++ {
		if e > pos && units[e].brk == breakTopHeading && content {
			return e
		}
		fill := fills[len(fills)-1] + units[e].tokens
		if e > pos {
			fill += gapTokens(text, units, e)
			if fill > budget {
				break
			}
		}
		fills = append(fills, fill)
		content = content || !units[e].heading
	}
	if e == len(units) {
		return e
	}

	best, bestKind := -1, breakHard
	for k := e; k > pos; k-- {
		if units[k-1].heading {
			continue // a chunk does not end on a heading
		}
		if fills[k-pos] < budget/4 {
			break
		}
		kind := units[k].brk
		if kind < breakHeading && fills[k-pos] < budget/2 {
			continue
		}
		if best < 0 || kind > bestKind {
			best, bestKind = k, kind
		}
	}
	if best > 0 {
		return best
	}
	// Nothing good enough: take all that fits, unless that ends on a heading.
	for k := e; k > pos; k-- {
		if !units[k-1].heading {
			return k
		}
	}
	return e
}

// overlapStart finds where the overlap of the chunk starting at units[pos]
// begins: the earliest start of a whole trailing sentence (else word) of the
// previous chunk such that the overlap stays within want tokens. It stays
// after prevStart, so it never repeats the whole previous chunk, and after
// the last heading, and reports false when no
// overlap fits.
func (c *Chunker) overlapStart(text string, units []unit, prevStart, prevFirst, pos, want int) (int, bool) {
	if want <= 0 || pos == 0 {
		return 0, false
	}
	lo := prevStart
	for i := pos - 1; i >= prevFirst; i-- {
		if units[i].heading {
			lo = max(lo, units[i].end)
			break
		}
	}
	hi := units[pos-1].end
	if lo >= hi {
		return 0, false
	}
	best, found := 0, false
	sentences := spans(text[lo:hi], splitSentences)
	for i := len(sentences) - 1; i >= 0; i-- {
		s := lo + sentences[i][0]
		if s == prevStart || c.CountTokens(text[s:hi]) > want {
			break
		}
		best, found = s, true
	}
	if found || len(sentences) == 0 {
		return best, found
	}
	last := sentences[len(sentences)-1]
	words := spans(text[lo+last[0]:hi], splitWords)
	for i := len(words) - 1; i >= 0; i-- {
		s := lo + last[0] + words[i][0]
		if s == prevStart || c.CountTokens(text[s:hi]) > want {
			break
		}
		best, found = s, true
	}
	return best, found
}
