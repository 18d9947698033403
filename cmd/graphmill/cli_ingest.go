package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/graphmill/graphmill/internal/client"
)

// Outcomes of one ingested file.
const (
	ingestUploaded  = "uploaded"  // a new document
	ingestUnchanged = "unchanged" // the project has a document with this content: not sent
	ingestDuplicate = "duplicate" // sent; the server found the same content (uploaded meanwhile)
	ingestFailed    = "failed"    // refused at upload, or (with --wait) parsing or extraction failed
)

// ingestResult is one file's line of graphmill ingest's output.
type ingestResult struct {
	Path       string `json:"path"`
	SHA256     string `json:"sha256"`
	Result     string `json:"result"`
	DocumentID string `json:"documentId,omitempty"`
	Error      string `json:"error,omitempty"`
	// With --wait: the document's status, chunks, embedded chunks and
	// its extraction jobs' statuses.
	Status         string   `json:"status,omitempty"`
	Chunks         int64    `json:"chunks,omitempty"`
	EmbeddedChunks int64    `json:"embeddedChunks,omitempty"`
	Extraction     []string `json:"extraction,omitempty"`
}

// ingestFile is a file to send.
type ingestFile struct {
	path string
	size int64
	hash string
}

func ingestCommand(c *cli) *cobra.Command {
	var wait bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "ingest PATH...",
		Short: "Upload files and folders (recursively) as documents, skipping files whose content the project has",
		Long: "Upload files and folders (recursively; names starting with a dot are skipped inside folders) as documents of the project. " +
			"A file whose SHA-256 is already a document's of the project is not sent. With --wait, follow the server's event stream " +
			"until every document is parsed, extracted and embedded.\n\n" +
			"Exit codes: 0 all done, 1 error, 2 bad command line or not logged in, 3 token refused, 4 a file failed (upload, parse or extraction).",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErr("ingest needs at least one file or folder")
			}
			return nil
		},
		RunE: func(_ *cobra.Command, paths []string) error {
			s, err := c.connect()
			if err != nil {
				return err
			}
			return s.ingest(paths, wait, timeout)
		},
	}
	cmd.Flags().BoolVar(&wait, "wait", false, "wait until the documents are parsed, extracted and embedded")
	cmd.Flags().DurationVar(&timeout, "timeout", 30*time.Minute, "with --wait: give up after this long")
	return cmd
}

func (s *session) ingest(paths []string, wait bool, timeout time.Duration) error {
	files, err := collectFiles(paths)
	if err != nil {
		return err
	}
	project, err := s.projectID()
	if err != nil {
		return err
	}
	docs, err := s.documents()
	if err != nil {
		return err
	}
	known := make(map[string]string, len(docs))
	for _, d := range docs {
		known[d.Sha256] = d.Id
	}

	ctx, cancel := context.WithTimeout(s.ctx, timeout)
	defer cancel()
	var changed <-chan struct{}
	if wait {
		// Subscribed before the uploads, so no event of theirs is missed.
		var stop func()
		if changed, stop, err = s.wakeOnEvents(ctx); err != nil {
			return err
		}
		defer stop()
	}

	results := make([]ingestResult, len(files))
	var total int64
	for _, f := range files {
		total += f.size
	}
	bar := s.bar(total, "upload", true)
	for i, f := range files {
		r := &results[i]
		r.Path, r.SHA256 = f.path, f.hash
		if id, ok := known[f.hash]; ok {
			r.Result, r.DocumentID = ingestUnchanged, id
			_ = bar.Add64(f.size)
			continue
		}
		doc, err := s.upload(ctx, project, f, bar)
		if err != nil {
			if _, auth := errors.AsType[*exitCodeError](err); auth || ctx.Err() != nil {
				return err
			}
			r.Result, r.Error = ingestFailed, err.Error()
			continue
		}
		r.Result, r.DocumentID = ingestUploaded, doc.Id
		if doc.Duplicate != nil && *doc.Duplicate {
			r.Result = ingestDuplicate
		}
		known[f.hash] = doc.Id
	}
	s.finish(bar, "upload", fmt.Sprintf("%d file(s)", len(files)))

	if wait {
		if err := s.follow(ctx, changed, results); err != nil {
			return err
		}
	}
	if err := s.emit(results, func() [][]string {
		rows := [][]string{{"PATH", "RESULT", "DOCUMENT", "STATUS", "CHUNKS", "EXTRACTION", "ERROR"}}
		for _, r := range results {
			rows = append(rows, []string{r.Path, r.Result, r.DocumentID, dash(r.Status), fmt.Sprint(r.Chunks), dash(strings.Join(r.Extraction, ",")), r.Error})
		}
		return rows
	}); err != nil {
		return err
	}
	for _, r := range results {
		if r.Result == ingestFailed {
			return withCode(exitFailed, fmt.Errorf("%s: %s", r.Path, r.Error))
		}
	}
	return nil
}

// dash shows an empty value as "-".
func dash(v string) string {
	if v == "" {
		return "-"
	}
	return v
}

// collectFiles lists the regular files of paths, folders walked
// recursively (their entries starting with a dot skipped), each with its
// SHA-256, in a stable order.
func collectFiles(paths []string) ([]ingestFile, error) {
	var files []ingestFile
	seen := map[string]bool{}
	add := func(path string) error {
		if seen[path] {
			return nil
		}
		seen[path] = true
		f, err := os.Open(path)
		if err != nil {
			return fmt.Errorf("read %s: %w", path, err)
		}
		defer f.Close()
		h := sha256.New()
		n, err := io.Copy(h, f)
		if err != nil {
			return fmt.Errorf("read %s: %w", path, err)
		}
		files = append(files, ingestFile{path: path, size: n, hash: hex.EncodeToString(h.Sum(nil))})
		return nil
	}
	for _, root := range paths {
		info, err := os.Stat(root)
		if err != nil {
			return nil, usageErr("%s: %w", root, err)
		}
		if !info.IsDir() {
			if err := add(root); err != nil {
				return nil, err
			}
			continue
		}
		err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if path != root && strings.HasPrefix(d.Name(), ".") {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if !d.Type().IsRegular() {
				return nil
			}
			return add(path)
		})
		if err != nil {
			return nil, fmt.Errorf("walk %s: %w", root, err)
		}
	}
	if len(files) == 0 {
		return nil, usageErr("no files in %s", strings.Join(paths, " "))
	}
	return files, nil
}

// documents lists all the project's documents, a page at a time.
func (s *session) documents() ([]client.Document, error) {
	var all []client.Document
	limit := int64(200)
	for offset := int64(0); ; offset += limit {
		page, err := call[client.ListDocument](s.api.ListDocuments(s.ctx, &client.ListDocumentsParams{Limit: &limit, Offset: &offset})) //nolint:bodyclose // call closes it
		if err != nil {
			return nil, err
		}
		all = append(all, deref(page.Data)...)
		if int64(len(deref(page.Data))) < limit {
			return all, nil
		}
	}
}

// upload sends one file as a multipart upload, streamed through the bar.
func (s *session) upload(ctx context.Context, project string, f ingestFile, bar *progressbar.ProgressBar) (client.Document, error) {
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		pw.CloseWithError(func() error {
			file, err := os.Open(f.path)
			if err != nil {
				return err
			}
			defer file.Close()
			part, err := mw.CreateFormFile("file", filepath.Base(f.path))
			if err != nil {
				return err
			}
			if _, err := io.Copy(io.MultiWriter(part, bar), file); err != nil {
				return err
			}
			return mw.Close()
		}())
	}()
	defer pr.Close()
	doc, err := call[client.Document](s.api.UploadDocumentWithBody(ctx, &client.UploadDocumentParams{}, mw.FormDataContentType(), pr, //nolint:bodyclose // call closes it
		func(_ context.Context, r *http.Request) error {
			r.Header.Set("X-Project-ID", project)
			return nil
		}))
	if err != nil {
		return doc, fmt.Errorf("upload %s: %w", f.path, err)
	}
	return doc, nil
}

// follow waits, woken by the event stream (and every two seconds in case
// an event is not visible to the token), until every uploaded document is
// parsed (or failed), its extraction jobs are final and its chunks are
// embedded, showing a bar per phase; it fills the results' statuses.
func (s *session) follow(ctx context.Context, changed <-chan struct{}, results []ingestResult) error {
	ids := map[string]*ingestResult{}
	for i := range results {
		if results[i].DocumentID != "" {
			ids[results[i].DocumentID] = &results[i]
		}
	}
	phases := []string{"parse", "extract", "embed"}
	phase := 0
	bar := s.bar(int64(len(ids)), phases[0], false)
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	for {
		st, err := s.ingestState(ids)
		if err != nil {
			return err
		}
		for phase < len(phases) {
			done, total := st.progress(phases[phase])
			bar.ChangeMax64(max(total, 1))
			_ = bar.Set64(done)
			if done < total {
				break
			}
			s.finish(bar, phases[phase], fmt.Sprintf("%d/%d", done, total))
			phase++
			if phase < len(phases) {
				bar = s.bar(1, phases[phase], false)
			}
		}
		if phase == len(phases) {
			return nil
		}
		select {
		case <-ctx.Done():
			_ = bar.Exit()
			return fmt.Errorf("waiting for the %s phase: %w", phases[phase], ctx.Err())
		case <-changed:
		case <-tick.C:
		}
	}
}

// ingestProgress is what the ingested documents have reached.
type ingestProgress struct {
	parsed, docs     int64 // documents parsed or failed, documents
	embedded, chunks int64 // chunks embedded, chunks of the parsed documents
	jobsDone, jobs   int64 // final extraction jobs, extraction jobs
}

func (p ingestProgress) progress(phase string) (done, total int64) {
	switch phase {
	case "parse":
		return p.parsed, p.docs
	case "extract":
		return p.jobsDone, p.jobs
	}
	return p.embedded, p.chunks
}

// ingestState reads the documents and their extraction jobs and records
// them in their results.
func (s *session) ingestState(ids map[string]*ingestResult) (ingestProgress, error) {
	p := ingestProgress{docs: int64(len(ids))}
	docs, err := s.documents()
	if err != nil {
		return p, err
	}
	allParsed := true
	for _, d := range docs {
		r, ok := ids[d.Id]
		if !ok {
			continue
		}
		r.Status, r.Chunks, r.EmbeddedChunks = string(d.Status), d.ChunkCount, d.EmbeddedChunks
		switch d.Status {
		case client.DocumentStatusParsed:
			p.parsed++
			p.chunks += d.ChunkCount
			p.embedded += min(d.EmbeddedChunks, d.ChunkCount)
		case client.DocumentStatusFailed:
			p.parsed++
			r.Result, r.Error = ingestFailed, "parsing failed: "+str(d.Error)
		default:
			allParsed = false
		}
	}
	if !allParsed {
		// Extraction jobs are queued with the parse: count them once all are.
		p.jobs = 1
		return p, nil
	}
	jobs, err := s.extractionJobs("")
	if err != nil {
		return p, err
	}
	for _, r := range ids {
		r.Extraction = nil
	}
	for _, j := range jobs {
		r, ok := ids[str(j.DocumentId)]
		if !ok {
			continue
		}
		p.jobs++
		r.Extraction = append(r.Extraction, string(j.Status))
		switch j.Status {
		case client.ExtractionJobStatusFailed:
			p.jobsDone++
			r.Result, r.Error = ingestFailed, "extraction failed: "+str(j.ErrorMsg)
		case client.ExtractionJobStatusCompleted, client.ExtractionJobStatusCancelled, client.ExtractionJobStatusRequiresReview:
			p.jobsDone++
		}
	}
	for _, r := range ids {
		slices.Sort(r.Extraction)
	}
	return p, nil
}

// extractionJobs lists the project's extraction jobs (of a status, when
// given), a page at a time.
func (s *session) extractionJobs(status string) ([]client.ExtractionJob, error) {
	project, err := s.projectID()
	if err != nil {
		return nil, err
	}
	var all []client.ExtractionJob
	limit := int64(100) // the route's most
	params := client.ListExtractionJobsParams{Limit: &limit}
	if status != "" {
		params.Status = &status
	}
	for offset := int64(0); ; offset += limit {
		params.Offset = &offset
		page, err := call[client.ListJob](s.api.ListExtractionJobs(s.ctx, project, &params)) //nolint:bodyclose // call closes it
		if err != nil {
			return nil, err
		}
		all = append(all, deref(page.Data)...)
		if int64(len(deref(page.Data))) < limit {
			return all, nil
		}
	}
}

// bar is a progress bar on the error stream, drawn only at a terminal
// (and not with --json).
func (s *session) bar(total int64, phase string, bytes bool) *progressbar.ProgressBar {
	return progressbar.NewOptions64(max(total, 1),
		progressbar.OptionSetWriter(s.stderr),
		progressbar.OptionSetVisibility(!s.json && isTerminal(s.stderr)),
		progressbar.OptionSetDescription(fmt.Sprintf("%-8s", phase)),
		progressbar.OptionShowBytes(bytes),
		progressbar.OptionShowCount(),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100*time.Millisecond),
	)
}

// finish completes a phase's bar; without a terminal it writes the
// phase's line instead.
func (s *session) finish(bar *progressbar.ProgressBar, phase, summary string) {
	if !s.json && isTerminal(s.stderr) {
		_ = bar.Finish()
		fmt.Fprintln(s.stderr)
		return
	}
	fmt.Fprintf(s.stderr, "%s: %s\n", phase, summary)
}
