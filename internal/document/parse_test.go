package document

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

const wordNS = `xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"`

// buildZip returns a zip archive holding files, in the order given.
func buildZip(t testing.TB, files ...[2]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range files {
		w, err := zw.Create(f[0])
		require.NoError(t, err)
		_, err = w.Write([]byte(f[1]))
		require.NoError(t, err)
	}
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

// buildDOCX returns a DOCX whose body holds the given WordprocessingML.
func buildDOCX(t testing.TB, body string, extra ...[2]string) []byte {
	t.Helper()
	doc := `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>` +
		`<w:document ` + wordNS + ` xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006"><w:body>` +
		body + `</w:body></w:document>`
	files := append([][2]string{
		{"[Content_Types].xml", `<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>`},
		{docxBodyPath, doc},
	}, extra...)
	return buildZip(t, files...)
}

func docxParagraph(style, text string) string {
	ppr := ""
	if style != "" {
		ppr = `<w:pPr><w:pStyle w:val="` + style + `"/></w:pPr>`
	}
	return `<w:p>` + ppr + `<w:r><w:t>` + text + `</w:t></w:r></w:p>`
}

func TestDetectFormat(t *testing.T) {
	t.Parallel()

	docx := buildDOCX(t, docxParagraph("", "x"))
	plainZip := buildZip(t, [2]string{"a.txt", "x"})
	tests := []struct {
		name     string
		filename string
		mimeType string
		data     string
		want     Format
		wantErr  string // substring of an ErrUnsupported error
	}{
		{name: "mime markdown", filename: "notes", mimeType: "text/markdown", want: FormatMarkdown},
		{name: "mime with parameters", mimeType: "text/html; charset=utf-8", want: FormatHTML},
		{name: "mime wins over extension", filename: "a.md", mimeType: "text/plain", want: FormatText},
		{name: "mime pdf", mimeType: "application/pdf", want: FormatPDF},
		{name: "mime docx", mimeType: "application/vnd.openxmlformats-officedocument.wordprocessingml.document", want: FormatDOCX},
		{name: "generic mime falls back to extension", filename: "a.MD", mimeType: "application/octet-stream", want: FormatMarkdown},
		{name: "extension html", filename: "dir/page.htm", want: FormatHTML},
		{name: "extension docx with windows path", filename: `C:\docs\report.DOCX`, want: FormatDOCX},
		{name: "extension text", filename: "a.txt", data: "\x00\x01binary", want: FormatText},
		{name: "sniff pdf", data: "%PDF-1.7\n...", want: FormatPDF},
		{name: "sniff docx", data: string(docx), want: FormatDOCX},
		{name: "sniff html", data: "<!DOCTYPE html><html><body>x</body></html>", want: FormatHTML},
		{name: "sniff text", data: "just some words", want: FormatText},
		{name: "sniff utf-16 text", data: "\xff\xfeh\x00i\x00", want: FormatText},
		{name: "empty is text", want: FormatText},
		{name: "unknown mime names it", filename: "a.doc", mimeType: "application/msword", data: "\xd0\xcf\x11\xe0", wantErr: "application/msword"},
		{name: "unknown extension names it", filename: "a.png", data: "\x89PNG\r\n\x1a\n\x00\x00", wantErr: ".png"},
		{name: "unknown content names it", data: "\x00\x01\x02\x03", wantErr: "application/octet-stream"},
		{name: "zip without word body", data: string(plainZip), wantErr: "application/zip"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := DetectFormat(tt.filename, tt.mimeType, []byte(tt.data))
			if tt.wantErr != "" {
				require.ErrorIs(t, err, ErrUnsupported)
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

// TestStoredMediaType: a declared media type is kept; none or a generic
// one becomes the extension's format's type, else application/octet-stream.
func TestStoredMediaType(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ declared, filename, want string }{
		{"", "notes.md", "text/markdown"},
		{"application/octet-stream", "Notes.MD", "text/markdown"},
		{" Application/Octet-Stream ", "a.txt", "text/plain"},
		{"binary/octet-stream", "page.htm", "text/html"},
		{"application/octet-stream; name=notes.md", "notes.md", "text/markdown"},
		{"application/unknown", `C:\docs\report.DOCX`, "application/vnd.openxmlformats-officedocument.wordprocessingml.document"},
		{"", "paper.pdf", "application/pdf"},
		{"", "image.png", "application/octet-stream"},
		{"", "README", "application/octet-stream"},
		{"application/octet-stream", "data.bin", "application/octet-stream"},
		{"text/plain", "a.md", "text/plain"},
		{"text/html; charset=utf-8", "a.txt", "text/html; charset=utf-8"},
	} {
		require.Equal(t, tt.want, storedMediaType(tt.declared, tt.filename), "%q %q", tt.declared, tt.filename)
	}
}

func TestParseText(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		data string
		want []string
	}{
		{name: "blank lines split paragraphs", data: "one\ntwo\n\n\nthree\n", want: []string{"one two", "three"}},
		{name: "whitespace collapsed", data: "  a \t b\u00a0 c  ", want: []string{"a b c"}},
		{name: "crlf and cr", data: "a\r\nb\r\n\r\nc\rd", want: []string{"a b", "c d"}},
		{name: "whitespace-only lines separate", data: "a\n   \t\nb", want: []string{"a", "b"}},
		{name: "nul and controls removed", data: "a\x00b\x01c\x7fd", want: []string{"ab c d"}},
		{name: "invalid utf-8 replaced", data: "caf\xe9 ok", want: []string{"caf\uFFFD ok"}},
		{name: "utf-8 bom dropped", data: "\xef\xbb\xbfhello", want: []string{"hello"}},
		{name: "utf-16le with bom", data: "\xff\xfeh\x00\xe9\x00\n\x00\n\x00x\x00", want: []string{"hé", "x"}},
		{name: "utf-16be with bom", data: "\xfe\xff\x00h\x00i", want: []string{"hi"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Parse(t.Context(), "a.txt", "", []byte(tt.data))
			require.NoError(t, err)
			require.Equal(t, FormatText, got.Format)
			var texts []string
			for _, b := range got.Blocks {
				require.Equal(t, BlockParagraph, b.Kind)
				texts = append(texts, b.Text)
			}
			require.Equal(t, tt.want, texts)
			require.Equal(t, strings.Join(tt.want, "\n\n"), got.Text)
		})
	}
}

func TestParseMarkdown(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		data string
		want []Block
	}{
		{
			name: "headings and paragraphs",
			data: "# Title\n\nSome *emphasis* and `code`\nwrapped.\n\nSetext\n------\n\n### Deep",
			want: []Block{
				{Kind: BlockHeading, Level: 1, Text: "Title"},
				{Kind: BlockParagraph, Text: "Some emphasis and code wrapped."},
				{Kind: BlockHeading, Level: 2, Text: "Setext"},
				{Kind: BlockHeading, Level: 3, Text: "Deep"},
			},
		},
		{
			name: "links images and autolinks keep their text",
			data: "See [the docs](http://x.test) ![a chart](c.png) <https://y.test>.",
			want: []Block{{Kind: BlockParagraph, Text: "See the docs a chart https://y.test."}},
		},
		{
			name: "lists nested and ordered",
			data: "- one\n- two\n  - inner\n\n3. three\n4. four\n",
			want: []Block{
				{Kind: BlockList, Text: "- one\n- two\n  - inner"},
				{Kind: BlockList, Text: "3. three\n4. four"},
			},
		},
		{
			name: "code blocks keep lines",
			data: "```go\nfunc f() {\n\treturn\n}\n```\n\n    indented\n      more\n",
			want: []Block{
				{Kind: BlockCode, Text: "func f() {\n\treturn\n}"},
				{Kind: BlockCode, Text: "indented\n  more"},
			},
		},
		{
			name: "table",
			data: "| a | b |\n|---|---|\n| 1 | **2** |\n",
			want: []Block{{Kind: BlockTable, Text: "a | b\n1 | 2"}},
		},
		{
			name: "blockquote and raw html",
			data: "> quoted\n> text\n\n<div>\n<p>raw <b>html</b></p><script>no()</script>\n</div>\n\n---\n\nafter",
			want: []Block{
				{Kind: BlockParagraph, Text: "quoted text"},
				{Kind: BlockParagraph, Text: "raw html"},
				{Kind: BlockParagraph, Text: "after"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Parse(t.Context(), "doc.md", "", []byte(tt.data))
			require.NoError(t, err)
			require.Equal(t, FormatMarkdown, got.Format)
			require.Equal(t, tt.want, got.Blocks)
			require.Equal(t, JoinBlocks(tt.want), got.Text)
		})
	}
}

func TestParseHTML(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		data string
		want []Block
	}{
		{
			name: "non-content dropped",
			data: `<html><head><title>T</title><style>p{}</style></head><body><nav><a>Home</a></nav>` +
				`<script>alert(1)</script><noscript>js</noscript><p>Kept &amp; <i>shown</i></p></body></html>`,
			want: []Block{{Kind: BlockParagraph, Text: "Kept & shown"}},
		},
		{
			name: "headings and block breaks",
			data: `<h1>Top</h1>loose <b>text</b><div>in div<br>broken</div><h3> Deep  one </h3><p>a</p><p>b</p>`,
			want: []Block{
				{Kind: BlockHeading, Level: 1, Text: "Top"},
				{Kind: BlockParagraph, Text: "loose text"},
				{Kind: BlockParagraph, Text: "in div broken"},
				{Kind: BlockHeading, Level: 3, Text: "Deep one"},
				{Kind: BlockParagraph, Text: "a"},
				{Kind: BlockParagraph, Text: "b"},
			},
		},
		{
			name: "lists",
			data: `<ul><li>a</li><li>b<ol start="2"><li>c</li><li>d</li></ol></li></ul>`,
			want: []Block{{Kind: BlockList, Text: "- a\n- b\n  2. c\n  3. d"}},
		},
		{
			name: "table and pre",
			data: `<table><thead><tr><th>k</th><th>v</th></tr></thead><tbody><tr><td>x</td><td><p>1</p></td></tr></tbody></table>` +
				"<pre>line 1\n  line 2\n</pre>",
			want: []Block{
				{Kind: BlockTable, Text: "k | v\nx | 1"},
				{Kind: BlockCode, Text: "line 1\n  line 2"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Parse(t.Context(), "page.html", "", []byte(tt.data))
			require.NoError(t, err)
			require.Equal(t, FormatHTML, got.Format)
			require.Equal(t, tt.want, got.Blocks)
		})
	}
}

func TestParseDOCX(t *testing.T) {
	t.Parallel()

	styles := [2]string{docxStylesPath, `<?xml version="1.0"?><w:styles ` + wordNS + `>` +
		`<w:style w:type="paragraph" w:styleId="berschrift2"><w:name w:val="heading 2"/></w:style>` +
		`<w:style w:type="paragraph" w:styleId="Chapter"><w:name w:val="Chapter"/><w:pPr><w:outlineLvl w:val="0"/></w:pPr></w:style>` +
		`</w:styles>`}
	tests := []struct {
		name string
		body string
		want []Block
	}{
		{
			name: "heading styles",
			body: docxParagraph("Title", "The Title") + docxParagraph("Heading1", "One") + docxParagraph("heading3", "Three") +
				docxParagraph("berschrift2", "Localised") + docxParagraph("Chapter", "Outlined") + docxParagraph("Normal", "Body"),
			want: []Block{
				{Kind: BlockHeading, Level: 1, Text: "The Title"},
				{Kind: BlockHeading, Level: 1, Text: "One"},
				{Kind: BlockHeading, Level: 3, Text: "Three"},
				{Kind: BlockHeading, Level: 2, Text: "Localised"},
				{Kind: BlockHeading, Level: 1, Text: "Outlined"},
				{Kind: BlockParagraph, Text: "Body"},
			},
		},
		{
			name: "runs tabs and breaks",
			body: `<w:p><w:pPr><w:tabs><w:tab w:val="left" w:pos="720"/></w:tabs></w:pPr>` +
				`<w:r><w:t xml:space="preserve">Hel</w:t></w:r><w:r><w:t>lo</w:t><w:tab/><w:t>world</w:t><w:br/><w:t>next</w:t></w:r>` +
				`<w:r><w:delText>deleted</w:delText><w:instrText>PAGE</w:instrText></w:r></w:p>` + `<w:p/>`,
			want: []Block{{Kind: BlockParagraph, Text: "Hello world next"}},
		},
		{
			name: "numbered paragraphs become one list",
			body: docxParagraph("", "Intro") +
				`<w:p><w:pPr><w:numPr><w:ilvl w:val="0"/><w:numId w:val="1"/></w:numPr></w:pPr><w:r><w:t>first</w:t></w:r></w:p>` +
				`<w:p><w:pPr><w:numPr><w:ilvl w:val="1"/><w:numId w:val="1"/></w:numPr></w:pPr><w:r><w:t>nested</w:t></w:r></w:p>` +
				docxParagraph("ListBullet", "styled") + docxParagraph("", "Outro"),
			want: []Block{
				{Kind: BlockParagraph, Text: "Intro"},
				{Kind: BlockList, Text: "- first\n  - nested\n- styled"},
				{Kind: BlockParagraph, Text: "Outro"},
			},
		},
		{
			name: "tables with nested table flattened",
			body: `<w:tbl><w:tr><w:tc>` + docxParagraph("", "a") + docxParagraph("", "a2") + `</w:tc><w:tc>` + docxParagraph("", "b") + `</w:tc></w:tr>` +
				`<w:tr><w:tc><w:tbl><w:tr><w:tc>` + docxParagraph("", "inner") + `</w:tc></w:tr></w:tbl></w:tc><w:tc>` + docxParagraph("", "d") + `</w:tc></w:tr></w:tbl>`,
			want: []Block{{Kind: BlockTable, Text: "a a2 | b\ninner | d"}},
		},
		{
			name: "alternate content read once",
			body: `<w:p><w:r><mc:AlternateContent><mc:Choice Requires="wps"><w:t>box</w:t></mc:Choice>` +
				`<mc:Fallback><w:t>box</w:t></mc:Fallback></mc:AlternateContent></w:r></w:p>`,
			want: []Block{{Kind: BlockParagraph, Text: "box"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Parse(t.Context(), "doc.docx", "", buildDOCX(t, tt.body, styles))
			require.NoError(t, err)
			require.Equal(t, FormatDOCX, got.Format)
			require.Equal(t, tt.want, got.Blocks)
		})
	}
}

func TestParsePDF(t *testing.T) {
	t.Parallel()

	data, err := os.ReadFile("testdata/hello.pdf")
	require.NoError(t, err)
	got, err := Parse(t.Context(), "upload", "", data)
	require.NoError(t, err)
	require.Equal(t, Parsed{
		Format: FormatPDF,
		Blocks: []Block{
			{Kind: BlockParagraph, Text: "Graphmill PDF fixture. The quick brown fox jumps over the lazy dog."},
			{Kind: BlockParagraph, Text: "Second page text."},
		},
		Text: "Graphmill PDF fixture. The quick brown fox jumps over the lazy dog.\n\nSecond page text.",
	}, got)
}

func TestParseErrors(t *testing.T) {
	t.Parallel()

	pdf, err := os.ReadFile("testdata/hello.pdf")
	require.NoError(t, err)
	tests := []struct {
		name     string
		filename string
		data     []byte
		want     error
		wantMsg  string
	}{
		{name: "truncated pdf", filename: "a.pdf", data: pdf[:len(pdf)/2], want: ErrCorrupt},
		{name: "pdf header then garbage", filename: "a.pdf", data: []byte("%PDF-1.4\n\x00\xff garbage\n%%EOF\n"), want: ErrCorrupt},
		{name: "pdf with broken xref", filename: "a.pdf", data: bytes.Replace(pdf, []byte("xref"), []byte("xreg"), 1), want: ErrCorrupt},
		{name: "random bytes docx", filename: "a.docx", data: []byte("PK\x03\x04 this is not really a zip \x00\x01\x02"), want: ErrCorrupt, wantMsg: "not a zip"},
		{name: "zip without body", filename: "a.docx", data: buildZip(t, [2]string{"word/other.xml", "<x/>"}), want: ErrCorrupt, wantMsg: "no word/document.xml"},
		{name: "docx with broken xml", filename: "a.docx", data: buildZip(t, [2]string{docxBodyPath, "<w:document><w:p>"}), want: ErrCorrupt},
		{name: "docx without text", filename: "a.docx", data: buildDOCX(t, "<w:p/>"), want: ErrCorrupt, wantMsg: "no text found"},
		{name: "empty text", filename: "a.txt", data: nil, want: ErrCorrupt, wantMsg: "no text found"},
		{name: "whitespace markdown", filename: "a.md", data: []byte(" \n\n\t\x00\n"), want: ErrCorrupt, wantMsg: "no text found"},
		{name: "html without text", filename: "a.html", data: []byte("<script>x()</script>"), want: ErrCorrupt, wantMsg: "no text found"},
		{name: "unknown binary", filename: "blob", data: []byte("\x00\x01\x02\x03\xff\xfe\xfd"), want: ErrUnsupported},
		{name: "image", filename: "a.png", data: []byte("\x89PNG\r\n\x1a\n"), want: ErrUnsupported, wantMsg: ".png"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse(t.Context(), tt.filename, "", tt.data)
			require.ErrorIs(t, err, tt.want)
			require.ErrorContains(t, err, tt.wantMsg)
		})
	}
}

func TestParseDOCXSizeCap(t *testing.T) {
	t.Parallel()

	// Compresses to a few kilobytes, expands past the cap.
	data := buildDOCX(t, docxParagraph("", strings.Repeat("a", 1<<20)))
	_, err := readDOCX(t.Context(), data, 1<<19)
	require.ErrorIs(t, err, ErrCorrupt)
	require.ErrorIs(t, err, errXMLTooLarge)

	blocks, err := readDOCX(t.Context(), data, 2<<20)
	require.NoError(t, err)
	require.Len(t, blocks, 1)
	require.Len(t, blocks[0].Text, 1<<20)
}

func TestParseDOCXZipBomb(t *testing.T) {
	t.Parallel()
	if testing.Short() || raceEnabled {
		t.Skip("expands 64 MiB")
	}

	data := buildDOCX(t, docxParagraph("", strings.Repeat("a", maxDocxXMLBytes+1)))
	require.Less(t, len(data), 1<<20)
	_, err := Parse(t.Context(), "bomb.docx", "", data)
	require.ErrorIs(t, err, ErrCorrupt)
	require.ErrorIs(t, err, errXMLTooLarge)
}

func TestParseWith(t *testing.T) {
	t.Parallel()

	t.Run("context ends while parsing", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(t.Context())
		release := make(chan struct{})
		defer close(release)
		started := make(chan struct{})
		go func() {
			<-started
			cancel()
		}()
		_, err := parseWith(ctx, FormatText, func(context.Context, []byte) ([]Block, error) {
			close(started)
			<-release
			return []Block{{Kind: BlockParagraph, Text: "late"}}, nil
		}, nil)
		require.ErrorIs(t, err, context.Canceled)
	})

	t.Run("parser error after cancellation is the context's", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := parseWith(ctx, FormatText, func(ctx context.Context, _ []byte) ([]Block, error) {
			return nil, ctx.Err()
		}, nil)
		require.ErrorIs(t, err, context.Canceled)
	})

	t.Run("panic becomes corrupt", func(t *testing.T) {
		t.Parallel()
		_, err := parseWith(t.Context(), FormatPDF, func(context.Context, []byte) ([]Block, error) {
			panic("bad xref")
		}, nil)
		require.ErrorIs(t, err, ErrCorrupt)
		require.ErrorContains(t, err, "bad xref")
	})

	t.Run("canceled before start", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithTimeout(t.Context(), time.Nanosecond)
		defer cancel()
		<-ctx.Done()
		_, err := Parse(ctx, "a.txt", "", []byte("text"))
		require.ErrorIs(t, err, context.DeadlineExceeded)
	})
}

func TestJoinBlocks(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name   string
		blocks []Block
		want   string
	}{
		{name: "none", want: ""},
		{name: "one", blocks: []Block{{Text: "a"}}, want: "a"},
		{name: "several", blocks: []Block{{Text: "a"}, {Text: "b c"}, {Text: "d"}}, want: "a\n\nb c\n\nd"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, JoinBlocks(tt.blocks))
		})
	}
}

func FuzzParse(f *testing.F) {
	pdf, err := os.ReadFile("testdata/hello.pdf")
	require.NoError(f, err)
	f.Add(uint8(0), []byte("plain\n\ntext"))
	f.Add(uint8(1), []byte("# h\n\n- a\n\n```\nc\n```\n| a |\n|---|\n| b |"))
	f.Add(uint8(2), []byte("<h1>x</h1><ul><li>y</li></ul><table><tr><td>z</td></tr></table>"))
	f.Add(uint8(3), pdf)
	f.Add(uint8(4), buildDOCX(f, docxParagraph("Heading1", "h")+docxParagraph("", "p")))
	f.Add(uint8(5), []byte("\x00\xff"))
	names := []string{"a.txt", "a.md", "a.html", "a.pdf", "a.docx", "a"}
	f.Fuzz(func(t *testing.T, kind uint8, data []byte) {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		got, err := Parse(ctx, names[int(kind)%len(names)], "", data)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnsupported) && !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("unexpected error class: %v", err)
			}
			return
		}
		require.NotEmpty(t, got.Blocks)
		require.Equal(t, JoinBlocks(got.Blocks), got.Text)
		require.True(t, utf8.ValidString(got.Text))
		require.NotContains(t, got.Text, "\x00")
		for _, b := range got.Blocks {
			require.NotEmpty(t, b.Text)
			require.Equal(t, strings.TrimRight(b.Text, " \t\n"), b.Text, "block has trailing space")
		}
	})
}

// TestNamedAsDocument: a file is named as a document by a format's
// extension, or by none when it is not a program or build file: not one
// of the build and tool files named without an extension, not under a
// bin/ directory, not executable. Prose files without an extension stay.
func TestNamedAsDocument(t *testing.T) {
	t.Parallel()
	for _, p := range []string{
		"README", "LICENSE", "NOTICE", "CHANGELOG", "AUTHORS", "CONTRIBUTING", "COPYING", "docs/INSTALL",
		"README.md", "docs/guide.txt", "site/page.html", "manual.pdf", "spec.docx", "bin/README.md", "tools/run.md",
	} {
		require.True(t, NamedAsDocument(p, false), p)
	}
	for _, p := range []string{
		"Makefile", "src/makefile", "GNUmakefile", "Dockerfile", "deploy/Dockerfile", "Containerfile", "Jenkinsfile", "Procfile",
		"Gemfile", "Rakefile", "Vagrantfile", "bin/setup", "scripts/bin/release", "BIN/run",
		"main.go", "logo.png", ".gitignore", "Dockerfile.dev",
	} {
		require.False(t, NamedAsDocument(p, false), p)
	}
	require.False(t, NamedAsDocument("scripts/deploy", true), "an executable without an extension is a program")
	require.True(t, NamedAsDocument("scripts/deploy", false))
	require.True(t, NamedAsDocument("docs/notes.md", true), "an executable Markdown file is still named as one")
}

// TestNamedAsDocumentProseNames: the conventional prose files without an
// extension (README, LICENSE, CHANGELOG, ...) are named as documents even
// when committed executable (a checkout on a file system without modes)
// or kept under a bin/ directory.
func TestNamedAsDocumentProseNames(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"README", "LICENSE", "COPYING", "NOTICE", "CHANGELOG", "AUTHORS", "CONTRIBUTING", "docs/Readme", "bin/README"} {
		require.True(t, NamedAsDocument(p, true), p)
		require.True(t, NamedAsDocument(p, false), p)
	}
	require.False(t, NamedAsDocument("bin/install", false))
	require.False(t, NamedAsDocument("install", true))
}
