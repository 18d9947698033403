package document

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// parseHTML walks the parsed DOM. Block elements end the running paragraph;
// headings, lists, tables and pre get their own blocks; scripts, styles,
// navigation and other non-content elements are dropped.
func parseHTML(ctx context.Context, data []byte) ([]Block, error) {
	root, err := html.Parse(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	w := htmlWalker{}
	if err := w.walk(ctx, root); err != nil {
		return nil, err
	}
	w.flush()
	return w.out, nil
}

type htmlWalker struct {
	out  blockList
	para strings.Builder
}

func (w *htmlWalker) flush() {
	w.out.add(BlockParagraph, 0, w.para.String())
	w.para.Reset()
}

func (w *htmlWalker) walk(ctx context.Context, n *html.Node) error {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if err := ctx.Err(); err != nil {
			return err
		}
		switch c.Type {
		case html.TextNode:
			w.para.WriteString(c.Data)
			continue
		case html.ElementNode:
		default:
			if err := w.walk(ctx, c); err != nil {
				return err
			}
			continue
		}
		if htmlDropped(c.DataAtom) {
			continue
		}
		switch c.DataAtom {
		case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
			w.flush()
			level, _ := strconv.Atoi(c.Data[1:])
			w.out.add(BlockHeading, level, htmlText(c))
		case atom.Ul, atom.Ol:
			w.flush()
			var sb strings.Builder
			htmlList(&sb, c, 0)
			w.out.add(BlockList, 0, sb.String())
		case atom.Table:
			w.flush()
			w.out.add(BlockTable, 0, htmlTable(c))
		case atom.Pre:
			w.flush()
			w.out.add(BlockCode, 0, htmlText(c))
		case atom.Br:
			w.para.WriteByte(' ')
		default:
			block := htmlBlockLevel(c.DataAtom)
			if block {
				w.flush()
			}
			if err := w.walk(ctx, c); err != nil {
				return err
			}
			if block {
				w.flush()
			}
		}
	}
	return nil
}

// htmlList writes one line per item, nested lists indented.
func htmlList(sb *strings.Builder, list *html.Node, depth int) {
	number := 1
	if start, err := strconv.Atoi(htmlAttr(list, "start")); err == nil {
		number = start
	}
	for item := list.FirstChild; item != nil; item = item.NextSibling {
		if item.Type != html.ElementNode || item.DataAtom != atom.Li {
			continue
		}
		marker := "-"
		if list.DataAtom == atom.Ol {
			marker = strconv.Itoa(number) + "."
			number++
		}
		var text strings.Builder
		var nested []*html.Node
		for c := item.FirstChild; c != nil; c = c.NextSibling {
			if c.Type == html.ElementNode && (c.DataAtom == atom.Ul || c.DataAtom == atom.Ol) {
				nested = append(nested, c)
				continue
			}
			htmlTextTo(&text, c)
		}
		sb.WriteString(strings.Repeat("  ", depth) + marker + " " + cleanInline(text.String()) + "\n")
		for _, l := range nested {
			htmlList(sb, l, depth+1)
		}
	}
}

// htmlTable writes one line per row, cells separated by " | ".
func htmlTable(table *html.Node) string {
	var sb strings.Builder
	var rows func(n *html.Node)
	rows = func(n *html.Node) {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.Type != html.ElementNode {
				continue
			}
			if c.DataAtom != atom.Tr {
				rows(c)
				continue
			}
			var cells []string
			for cell := c.FirstChild; cell != nil; cell = cell.NextSibling {
				if cell.Type == html.ElementNode && (cell.DataAtom == atom.Td || cell.DataAtom == atom.Th) {
					cells = append(cells, cleanInline(htmlText(cell)))
				}
			}
			sb.WriteString(strings.Join(cells, " | ") + "\n")
		}
	}
	rows(table)
	return sb.String()
}

// htmlText returns the text under n, separating block-level children.
func htmlText(n *html.Node) string {
	var sb strings.Builder
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		htmlTextTo(&sb, c)
	}
	return sb.String()
}

func htmlTextTo(sb *strings.Builder, n *html.Node) {
	switch n.Type {
	case html.TextNode:
		sb.WriteString(n.Data)
		return
	case html.ElementNode:
		if htmlDropped(n.DataAtom) {
			return
		}
		if n.DataAtom == atom.Br {
			sb.WriteByte('\n')
			return
		}
	case html.CommentNode, html.DoctypeNode:
		return
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		htmlTextTo(sb, c)
	}
	if n.Type == html.ElementNode && htmlBlockLevel(n.DataAtom) {
		sb.WriteByte('\n')
	}
}

func htmlAttr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

// htmlDropped reports elements whose content is not document text.
func htmlDropped(a atom.Atom) bool {
	switch a {
	case atom.Script, atom.Style, atom.Nav, atom.Noscript, atom.Template, atom.Head,
		atom.Svg, atom.Math, atom.Iframe, atom.Object, atom.Embed, atom.Canvas,
		atom.Select, atom.Button, atom.Textarea, atom.Input:
		return true
	}
	return false
}

// htmlBlockLevel reports elements that break a paragraph.
func htmlBlockLevel(a atom.Atom) bool {
	switch a {
	case atom.P, atom.Div, atom.Section, atom.Article, atom.Main, atom.Header, atom.Footer,
		atom.Aside, atom.Blockquote, atom.Figure, atom.Figcaption, atom.Address, atom.Details,
		atom.Summary, atom.Dl, atom.Dt, atom.Dd, atom.Li, atom.Hr, atom.Fieldset, atom.Body,
		atom.Html, atom.Caption, atom.Tr, atom.Td, atom.Th, atom.Center:
		return true
	}
	return false
}
