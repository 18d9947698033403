package document

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// One fuzz target per parser (make fuzz runs each for FUZZTIME; their seeds
// and the findings under testdata/fuzz run with the ordinary tests). The
// parser is called directly, not through Parse, so that a panic in our own
// code is a finding rather than a recovered ErrCorrupt; only the PDF
// library is known to panic on malformed input, so PDF goes through the
// recovering parseWith. Whatever parses must hold: clean block texts (valid
// UTF-8, no NUL or other control characters but tab and newline), Text
// joined from the blocks, and chunks that satisfy every chunking property.

// fuzzChunkOptions is a small budget, so that short inputs split too.
var fuzzChunkOptions = ChunkOptions{MaxTokens: 24, OverlapTokens: 6} //nolint:gochecknoglobals // test constant

func fuzzParser(f *testing.F, format Format, seeds ...[]byte) {
	f.Helper()
	for _, s := range seeds {
		f.Add(s)
	}
	c := newTestChunker(f)
	f.Fuzz(func(t *testing.T, data []byte) { checkParse(t, c, format, data) })
}

// checkParse parses data as format and checks the result.
func checkParse(t *testing.T, c *Chunker, format Format, data []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var blocks []Block
	var err error
	if format == FormatPDF {
		var p Parsed
		p, err = parseWith(ctx, format, parserFor(format), data)
		blocks = p.Blocks
	} else {
		blocks, err = parserFor(format)(ctx, data)
	}
	if err != nil {
		require.True(t, errors.Is(err, ErrCorrupt) || errors.Is(err, context.DeadlineExceeded), "unexpected error class: %v", err)
		return
	}
	for i, b := range blocks {
		require.NotEmpty(t, b.Text, "block %d", i)
		require.True(t, utf8.ValidString(b.Text), "block %d", i)
		require.Equal(t, -1, strings.IndexFunc(b.Text, func(r rune) bool {
			return r == 0 || r == '\uFEFF' || r == '\r' || (r < 0x20 && r != '\t' && r != '\n') || (r >= 0x7F && r < 0xA0)
		}), "block %d holds a control character: %q", i, b.Text)
		require.Equal(t, strings.TrimRight(b.Text, " \t\n"), b.Text, "block %d has trailing space", i)
		if b.Kind == BlockHeading {
			require.Positive(t, b.Level, "block %d", i)
		} else {
			require.Zero(t, b.Level, "block %d", i)
		}
	}
	requireValidChunks(t, c, blocks, fuzzChunkOptions, c.Chunk(blocks, fuzzChunkOptions))
}

func FuzzParseText(f *testing.F) {
	fuzzParser(f, FormatText,
		[]byte("plain\n\ntext with\r\nCRLF and a\x00NUL"),
		[]byte("\xff\xfeh\x00\xe9\x00\n\x00\n\x00x\x00"),
		[]byte("\xfe\xff\x00h\x00i\xd8\x00"),
		[]byte("\xef\xbb\xbfBOM\ufeff inside\x01\x7f\u0085"),
		[]byte(strings.Repeat("word ", 100)+"\n\n"+strings.Repeat("漢字", 40)),
	)
}

func FuzzParseMarkdown(f *testing.F) {
	fuzzParser(f, FormatMarkdown,
		[]byte("# h\n\n- a\n  - nested\n\n```\nc\x00ode\n```\n| a | b |\n|---|---|\n| 1 | 2 |"),
		[]byte("Setext\n======\n\n> quote\n\n1. one\n2. two\n\n<div><p>html <b>block</b></p></div>\n\n    indented code"),
		[]byte("## \x00\n\n[link](http://x) ![img](y) <http://auto> `code` *em* **strong** \\*"),
		[]byte("<table><tr><td>a</td></tr></table>\n\n<!-- c -->\n\n<script>x</script>"),
	)
}

func FuzzParseHTML(f *testing.F) {
	fuzzParser(f, FormatHTML,
		[]byte("<h1>x</h1><ul><li>y<ul><li>z</li></ul></li></ul><table><tr><th>a</th><td>b</td></tr></table>"),
		[]byte("<html><head><title>t</title><style>s{}</style><script>x()</script></head><body><pre>  code\n  lines</pre><p>a<br>b&nbsp;c&#0;d</p></body></html>"),
		[]byte("<h7>not a heading</h7><h3>three</h3><blockquote><p>q</p></blockquote><ol><li></li></ol>"),
		[]byte("<p>unclosed <b>tags <i>everywhere"),
	)
}

func FuzzParsePDF(f *testing.F) {
	pdf, err := os.ReadFile("testdata/hello.pdf")
	require.NoError(f, err)
	fuzzParser(f, FormatPDF,
		pdf,
		pdf[:len(pdf)/2],
		[]byte("%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n"),
	)
}

// FuzzParseDOCX fuzzes the two parts the DOCX parser reads,
// word/document.xml and word/styles.xml (absent when empty), packed into
// a valid archive, so that mutations reach the XML walker rather than die
// in the zip reader (FuzzParse feeds it raw archives).
func FuzzParseDOCX(f *testing.F) {
	body := func(s string) []byte {
		return []byte(`<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document ` + wordNS + `><w:body>` + s + `</w:body></w:document>`)
	}
	f.Add(body(docxParagraph("Heading1", "h")+docxParagraph("", "p")+
		`<w:p><w:pPr><w:numPr><w:ilvl w:val="0"/><w:numId w:val="1"/></w:numPr></w:pPr><w:r><w:t>item</w:t></w:r></w:p>`+
		`<w:tbl><w:tr><w:tc><w:p><w:r><w:t>cell</w:t></w:r></w:p></w:tc></w:tr></w:tbl>`), []byte{})
	f.Add(body(docxParagraph("Custom", "styled")+`<w:p><w:r><w:t>a</w:t><w:tab/><w:t>b</w:t><w:br/><w:t>c</w:t></w:r></w:p>`),
		[]byte(`<w:styles `+wordNS+`><w:style w:styleId="Custom"><w:name w:val="heading 2"/></w:style>`+
			`<w:style w:styleId="Out"><w:pPr><w:outlineLvl w:val="3"/></w:pPr></w:style></w:styles>`))
	f.Add(body(docxParagraph("Title", "t")+`<w:sdt><w:sdtContent>`+docxParagraph("Out", "o")+`</w:sdtContent></w:sdt>`+
		`<mc:AlternateContent><mc:Choice>`+docxParagraph("", "x")+`</mc:Choice></mc:AlternateContent>`), []byte{})
	c := newTestChunker(f)
	f.Fuzz(func(t *testing.T, document, styles []byte) {
		files := [][2]string{{docxBodyPath, string(document)}}
		if len(styles) > 0 {
			files = append(files, [2]string{docxStylesPath, string(styles)})
		}
		checkParse(t, c, FormatDOCX, buildZip(t, files...))
	})
}

// TestParsersDropNUL: a NUL in a document never reaches its text (nor the
// chunks and headings built from it): PostgreSQL text cannot hold it.
func TestParsersDropNUL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		filename string
		data     []byte
		want     []string
	}{
		{"a.txt", []byte("al\x00pha\n\nbe\x00ta"), []string{"alpha", "beta"}},
		{"a.md", []byte("# He\x00ad\n\npa\x00ra\n\n- it\x00em\n\n```\nco\x00de\n```"), []string{"Head", "para", "- item", "code"}},
		// HTML decodes the reference &#0; as U+FFFD, as the HTML standard says.
		{"a.html", []byte("<h1>He\x00ad</h1><p>pa&#0;ra\x00</p><ul><li>it\x00em</li></ul>"), []string{"Head", "pa\uFFFDra", "- item"}},
	} {
		p, err := Parse(t.Context(), tc.filename, "", tc.data)
		require.NoError(t, err, tc.filename)
		require.NotContains(t, p.Text, "\x00", tc.filename)
		var texts []string
		for _, b := range p.Blocks {
			texts = append(texts, b.Text)
		}
		require.Equal(t, tc.want, texts, tc.filename)
	}
	// XML cannot carry U+0000 at all: such a DOCX is corrupt, not stored
	// with a NUL.
	_, err := Parse(t.Context(), "a.docx", "", buildDOCX(t, docxParagraph("", "a&#0;b")))
	require.ErrorIs(t, err, ErrCorrupt)
}
