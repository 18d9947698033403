// Package document holds documents, their parsing and chunking.
package document

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime"
	"net/http"
	"path"
	"strings"
	"unicode"
	"unicode/utf16"

	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/postgres"
)

// Format names a document format that Parse understands.
type Format string

// The formats Parse understands.
const (
	FormatText     Format = "text"
	FormatMarkdown Format = "markdown"
	FormatHTML     Format = "html"
	FormatPDF      Format = "pdf"
	FormatDOCX     Format = "docx"
)

// BlockKind is the structural role of a Block.
type BlockKind string

// The kinds of Block.
const (
	BlockHeading   BlockKind = "heading"
	BlockParagraph BlockKind = "paragraph"
	BlockList      BlockKind = "list"
	BlockCode      BlockKind = "code"
	BlockTable     BlockKind = "table"
)

// BlockSeparator joins the texts of consecutive blocks into Parsed.Text. The
// chunker's offsets rely on it, so both sides use JoinBlocks.
const BlockSeparator = "\n\n"

// maxDocxXMLBytes caps how much decompressed XML a DOCX may expand to, so a
// zip bomb costs at most this much work.
const maxDocxXMLBytes = 64 << 20

// ErrUnsupported reports a document whose format Parse does not handle. The
// wrapping error names the format or extension. Retrying cannot help.
var ErrUnsupported = errs.New(errs.Invalid, "unsupported document format")

// ErrCorrupt reports a document of a known format that cannot be parsed, or
// that holds no text. The wrapping error says why. Retrying cannot help.
var ErrCorrupt = errs.New(errs.Invalid, "document cannot be parsed")

// Block is one structural unit of a document, in document order. Level is
// the heading level (1 is the top) and zero for other kinds. Text is cleaned:
// valid UTF-8 without NULs; paragraphs and headings have their whitespace
// collapsed; lists and tables hold one item or row per line; code keeps its
// lines.
type Block struct {
	Kind  BlockKind
	Level int
	Text  string
}

// Parsed is the text of a document with its structure. Text is always
// JoinBlocks(Blocks), which chunk offsets index into.
type Parsed struct {
	Format Format
	Blocks []Block
	Text   string
}

// JoinBlocks returns the full text of blocks: their texts joined by
// BlockSeparator.
func JoinBlocks(blocks []Block) string {
	n := 0
	for _, b := range blocks {
		n += len(b.Text) + len(BlockSeparator)
	}
	var sb strings.Builder
	sb.Grow(n)
	for i, b := range blocks {
		if i > 0 {
			sb.WriteString(BlockSeparator)
		}
		sb.WriteString(b.Text)
	}
	return sb.String()
}

// parseFunc turns the bytes of one format into blocks. It may panic on
// hostile input; Parse recovers.
type parseFunc func(ctx context.Context, data []byte) ([]Block, error)

// Parse detects the format of a document (from mimeType, else the filename's
// extension, else its content) and extracts its text and structure.
//
// It returns an error wrapping ErrUnsupported for formats it does not handle,
// ErrCorrupt for input it cannot parse or that holds no text, and ctx.Err()
// when ctx ends first. Parsers run in a goroutine that checks ctx between
// pages and elements, so an abandoned parse stops soon after.
func Parse(ctx context.Context, filename, mimeType string, data []byte) (Parsed, error) {
	if err := ctx.Err(); err != nil {
		return Parsed{}, err
	}
	format, err := DetectFormat(filename, mimeType, data)
	if err != nil {
		return Parsed{}, err
	}
	return parseWith(ctx, format, parserFor(format), data)
}

// parseWith runs parse in a goroutine so that a parser stuck on hostile input
// cannot outlive ctx for the caller, and turns its panics into ErrCorrupt.
func parseWith(ctx context.Context, format Format, parse parseFunc, data []byte) (Parsed, error) {
	type result struct {
		blocks []Block
		err    error
	}
	done := make(chan result, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- result{err: fmt.Errorf("%w: %s parser panicked: %v", ErrCorrupt, format, r)}
			}
		}()
		blocks, err := parse(ctx, data)
		done <- result{blocks: blocks, err: err}
	}()

	var res result
	select {
	case <-ctx.Done():
		return Parsed{}, ctx.Err()
	case res = <-done:
	}
	if res.err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return Parsed{}, ctxErr
		}
		return Parsed{}, fmt.Errorf("parse %s: %w", format, res.err)
	}
	if len(res.blocks) == 0 {
		return Parsed{}, fmt.Errorf("parse %s: %w: no text found", format, ErrCorrupt)
	}
	return Parsed{Format: format, Blocks: res.blocks, Text: JoinBlocks(res.blocks)}, nil
}

func parserFor(format Format) parseFunc {
	switch format {
	case FormatMarkdown:
		return parseMarkdown
	case FormatHTML:
		return parseHTML
	case FormatPDF:
		return parsePDF
	case FormatDOCX:
		return parseDOCX
	default:
		return parseText
	}
}

// DetectFormat picks the format of a document: from mimeType when it names a
// known one, else from the filename's extension, else by sniffing data. It
// returns an error wrapping ErrUnsupported naming what it found otherwise.
func DetectFormat(filename, mimeType string, data []byte) (Format, error) {
	return DetectFormatAt(filename, mimeType, bytes.NewReader(data), int64(len(data)))
}

// DetectFormatAt is DetectFormat for content read at offsets (a spooled
// upload): sniffing reads its first 512 bytes and, for a zip, its
// directory.
func DetectFormatAt(filename, mimeType string, r io.ReaderAt, size int64) (Format, error) {
	mediaType := baseMediaType(mimeType)
	if f, ok := formatByMediaType(mediaType); ok {
		return f, nil
	}
	ext := fileExtension(filename)
	if f, ok := formatByExtension(ext); ok {
		return f, nil
	}
	sniffed, f, ok := sniffFormat(r, size)
	if ok {
		return f, nil
	}
	switch {
	case !isGenericMediaType(mediaType):
		return "", unsupportedError{mediaType}
	case ext != "":
		return "", unsupportedError{ext}
	default:
		return "", unsupportedError{sniffed}
	}
}

// unsupportedError is ErrUnsupported naming what was found (a media type
// or an extension) and the formats Parse reads, all of it the client's
// message (errs.MessageOf).
type unsupportedError struct{ found string }

func (e unsupportedError) Error() string {
	return ErrUnsupported.Message + ": " + e.found + " (supported: text, Markdown, HTML, PDF and DOCX)"
}

// Unwrap is the client's error: invalid_argument with the whole message.
func (e unsupportedError) Unwrap() error { return errs.New(ErrUnsupported.Code, e.Error()) }

// Is makes errors.Is(err, ErrUnsupported) hold.
func (e unsupportedError) Is(target error) bool { return target == ErrUnsupported } //nolint:errorlint // identity of the sentinel

// MediaType is the media type a document of the format is stored with
// when its upload names none or a generic one.
func (f Format) MediaType() string {
	switch f {
	case FormatText:
		return "text/plain"
	case FormatMarkdown:
		return "text/markdown"
	case FormatHTML:
		return "text/html"
	case FormatPDF:
		return "application/pdf"
	case FormatDOCX:
		return "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
	}
	return "application/octet-stream"
}

// storedMediaType is the media type a document is stored with: the one
// its upload declares, unless that is empty or generic
// (application/octet-stream), then its extension's format's type (else
// application/octet-stream).
func storedMediaType(declared, filename string) string {
	if !isGenericMediaType(baseMediaType(declared)) {
		return declared
	}
	f, _ := formatByExtension(fileExtension(filename))
	return f.MediaType()
}

// baseMediaType is a declared media type without its parameters, lower
// case ("" for none): application/octet-stream; x=y is
// application/octet-stream.
func baseMediaType(declared string) string {
	if mt, _, err := mime.ParseMediaType(declared); err == nil {
		return mt
	}
	return strings.ToLower(strings.TrimSpace(declared))
}

// NamedAsDocument reports whether the file at p (a slash-separated path)
// names a document by itself: its extension is one of a format an upload
// parses (Markdown, text, HTML, PDF, DOCX), or it has none (README,
// LICENSE, CHANGELOG: its content decides) and it is no program or build
// file: not executable, not under a bin/ directory, not one of the build
// and tool files named without an extension (Makefile, Dockerfile,
// Gemfile, ...); the conventional prose names (README, LICENSE, ...) are
// documents whatever their mode or directory. A connector syncing whole
// trees offers these by default.
func NamedAsDocument(p string, executable bool) bool {
	ext := fileExtension(p)
	if _, ok := formatByExtension(ext); ok {
		return true
	}
	if ext != "" {
		return false
	}
	dirs, name := path.Split(strings.ReplaceAll(p, "\\", "/"))
	if isProseName(name) {
		return true // a README committed executable, or under bin/, is still one
	}
	if executable {
		return false
	}
	for d := range strings.SplitSeq(dirs, "/") {
		if strings.EqualFold(d, "bin") {
			return false
		}
	}
	return !isBuildFileName(name)
}

// isProseName reports whether name (without an extension) is one of the
// conventional prose files of a repository, named as documents wherever
// they are and whatever their mode.
func isProseName(name string) bool {
	switch strings.ToLower(name) {
	case "readme", "license", "licence", "copying", "copyright", "notice", "changelog", "changes", "history", "news",
		"authors", "contributors", "contributing", "thanks", "credits", "maintainers", "patents":
		return true
	}
	return false
}

// isBuildFileName reports whether name (without an extension) is a build
// or tool file's: make, container, CI, Ruby, Vagrant, Bazel and the like.
func isBuildFileName(name string) bool {
	switch strings.ToLower(name) {
	case "makefile", "gnumakefile", "dockerfile", "containerfile", "jenkinsfile", "procfile", "gemfile", "rakefile",
		"vagrantfile", "brewfile", "podfile", "fastfile", "appfile", "guardfile", "capfile", "berksfile", "thorfile",
		"justfile", "tiltfile", "earthfile", "snakefile", "pipfile", "build", "workspace":
		return true
	}
	return false
}

// fileExtension is filename's extension, lower-cased ("" for none); a
// backslash separates directories too.
func fileExtension(filename string) string {
	return strings.ToLower(path.Ext(strings.ReplaceAll(filename, "\\", "/")))
}

func formatByMediaType(mediaType string) (Format, bool) {
	switch mediaType {
	case "text/plain":
		return FormatText, true
	case "text/markdown", "text/x-markdown":
		return FormatMarkdown, true
	case "text/html", "application/xhtml+xml":
		return FormatHTML, true
	case "application/pdf", "application/x-pdf":
		return FormatPDF, true
	case "application/vnd.openxmlformats-officedocument.wordprocessingml.document":
		return FormatDOCX, true
	}
	return "", false
}

func isGenericMediaType(mediaType string) bool {
	switch mediaType {
	case "", "application/octet-stream", "binary/octet-stream", "application/unknown":
		return true
	}
	return false
}

func formatByExtension(ext string) (Format, bool) {
	switch ext {
	case ".txt", ".text", ".log":
		return FormatText, true
	case ".md", ".markdown", ".mdown", ".mkd", ".mkdn":
		return FormatMarkdown, true
	case ".html", ".htm", ".xhtml":
		return FormatHTML, true
	case ".pdf":
		return FormatPDF, true
	case ".docx":
		return FormatDOCX, true
	}
	return "", false
}

// sniffFormat guesses the format from the content. It returns the sniffed
// media type (for the error message) and whether it is a supported format.
func sniffFormat(r io.ReaderAt, size int64) (string, Format, bool) {
	data := make([]byte, min(size, 512))
	n, _ := r.ReadAt(data, 0)
	data = data[:n]
	if bytes.HasPrefix(data, []byte("%PDF-")) {
		return "application/pdf", FormatPDF, true
	}
	if bytes.HasPrefix(data, []byte("PK\x03\x04")) {
		if zipHasFile(r, size, docxBodyPath) {
			return "application/zip", FormatDOCX, true
		}
		return "application/zip", "", false
	}
	if hasUTF16BOM(data) {
		return "text/plain", FormatText, true
	}
	sniffed := http.DetectContentType(data)
	mediaType, _, _ := mime.ParseMediaType(sniffed)
	switch mediaType {
	case "text/html":
		return mediaType, FormatHTML, true
	case "text/plain":
		return mediaType, FormatText, true
	}
	return mediaType, "", false
}

// parseText treats blank lines as paragraph breaks.
func parseText(ctx context.Context, data []byte) ([]Block, error) {
	var bl blockList
	for _, para := range paragraphs(decodeText(data)) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		bl.add(BlockParagraph, 0, para)
	}
	return bl, nil
}

// paragraphs splits text at blank lines.
func paragraphs(s string) []string {
	var out []string
	var cur strings.Builder
	for line := range strings.SplitSeq(strings.NewReplacer("\r\n", "\n", "\r", "\n").Replace(s), "\n") {
		if strings.TrimSpace(line) == "" {
			if cur.Len() > 0 {
				out = append(out, cur.String())
				cur.Reset()
			}
			continue
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}

// decodeText turns bytes into a string, honouring a UTF-16 byte order mark
// and dropping a UTF-8 one. Invalid UTF-8 is left to the block cleaner.
func decodeText(data []byte) string {
	if !hasUTF16BOM(data) {
		return string(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")))
	}
	bigEndian := data[0] == 0xFE
	units := make([]uint16, 0, len(data)/2)
	for i := 2; i+1 < len(data); i += 2 {
		if bigEndian {
			units = append(units, uint16(data[i])<<8|uint16(data[i+1]))
		} else {
			units = append(units, uint16(data[i+1])<<8|uint16(data[i]))
		}
	}
	return string(utf16.Decode(units))
}

func hasUTF16BOM(data []byte) bool {
	return len(data) >= 2 && (data[0] == 0xFE && data[1] == 0xFF || data[0] == 0xFF && data[1] == 0xFE)
}

// blockList collects blocks, cleaning their text and dropping empty ones.
type blockList []Block

func (l *blockList) add(kind BlockKind, level int, text string) {
	switch kind {
	case BlockCode:
		text = cleanCode(text)
	case BlockList, BlockTable:
		text = cleanLines(text)
	default:
		text = cleanInline(text)
	}
	if text == "" {
		return
	}
	if kind != BlockHeading {
		level = 0
	}
	*l = append(*l, Block{Kind: kind, Level: level, Text: text})
}

// sanitize makes s valid UTF-8 without NULs (PostgreSQL text rejects them),
// byte order marks or control characters other than tab and newline.
func sanitize(s string) string {
	s = postgres.Text(s)
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return strings.Map(func(r rune) rune {
		switch {
		case r == 0, r == '\uFEFF':
			return -1
		case r == '\t', r == '\n':
			return r
		case r == '\r':
			return '\n'
		case r < 0x20, r >= 0x7F && r < 0xA0:
			return ' '
		}
		return r
	}, s)
}

// cleanInline sanitises s and collapses all whitespace runs to one space.
func cleanInline(s string) string {
	return strings.Join(strings.Fields(sanitize(s)), " ")
}

// cleanLines cleans each line of s on its own, keeping its indentation (the
// nesting of list items), and drops empty lines.
func cleanLines(s string) string {
	var out []string
	for line := range strings.SplitSeq(sanitize(s), "\n") {
		indent := len(line) - len(strings.TrimLeft(line, " "))
		if line = strings.Join(strings.Fields(line), " "); line != "" {
			out = append(out, strings.Repeat(" ", min(indent, 16))+line)
		}
	}
	return strings.Join(out, "\n")
}

// cleanCode sanitises s keeping indentation, drops trailing spaces and
// leading and trailing blank lines.
func cleanCode(s string) string {
	lines := strings.Split(sanitize(s), "\n")
	for i, line := range lines {
		lines[i] = strings.TrimRightFunc(line, unicode.IsSpace)
	}
	return strings.Trim(strings.Join(lines, "\n"), "\n")
}
