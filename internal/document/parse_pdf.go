package document

import (
	"bytes"
	"context"
	"fmt"

	"github.com/ledongthuc/pdf"
)

// maxPDFPages bounds the page loop: the page count comes from the file and a
// corrupt one could claim billions.
const maxPDFPages = 100_000

// parsePDF extracts the text of each page; blank lines within a page separate
// paragraphs. The PDF library panics on some malformed input; Parse recovers.
func parsePDF(ctx context.Context, data []byte) ([]Block, error) {
	r, err := pdf.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	pages := min(r.NumPage(), maxPDFPages)
	var bl blockList
	for i := 1; i <= pages; i++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		page := r.Page(i)
		if page.V.IsNull() {
			continue
		}
		text, err := page.GetPlainText(nil)
		if err != nil {
			return nil, fmt.Errorf("%w: page %d: %w", ErrCorrupt, i, err)
		}
		for _, para := range paragraphs(text) {
			bl.add(BlockParagraph, 0, para)
		}
	}
	return bl, nil
}
