package document

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

func newTestChunker(t testing.TB) *Chunker {
	t.Helper()
	c, err := NewChunker()
	require.NoError(t, err)
	return c
}

// requireValidChunks checks what every chunking must hold: exact offsets,
// exact token counts within budget, increasing and complete coverage, the
// heading path at each start, overlaps that hold no heading, and
// determinism.
func requireValidChunks(t testing.TB, c *Chunker, blocks []Block, opts ChunkOptions, chunks []Chunk) {
	t.Helper()
	text := JoinBlocks(blocks)
	maxTokens := opts.withDefaults().MaxTokens
	var headings []int // offsets of heading blocks
	for i, off := range blockOffsets(blocks) {
		if blocks[i].Kind == BlockHeading && strings.TrimSpace(blocks[i].Text) != "" {
			headings = append(headings, off)
		}
	}
	covered := make([]bool, len(text))
	for i, ch := range chunks {
		require.Equal(t, i, ch.Index)
		require.Less(t, ch.StartOffset, ch.EndOffset)
		require.Equal(t, text[ch.StartOffset:ch.EndOffset], ch.Text, "chunk %d offsets", i)
		require.True(t, utf8.ValidString(ch.Text), "chunk %d splits a character", i)
		require.Equal(t, c.CountTokens(ch.Text), ch.TokenCount, "chunk %d token count", i)
		require.LessOrEqual(t, ch.TokenCount, maxTokens, "chunk %d over budget", i)
		require.Equal(t, ch.Text, strings.TrimSpace(ch.Text), "chunk %d has edge whitespace", i)
		require.Equal(t, headingPathAt(blocks, ch.StartOffset), ch.HeadingPath, "chunk %d heading path", i)
		if i > 0 {
			require.Greater(t, ch.StartOffset, chunks[i-1].StartOffset)
			require.Greater(t, ch.EndOffset, chunks[i-1].EndOffset)
			for _, h := range headings {
				if h >= ch.StartOffset && h < chunks[i-1].EndOffset {
					require.Failf(t, "overlap crosses a heading", "chunk %d overlap %q", i, text[ch.StartOffset:chunks[i-1].EndOffset])
				}
			}
		}
		for j := ch.StartOffset; j < ch.EndOffset; j++ {
			covered[j] = true
		}
	}
	for i, r := range text {
		if !unicode.IsSpace(r) {
			require.True(t, covered[i], "byte %d (%q) in no chunk", i, r)
		}
	}
	require.Equal(t, chunks, c.Chunk(blocks, opts), "not deterministic")
}

// headingPathAt is the obvious quadratic definition of a heading path.
func headingPathAt(blocks []Block, offset int) []string {
	path := []string{}
	var levels []int
	pos := 0
	for _, b := range blocks {
		if pos > offset {
			break
		}
		if b.Kind == BlockHeading {
			for len(levels) > 0 && levels[len(levels)-1] >= max(b.Level, 1) {
				levels, path = levels[:len(levels)-1], path[:len(path)-1]
			}
			levels, path = append(levels, max(b.Level, 1)), append(path, b.Text)
		}
		pos += len(b.Text) + len(BlockSeparator)
	}
	return path
}

func headingBlock(level int, text string) Block {
	return Block{Kind: BlockHeading, Level: level, Text: text}
}
func paragraphBlock(text string) Block { return Block{Kind: BlockParagraph, Text: text} }

func TestChunkOptionsDefaults(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		in   ChunkOptions
		want ChunkOptions
	}{
		{name: "zero means defaults", in: ChunkOptions{}, want: ChunkOptions{MaxTokens: 512, OverlapTokens: 64}},
		{name: "explicit kept", in: ChunkOptions{MaxTokens: 300, OverlapTokens: 30}, want: ChunkOptions{MaxTokens: 300, OverlapTokens: 30}},
		{name: "negative overlap means none", in: ChunkOptions{MaxTokens: 100, OverlapTokens: -1}, want: ChunkOptions{MaxTokens: 100}},
		{name: "overlap capped at half", in: ChunkOptions{MaxTokens: 100, OverlapTokens: 90}, want: ChunkOptions{MaxTokens: 100, OverlapTokens: 50}},
		{name: "tiny budget raised", in: ChunkOptions{MaxTokens: 1}, want: ChunkOptions{MaxTokens: MaxTokensMin, OverlapTokens: MaxTokensMin / 2}},
		{name: "negative budget means default", in: ChunkOptions{MaxTokens: -5, OverlapTokens: 10}, want: ChunkOptions{MaxTokens: 512, OverlapTokens: 10}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, tt.in.withDefaults())
		})
	}
}

func TestChunkEmpty(t *testing.T) {
	t.Parallel()

	c := newTestChunker(t)
	tests := []struct {
		name   string
		blocks []Block
	}{
		{name: "nil"},
		{name: "no blocks", blocks: []Block{}},
		{name: "empty blocks", blocks: []Block{paragraphBlock(""), headingBlock(1, "")}},
		{name: "whitespace blocks", blocks: []Block{paragraphBlock(" \n\t "), paragraphBlock("\u00a0")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Empty(t, c.Chunk(tt.blocks, ChunkOptions{}))
		})
	}
}

func TestChunkStructure(t *testing.T) {
	t.Parallel()

	c := newTestChunker(t)
	type want struct {
		path []string
		text string
	}
	tests := []struct {
		name   string
		blocks []Block
		opts   ChunkOptions
		want   []want
	}{
		{
			name: "small sections share a chunk until a top-level heading",
			blocks: []Block{
				headingBlock(1, "Install"), paragraphBlock("Download it."), headingBlock(2, "Linux"), paragraphBlock("Use apt."),
				headingBlock(1, "Use"), paragraphBlock("Run it."),
			},
			want: []want{
				{path: []string{"Install"}, text: "Install\n\nDownload it.\n\nLinux\n\nUse apt."},
				{path: []string{"Use"}, text: "Use\n\nRun it."},
			},
		},
		{
			name: "text before the first heading has an empty path",
			blocks: []Block{
				paragraphBlock("Preamble."), headingBlock(2, "Only"), paragraphBlock("Body."),
			},
			want: []want{
				{path: []string{}, text: "Preamble."},
				{path: []string{"Only"}, text: "Only\n\nBody."},
			},
		},
		{
			name: "sub-heading preferred over a block break",
			blocks: []Block{
				headingBlock(1, "Install"),
				headingBlock(2, "Linux"),
				paragraphBlock("Use apt to install the package on Debian and Ubuntu systems."),
				paragraphBlock("Use dnf on Fedora and other Red Hat systems."),
				headingBlock(2, "Mac"),
				paragraphBlock("Use brew to install the package on macOS systems today."),
			},
			opts: ChunkOptions{MaxTokens: 40, OverlapTokens: -1},
			want: []want{
				{path: []string{"Install"}, text: "Install\n\nLinux\n\nUse apt to install the package on Debian and Ubuntu systems.\n\nUse dnf on Fedora and other Red Hat systems."},
				{path: []string{"Install", "Mac"}, text: "Mac\n\nUse brew to install the package on macOS systems today."},
			},
		},
		{
			name: "paragraphs that fit are not split",
			blocks: []Block{
				paragraphBlock("One two three four five six seven eight nine ten eleven twelve."),
				paragraphBlock("Alpha beta gamma delta epsilon zeta eta theta iota kappa lambda."),
				paragraphBlock("Red orange yellow green blue indigo violet."),
			},
			opts: ChunkOptions{MaxTokens: 20, OverlapTokens: -1},
			want: []want{
				{path: []string{}, text: "One two three four five six seven eight nine ten eleven twelve."},
				{path: []string{}, text: "Alpha beta gamma delta epsilon zeta eta theta iota kappa lambda."},
				{path: []string{}, text: "Red orange yellow green blue indigo violet."},
			},
		},
		{
			name: "long paragraph splits at sentences",
			blocks: []Block{
				paragraphBlock("The first sentence is here. The second sentence follows it. A third one ends the paragraph."),
			},
			opts: ChunkOptions{MaxTokens: 14, OverlapTokens: -1},
			want: []want{
				{path: []string{}, text: "The first sentence is here. The second sentence follows it."},
				{path: []string{}, text: "A third one ends the paragraph."},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			chunks := c.Chunk(tt.blocks, tt.opts)
			requireValidChunks(t, c, tt.blocks, tt.opts, chunks)
			var got []want
			for _, ch := range chunks {
				got = append(got, want{path: ch.HeadingPath, text: ch.Text})
			}
			require.Equal(t, tt.want, got)
		})
	}
}

func TestChunkOverlap(t *testing.T) {
	t.Parallel()

	c := newTestChunker(t)
	var blocks []Block
	for s := range 3 {
		blocks = append(blocks, headingBlock(1, fmt.Sprintf("Section %d", s)))
		for p := range 4 {
			var sb strings.Builder
			for n := range 6 {
				fmt.Fprintf(&sb, "Sentence %d of paragraph %d says something new. ", n, p)
			}
			blocks = append(blocks, paragraphBlock(strings.TrimSpace(sb.String())))
		}
	}
	opts := ChunkOptions{MaxTokens: 80, OverlapTokens: 20}
	chunks := c.Chunk(blocks, opts)
	requireValidChunks(t, c, blocks, opts, chunks)
	text := JoinBlocks(blocks)

	overlaps := 0
	for i := 1; i < len(chunks); i++ {
		prev, ch := chunks[i-1], chunks[i]
		if strings.HasPrefix(ch.Text, "Section ") {
			require.GreaterOrEqual(t, ch.StartOffset, prev.EndOffset, "overlap across a top-level heading at chunk %d", i)
			require.NotEqual(t, prev.HeadingPath[0], ch.HeadingPath[0])
			continue
		}
		require.Less(t, ch.StartOffset, prev.EndOffset, "no overlap at chunk %d", i)
		overlap := text[ch.StartOffset:prev.EndOffset]
		require.True(t, strings.HasSuffix(prev.Text, overlap))
		require.True(t, strings.HasPrefix(overlap, "Sentence "), "overlap %q is not whole sentences", overlap)
		require.LessOrEqual(t, c.CountTokens(overlap), opts.OverlapTokens)
		require.Greater(t, c.CountTokens(overlap), opts.OverlapTokens/2, "overlap %q is far below budget", overlap)
		overlaps++
	}
	require.Greater(t, overlaps, 3)
}

func TestChunkHugeParagraphWithoutPunctuation(t *testing.T) {
	t.Parallel()

	c := newTestChunker(t)
	words := []string{"graph", "mill", "knowledge", "node", "edge", "vector", "über", "数据"}
	rng := rand.New(rand.NewPCG(1, 2))
	parts := make([]string, 3000)
	for i := range parts {
		parts[i] = words[rng.IntN(len(words))]
	}
	blocks := []Block{paragraphBlock(strings.Join(parts, " "))}
	opts := ChunkOptions{MaxTokens: 64, OverlapTokens: 8}
	chunks := c.Chunk(blocks, opts)
	requireValidChunks(t, c, blocks, opts, chunks)
	require.Greater(t, len(chunks), 3000/64)
	text := blocks[0].Text
	for i, ch := range chunks {
		require.True(t, ch.StartOffset == 0 || text[ch.StartOffset-1] == ' ', "chunk %d starts mid-word", i)
		require.True(t, ch.EndOffset == len(text) || text[ch.EndOffset] == ' ', "chunk %d ends mid-word", i)
	}
}

func TestChunkHugeWord(t *testing.T) {
	t.Parallel()

	c := newTestChunker(t)
	word := strings.Repeat("αβγ漢字abc0123🙂", 2000)
	blocks := []Block{headingBlock(1, "Blob"), paragraphBlock(word)}
	opts := ChunkOptions{MaxTokens: 32, OverlapTokens: -1}
	chunks := c.Chunk(blocks, opts)
	requireValidChunks(t, c, blocks, opts, chunks)
	require.Greater(t, len(chunks), 100)
	var sb strings.Builder
	for i, ch := range chunks[1:] {
		require.Equal(t, []string{"Blob"}, ch.HeadingPath)
		require.Equal(t, chunks[i].EndOffset, ch.StartOffset, "gap or overlap before chunk %d", i+1)
		sb.WriteString(ch.Text)
	}
	require.Equal(t, word, strings.TrimPrefix(chunks[0].Text, "Blob\n\n")+sb.String())
}

// randomDocument builds a document of n blocks of assorted kinds and sizes.
func randomDocument(rng *rand.Rand, n int) []Block {
	vocab := strings.Fields("the graph stores objects and relations between them while chunks carry " +
		"offsets into text so extraction can cite sources 42 3.14 naïve café 東京 données")
	sentence := func() string {
		words := make([]string, 3+rng.IntN(20))
		for i := range words {
			words[i] = vocab[rng.IntN(len(vocab))]
		}
		return strings.Join(words, " ") + []string{".", "!", "?", ".\"", ";"}[rng.IntN(5)]
	}
	var blocks []Block
	for range n {
		switch k := rng.IntN(10); {
		case k < 2:
			blocks = append(blocks, headingBlock(1+rng.IntN(3), sentence()))
		case k < 3:
			lines := make([]string, 1+rng.IntN(8))
			for i := range lines {
				lines[i] = "- " + sentence()
			}
			blocks = append(blocks, Block{Kind: BlockList, Text: strings.Join(lines, "\n")})
		case k < 4:
			lines := make([]string, 1+rng.IntN(30))
			for i := range lines {
				lines[i] = strings.Repeat("  ", rng.IntN(3)) + "x := f(y) // " + sentence()
			}
			blocks = append(blocks, Block{Kind: BlockCode, Text: strings.Join(lines, "\n")})
		case k < 5 && rng.IntN(4) == 0:
			blocks = append(blocks, paragraphBlock(strings.Repeat("ab", 100+rng.IntN(2000))))
		default:
			sentences := make([]string, 1+rng.IntN(40))
			for i := range sentences {
				sentences[i] = sentence()
			}
			blocks = append(blocks, paragraphBlock(strings.Join(sentences, " ")))
		}
	}
	return blocks
}

func TestChunkProperties(t *testing.T) {
	t.Parallel()

	c := newTestChunker(t)
	options := []ChunkOptions{
		{},
		{MaxTokens: 16, OverlapTokens: 4},
		{MaxTokens: 50, OverlapTokens: -1},
		{MaxTokens: 128, OverlapTokens: 32},
		{MaxTokens: 9, OverlapTokens: 100},
	}
	for seed := range uint64(40) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(seed, 7))
			blocks := randomDocument(rng, 1+rng.IntN(40))
			opts := options[seed%uint64(len(options))]
			requireValidChunks(t, c, blocks, opts, c.Chunk(blocks, opts))
		})
	}
}

func FuzzChunk(f *testing.F) {
	f.Add("# Title\n\nSome text. More text!\n\n## Sub\n\n- item\n- item", uint8(16), int8(4))
	f.Add(strings.Repeat("word ", 200), uint8(10), int8(-1))
	f.Add(strings.Repeat("漢", 300), uint8(8), int8(0))
	c := newTestChunker(f)
	f.Fuzz(func(t *testing.T, doc string, maxTokens uint8, overlap int8) {
		parsed, err := Parse(t.Context(), "doc.md", "", []byte(doc))
		if err != nil {
			return
		}
		opts := ChunkOptions{MaxTokens: int(maxTokens), OverlapTokens: int(overlap)}
		requireValidChunks(t, c, parsed.Blocks, opts, c.Chunk(parsed.Blocks, opts))
	})
}

// benchmarkMarkdown is a document of about 10 KB with the usual structure.
func benchmarkMarkdown() string {
	var sb strings.Builder
	for s := 0; sb.Len() < 10_000; s++ {
		fmt.Fprintf(&sb, "# Chapter %d\n\nThis chapter explains part %d of the system in some detail. ", s, s)
		sb.WriteString("Each paragraph has several sentences, so that the chunker must choose where to cut. ")
		sb.WriteString("Knowledge graphs link objects through typed relationships.\n\n")
		fmt.Fprintf(&sb, "## Setup %d\n\n- install the server\n- create a project\n- upload documents\n\n", s)
		sb.WriteString("```go\nfunc main() {\n\tfmt.Println(\"hello\")\n}\n```\n\n")
		sb.WriteString("Extraction runs per window of chunks and validates every object against its schema. ")
		sb.WriteString("Embeddings are computed in batches and cached in memory for search.\n\n")
	}
	return sb.String()
}

func BenchmarkChunk(b *testing.B) {
	c := newTestChunker(b)
	parsed, err := Parse(b.Context(), "bench.md", "", []byte(benchmarkMarkdown()))
	require.NoError(b, err)
	b.SetBytes(int64(len(parsed.Text)))
	b.ReportAllocs()
	for b.Loop() {
		c.Chunk(parsed.Blocks, ChunkOptions{})
	}
}
