package document

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Parts of a DOCX package that Parse reads.
const (
	docxBodyPath   = "word/document.xml"
	docxStylesPath = "word/styles.xml"
)

// errXMLTooLarge stops reading a DOCX part that decompresses past the cap.
var errXMLTooLarge = errors.New("decompressed xml over size limit")

// parseDOCX reads word/document.xml: paragraphs (w:p) of runs (w:t, w:tab,
// w:br), heading styles (Heading1..9, Title, or any style named so or with
// an outline level in word/styles.xml), numbered paragraphs as lists and
// tables. Decompressed XML is capped at maxDocxXMLBytes in total.
func parseDOCX(ctx context.Context, data []byte) ([]Block, error) {
	return readDOCX(ctx, data, maxDocxXMLBytes)
}

// readDOCX is parseDOCX with the cap on decompressed XML as a parameter.
func readDOCX(ctx context.Context, data []byte, maxXMLBytes int64) ([]Block, error) {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, fmt.Errorf("%w: not a zip archive: %w", ErrCorrupt, err)
	}
	budget := &limitedReader{left: maxXMLBytes}
	styles := map[string]int{}
	if f := zipFile(zr, docxStylesPath); f != nil {
		if styles, err = docxHeadingStyles(f, budget); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrCorrupt, docxStylesPath, err)
		}
	}
	f := zipFile(zr, docxBodyPath)
	if f == nil {
		return nil, fmt.Errorf("%w: no %s in archive", ErrCorrupt, docxBodyPath)
	}
	rc, err := f.Open()
	if err != nil {
		return nil, fmt.Errorf("%w: open %s: %w", ErrCorrupt, docxBodyPath, err)
	}
	defer rc.Close()
	budget.r = rc
	w := docxWalker{styles: styles}
	if err := w.walk(ctx, xml.NewDecoder(budget)); err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %s: %w", ErrCorrupt, docxBodyPath, err)
	}
	return w.out, nil
}

func zipFile(zr *zip.Reader, name string) *zip.File {
	for _, f := range zr.File {
		if f.Name == name {
			return f
		}
	}
	return nil
}

func zipHasFile(r io.ReaderAt, size int64, name string) bool {
	zr, err := zip.NewReader(r, size)
	return err == nil && zipFile(zr, name) != nil
}

// limitedReader fails once more than left bytes have been read, so an
// oversized part is an error rather than a silently truncated document.
type limitedReader struct {
	r    io.Reader
	left int64
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.left <= 0 {
		return 0, errXMLTooLarge
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
}

// docxHeadingStyles maps style ids to heading levels, from the style's name
// ("heading 1", "Title": locale independent, unlike ids) or outline level.
func docxHeadingStyles(f *zip.File, budget *limitedReader) (map[string]int, error) {
	rc, err := f.Open()
	if err != nil {
		return nil, fmt.Errorf("open: %w", err)
	}
	defer rc.Close()
	budget.r = rc
	d := xml.NewDecoder(budget)
	levels := map[string]int{}
	id := ""
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			return levels, nil
		}
		if err != nil {
			return nil, err
		}
		start, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		switch start.Name.Local {
		case "style":
			id = xmlAttr(start, "styleId")
		case "name":
			if level := docxStyleLevel(xmlAttr(start, "val")); level > 0 && id != "" {
				levels[id] = level
			}
		case "outlineLvl":
			if lvl, err := strconv.Atoi(xmlAttr(start, "val")); err == nil && lvl >= 0 && lvl < 9 && id != "" {
				if _, named := levels[id]; !named {
					levels[id] = lvl + 1
				}
			}
		}
	}
}

// docxStyleLevel returns the heading level a style id or name stands for:
// "Heading3" or "heading 3" is 3, "Title" is 1, anything else 0.
func docxStyleLevel(style string) int {
	s := strings.ToLower(strings.ReplaceAll(style, " ", ""))
	if s == "title" {
		return 1
	}
	if rest, ok := strings.CutPrefix(s, "heading"); ok && len(rest) == 1 && rest[0] >= '1' && rest[0] <= '9' {
		return int(rest[0] - '0')
	}
	return 0
}

func xmlAttr(e xml.StartElement, local string) string {
	for _, a := range e.Attr {
		if a.Name.Local == local {
			return a.Value
		}
	}
	return ""
}

// docxPara is a paragraph being read. Paragraphs nest (text boxes inside a
// run), so the walker keeps a stack of them.
type docxPara struct {
	text      strings.Builder
	level     int
	list      bool
	listLevel int
}

type docxWalker struct {
	styles map[string]int
	out    blockList

	paras  []*docxPara
	inRun  int
	inText bool
	skip   int // depth inside mc:Fallback, which repeats mc:Choice

	tableDepth int
	rows       []string
	cells      []string
	cell       strings.Builder
	listItems  strings.Builder
}

func (w *docxWalker) walk(ctx context.Context, d *xml.Decoder) error {
	for n := 0; ; n++ {
		if n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			w.flushList()
			return nil
		}
		if err != nil {
			return err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			w.start(t)
		case xml.EndElement:
			w.end(t)
		case xml.CharData:
			if w.inText && w.skip == 0 && len(w.paras) > 0 {
				w.paras[len(w.paras)-1].text.Write(t)
			}
		}
	}
}

func (w *docxWalker) start(e xml.StartElement) {
	if e.Name.Local == "Fallback" || w.skip > 0 {
		w.skip++
		return
	}
	p := w.para()
	switch e.Name.Local {
	case "p":
		w.paras = append(w.paras, &docxPara{})
	case "r":
		w.inRun++
	case "t":
		w.inText = w.inRun > 0
	case "tab":
		if w.inRun > 0 && p != nil {
			p.text.WriteByte('\t')
		}
	case "br", "cr":
		if w.inRun > 0 && p != nil {
			p.text.WriteByte('\n')
		}
	case "pStyle":
		if p != nil {
			style := xmlAttr(e, "val")
			if level := w.styles[style]; level > 0 {
				p.level = level
			} else if level := docxStyleLevel(style); level > 0 {
				p.level = level
			} else if strings.HasPrefix(strings.ToLower(style), "list") {
				p.list = true
			}
		}
	case "outlineLvl":
		if lvl, err := strconv.Atoi(xmlAttr(e, "val")); err == nil && lvl >= 0 && lvl < 9 && p != nil {
			p.level = lvl + 1
		}
	case "numPr":
		if p != nil {
			p.list = true
		}
	case "ilvl":
		if lvl, err := strconv.Atoi(xmlAttr(e, "val")); err == nil && lvl >= 0 && lvl < 9 && p != nil {
			p.listLevel = lvl
		}
	case "tbl":
		w.tableDepth++
		if w.tableDepth == 1 {
			w.flushList()
			w.rows = nil
		}
	case "tr":
		if w.tableDepth == 1 {
			w.cells = nil
		}
	case "tc":
		if w.tableDepth == 1 {
			w.cell.Reset()
		}
	}
}

func (w *docxWalker) end(e xml.EndElement) {
	if w.skip > 0 {
		w.skip--
		return
	}
	switch e.Name.Local {
	case "p":
		if len(w.paras) > 0 {
			p := w.paras[len(w.paras)-1]
			w.paras = w.paras[:len(w.paras)-1]
			w.emit(p)
		}
	case "r":
		w.inRun = max(0, w.inRun-1)
	case "t":
		w.inText = false
	case "tbl":
		if w.tableDepth == 1 {
			w.out.add(BlockTable, 0, strings.Join(w.rows, "\n"))
		}
		w.tableDepth = max(0, w.tableDepth-1)
	case "tr":
		if w.tableDepth == 1 {
			w.rows = append(w.rows, strings.Join(w.cells, " | "))
		}
	case "tc":
		if w.tableDepth == 1 {
			w.cells = append(w.cells, cleanInline(w.cell.String()))
		}
	}
}

func (w *docxWalker) para() *docxPara {
	if len(w.paras) == 0 {
		return nil
	}
	return w.paras[len(w.paras)-1]
}

// emit places a finished paragraph: into the current table cell, the
// pending list, or the output.
func (w *docxWalker) emit(p *docxPara) {
	text := cleanInline(p.text.String())
	switch {
	case text == "":
	case w.tableDepth > 0:
		if w.cell.Len() > 0 {
			w.cell.WriteByte(' ')
		}
		w.cell.WriteString(text)
	case p.level > 0:
		w.flushList()
		w.out.add(BlockHeading, p.level, text)
	case p.list:
		w.listItems.WriteString(strings.Repeat("  ", p.listLevel) + "- " + text + "\n")
	default:
		w.flushList()
		w.out.add(BlockParagraph, 0, text)
	}
}

func (w *docxWalker) flushList() {
	if w.listItems.Len() > 0 {
		w.out.add(BlockList, 0, w.listItems.String())
		w.listItems.Reset()
	}
}
