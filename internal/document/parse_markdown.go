package document

import (
	"context"
	"strconv"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"
)

// parseMarkdown walks goldmark's syntax tree (CommonMark plus GitHub tables,
// strikethrough and task lists) and keeps its block structure.
func parseMarkdown(ctx context.Context, data []byte) ([]Block, error) {
	source := []byte(decodeText(data))
	md := goldmark.New(goldmark.WithExtensions(extension.Table, extension.Strikethrough, extension.TaskList))
	doc := md.Parser().Parse(text.NewReader(source))
	w := markdownWalker{source: source}
	if err := w.blocks(ctx, doc); err != nil {
		return nil, err
	}
	return w.out, nil
}

type markdownWalker struct {
	source []byte
	out    blockList
}

// blocks emits the block children of parent in order.
func (w *markdownWalker) blocks(ctx context.Context, parent ast.Node) error {
	for n := parent.FirstChild(); n != nil; n = n.NextSibling() {
		if err := ctx.Err(); err != nil {
			return err
		}
		switch n := n.(type) {
		case *ast.Heading:
			w.out.add(BlockHeading, n.Level, w.inline(n))
		case *ast.Paragraph, *ast.TextBlock:
			w.out.add(BlockParagraph, 0, w.inline(n))
		case *ast.List:
			var sb strings.Builder
			w.list(&sb, n, 0)
			w.out.add(BlockList, 0, sb.String())
		case *ast.FencedCodeBlock:
			w.out.add(BlockCode, 0, string(n.Lines().Value(w.source)))
		case *ast.CodeBlock:
			w.out.add(BlockCode, 0, string(n.Lines().Value(w.source)))
		case *ast.HTMLBlock:
			w.html(ctx, n)
		case *east.Table:
			w.out.add(BlockTable, 0, w.table(n))
		case *ast.ThematicBreak:
		default:
			if err := w.blocks(ctx, n); err != nil {
				return err
			}
		}
	}
	return nil
}

// list writes one line per item, nested lists indented, with the list's
// markers so the text reads like the source.
func (w *markdownWalker) list(sb *strings.Builder, list *ast.List, depth int) {
	number := list.Start
	for item := list.FirstChild(); item != nil; item = item.NextSibling() {
		marker := "-"
		if list.IsOrdered() {
			marker = strconv.Itoa(number) + "."
			number++
		}
		var parts []string
		var nested []*ast.List
		for c := item.FirstChild(); c != nil; c = c.NextSibling() {
			if l, ok := c.(*ast.List); ok {
				nested = append(nested, l)
				continue
			}
			if c.Kind() == ast.KindFencedCodeBlock || c.Kind() == ast.KindCodeBlock {
				parts = append(parts, string(c.Lines().Value(w.source)))
				continue
			}
			parts = append(parts, w.inline(c))
		}
		sb.WriteString(strings.Repeat("  ", depth) + marker + " " + cleanInline(strings.Join(parts, " ")) + "\n")
		for _, l := range nested {
			w.list(sb, l, depth+1)
		}
	}
}

func (w *markdownWalker) table(t *east.Table) string {
	var sb strings.Builder
	for row := t.FirstChild(); row != nil; row = row.NextSibling() {
		var cells []string
		for cell := row.FirstChild(); cell != nil; cell = cell.NextSibling() {
			cells = append(cells, cleanInline(w.inline(cell)))
		}
		sb.WriteString(strings.Join(cells, " | ") + "\n")
	}
	return sb.String()
}

// html extracts the text of a raw HTML block with the HTML parser.
func (w *markdownWalker) html(ctx context.Context, n *ast.HTMLBlock) {
	var sb strings.Builder
	lines := n.Lines()
	for i := range lines.Len() {
		seg := lines.At(i)
		sb.Write(seg.Value(w.source))
	}
	if n.HasClosure() {
		sb.Write(n.ClosureLine.Value(w.source))
	}
	blocks, err := parseHTML(ctx, []byte(sb.String()))
	if err != nil {
		return
	}
	w.out = append(w.out, blocks...)
}

// inline returns the text of n's inline descendants.
func (w *markdownWalker) inline(n ast.Node) string {
	var sb strings.Builder
	w.inlineTo(&sb, n)
	return sb.String()
}

func (w *markdownWalker) inlineTo(sb *strings.Builder, parent ast.Node) {
	for n := parent.FirstChild(); n != nil; n = n.NextSibling() {
		switch n := n.(type) {
		case *ast.Text:
			sb.Write(n.Value(w.source))
			if n.SoftLineBreak() || n.HardLineBreak() {
				sb.WriteByte(' ')
			}
		case *ast.String:
			sb.Write(n.Value)
		case *ast.AutoLink:
			sb.Write(n.Label(w.source))
		case *ast.RawHTML:
			// Inline tags carry no text of their own.
		default:
			w.inlineTo(sb, n)
		}
	}
}
