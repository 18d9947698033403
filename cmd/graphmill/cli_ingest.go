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
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/graphmill/graphmill/internal/client"
	"github.com/graphmill/graphmill/internal/document"
)

// Outcomes of one ingested file.
const (
	ingestUploaded  = "uploaded"  // a new document
	ingestUnchanged = "unchanged" // the project has a document with this content: not sent
	ingestDuplicate = "duplicate" // sent; the server found the same content (uploaded meanwhile)
	ingestFailed    = "failed"    // refused at upload, or (with --wait) parsing, extraction or embedding failed
	ingestPending   = "pending"   // not sent: the command ended (its timeout) before
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

	created time.Time // the document's creation, as the server answered the upload
	// embedEnded: the project's embedding queue was found idle after the
	// document was parsed: its chunks not embedded by then never will be.
	embedEnded bool
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
		Args: argCount(1, -1, "ingest needs at least one file or folder"),
		RunE: withSession(c.connect, func(s *session, paths []string) error {
			return s.ingest(paths, wait, timeout)
		}),
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
	known := make(map[string]client.Document, len(docs))
	for _, d := range docs {
		known[d.Sha256] = d
	}

	ctx, cancel := context.WithTimeout(s.ctx, timeout)
	defer cancel()
	var changed <-chan struct{}
	phases := []string{phaseUpload}
	if wait {
		// Subscribed before the uploads, so no event of theirs is missed.
		var stop func()
		if changed, stop, err = s.wakeOnEvents(ctx); err != nil {
			return err
		}
		defer stop()
		phases = append(phases, phaseParse, phaseExtract, phaseEmbed)
	}

	results := make([]ingestResult, len(files))
	var total int64
	for i, f := range files {
		total += f.size
		// A file the uploads do not reach before a timeout stays pending.
		results[i].Path, results[i].SHA256, results[i].Result = f.path, f.hash, ingestPending
	}
	// The uploads run beside the loop that draws the bars and follows the
	// documents already sent; a result is the loop's once its index is
	// received.
	var sent atomic.Int64
	uploaded := make(chan int, len(files))
	upErr := make(chan error, 1)
	go func() {
		defer close(uploaded)
		upErr <- s.uploadAll(ctx, project, files, known, results, &sent, uploaded)
	}()

	bars := s.newPhaseBars(phases)
	defer bars.close()
	f := &follower{s: s, results: results}
	redraw := time.NewTicker(100 * time.Millisecond)
	defer redraw.Stop()
	poll := time.NewTicker(2 * time.Second)
	defer poll.Stop()
	uploading, dirty := true, false
	var lastRead time.Time
	// cut is the timeout (or interruption) that ends the wait early: the
	// results gathered so far are printed, then it is the command's error.
	var cut error
	for {
		select {
		case i, ok := <-uploaded:
			if !ok {
				if err := <-upErr; err != nil && ctx.Err() == nil {
					return err
				}
				uploading, uploaded = false, nil
			} else if wait && results[i].DocumentID != "" && results[i].Status == "" {
				// Sent documents, and unchanged ones whose parse is under
				// way (an earlier, interrupted run sent them); an unchanged
				// document already parsed or failed has its status.
				f.add(i)
			}
			dirty = true
		case <-changed:
			dirty = true
		case <-poll.C:
			dirty = true
		case <-redraw.C:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			cut = fmt.Errorf("ingest: %w", ctx.Err())
			break
		}
		if wait && dirty && (time.Since(lastRead) > 500*time.Millisecond || !uploading) {
			if err := f.read(ctx); err != nil {
				if ctx.Err() == nil {
					return err
				}
				continue
			}
			dirty, lastRead = false, time.Now()
		}
		bars.set(phaseUpload, sent.Load(), total, !uploading, fmt.Sprintf("%d file(s)", len(files)))
		if wait {
			f.show(bars, !uploading)
		}
		bars.draw()
		if bars.complete() {
			break
		}
	}
	bars.close()
	if uploaded != nil {
		// Cut short: the uploads stop with the context; their results are
		// the table's once they have.
		for range uploaded {
		}
		if err := <-upErr; err != nil && ctx.Err() == nil {
			return err
		}
	}

	if err := s.emit(results, func() [][]string {
		rows := [][]string{{"PATH", "RESULT", "DOCUMENT", "STATUS", "CHUNKS", "EXTRACTION", "ERROR"}}
		for _, r := range results {
			rows = append(rows, []string{r.Path, r.Result, dash(r.DocumentID), dash(r.Status), fmt.Sprint(r.Chunks), dash(strings.Join(r.Extraction, ",")), r.Error})
		}
		return rows
	}); err != nil {
		return err
	}
	if cut != nil {
		return cut
	}
	for _, r := range results {
		if r.Result == ingestFailed {
			return withCode(exitFailed, fmt.Errorf("%s: %s", r.Path, r.Error))
		}
	}
	return nil
}

// uploadAll sends the files whose content the project lacks, filling
// their results, counting the bytes read in sent (those of unchanged
// files too) and giving each result's index on done once it is filled.
// It stops at a refused token or the context's end; any other failure is
// the file's result.
func (s *session) uploadAll(ctx context.Context, project string, files []ingestFile, known map[string]client.Document,
	results []ingestResult, sent *atomic.Int64, done chan<- int,
) error {
	for i, f := range files {
		r := &results[i]
		r.Path, r.SHA256 = f.path, f.hash
		if d, ok := known[f.hash]; ok {
			r.Result, r.DocumentID, r.created = ingestUnchanged, d.Id, d.CreatedAt
			switch d.Status {
			case client.DocumentStatusFailed:
				// Not sent again (the content is the same), but not a
				// success either: its parsing failed.
				r.Result, r.Status, r.Error = ingestFailed, string(d.Status), "unchanged, and its parsing failed: "+str(d.Error)
			case client.DocumentStatusParsed:
				r.Status, r.Chunks, r.EmbeddedChunks = string(d.Status), d.ChunkCount, d.EmbeddedChunks
			}
			sent.Add(f.size)
			done <- i
			continue
		}
		doc, err := s.upload(ctx, project, f, counter{sent})
		if err != nil {
			if _, auth := errors.AsType[*exitCodeError](err); auth || ctx.Err() != nil {
				return err
			}
			r.Result, r.Error = ingestFailed, err.Error()
			done <- i
			continue
		}
		r.Result, r.DocumentID, r.created = ingestUploaded, doc.Id, doc.CreatedAt
		if doc.Duplicate != nil && *doc.Duplicate {
			r.Result = ingestDuplicate
		}
		known[f.hash] = doc
		done <- i
	}
	return nil
}

// counter is a writer that counts the bytes written to it.
type counter struct{ n *atomic.Int64 }

func (c counter) Write(b []byte) (int, error) {
	c.n.Add(int64(len(b)))
	return len(b), nil
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
	return listAll(200, func(limit, offset *int64) (*[]client.Document, error) {
		page, err := call[client.ListDocument](s.api.ListDocuments(s.ctx, &client.ListDocumentsParams{Limit: limit, Offset: offset})) //nolint:bodyclose // call closes it
		return page.Data, err
	})
}

// upload sends one file as a multipart upload, its bytes counted by
// progress as they are read.
func (s *session) upload(ctx context.Context, project string, f ingestFile, progress io.Writer) (client.Document, error) {
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
			if _, err := io.Copy(io.MultiWriter(part, progress), file); err != nil {
				return err
			}
			return mw.Close()
		}())
	}()
	defer pr.Close()
	// The file is sent without the request timeout (its size is not
	// foreseen); the answer must come within it.
	doc, err := call[client.Document](s.api.UploadDocumentWithBody(withLimit(ctx, limitAnswer), &client.UploadDocumentParams{}, mw.FormDataContentType(), pr, //nolint:bodyclose // call closes it
		func(_ context.Context, r *http.Request) error {
			r.Header.Set("X-Project-ID", project)
			return nil
		}))
	if err != nil {
		return doc, fmt.Errorf("upload %s: %w", f.path, err)
	}
	return doc, nil
}

// follower reads, by id, the documents ingest sent and their extraction
// jobs, until every one is parsed (or failed), its chunks embedded and its
// extraction jobs final.
type follower struct {
	s       *session
	results []ingestResult
	follow  []int                           // the results followed (uploaded or duplicate documents)
	since   time.Time                       // the oldest followed document's creation: their jobs are newer
	jobs    map[string]client.ExtractionJob // the followed documents' extraction jobs by id
	// extracted: the jobs were read after every followed document was
	// parsed, and all are final.
	extracted bool
	// queueRead is when the project's job counts were last read;
	// noCounts: the token may not read them (GET /api/metrics/jobs needs
	// admin:read), so the embeddings are waited for until the timeout.
	queueRead time.Time
	noCounts  bool
}

// add follows results[i]'s document.
func (f *follower) add(i int) {
	f.follow = append(f.follow, i)
	f.extracted = false
	if c := f.results[i].created; f.since.IsZero() || c.Before(f.since) {
		f.since = c
	}
}

// settled tells whether a result's document needs no more reading.
func settled(r *ingestResult) bool {
	return r.Status == string(client.DocumentStatusFailed) || (r.Status == string(client.DocumentStatusParsed) && embedSettled(r))
}

// embedSettled tells whether a parsed document's chunks are all embedded,
// or never will be.
func embedSettled(r *ingestResult) bool { return r.EmbeddedChunks >= r.Chunks || r.embedEnded }

// read reads the followed documents that are not settled (one list
// request filtered by their ids) and, while some extraction job is not
// final, the project's extraction jobs created since the first followed
// document, newest first. Once every followed document is parsed but some
// chunks wait for their embedding, it also reads the project's embedding
// queue first: idle, the chunks the documents then lack will not come (no
// embedding model, their jobs failed), and those documents fail.
func (f *follower) read(ctx context.Context) error {
	idle, err := f.embeddingIdle(ctx)
	if err != nil {
		return err
	}
	var unsettled []string
	for _, i := range f.follow {
		if r := &f.results[i]; !settled(r) {
			unsettled = append(unsettled, r.DocumentID)
		}
	}
	// All in one request (one per 200 documents); files of the same
	// content share a document, read once.
	read, err := f.s.documentsByID(ctx, unsettled)
	if err != nil {
		return err
	}
	for _, i := range f.follow {
		r := &f.results[i]
		if settled(r) {
			continue
		}
		d, ok := read[r.DocumentID]
		if !ok {
			return fmt.Errorf("%s: document %s not found (deleted meanwhile?)", r.Path, r.DocumentID)
		}
		r.Status, r.Chunks, r.EmbeddedChunks = string(d.Status), d.ChunkCount, d.EmbeddedChunks
		if d.Status == client.DocumentStatusFailed {
			r.Result, r.Error = ingestFailed, "parsing failed: "+str(d.Error)
		}
		if idle && d.Status == client.DocumentStatusParsed && r.EmbeddedChunks < r.Chunks {
			r.embedEnded = true
			if r.Result != ingestFailed {
				r.Result, r.Error = ingestFailed, fmt.Sprintf("embedding failed: %d of %d chunks not embedded (no embedding model, or their jobs failed)",
					r.Chunks-r.EmbeddedChunks, r.Chunks)
			}
		}
	}
	if len(f.follow) == 0 || f.extracted {
		return nil
	}
	// Jobs read once every document is parsed are all its jobs: the
	// parse queues them in its transaction.
	parsed := f.parsed()
	if err := f.readJobs(ctx); err != nil {
		return err
	}
	f.extracted = parsed && f.extractionDone()
	return nil
}

// embeddingIdle reads, when every followed document was parsed (or
// failed) at the last read and some still lacks embeddings, and at most
// every two seconds, whether the project's chunk embedding queue is idle
// (no job queued or running): the embeddings of those documents were
// queued when they were parsed, so none of theirs is coming then. Read
// before the documents, it holds for what they show after.
func (f *follower) embeddingIdle(ctx context.Context) (bool, error) {
	if f.noCounts || len(f.follow) == 0 || !f.parsed() || time.Since(f.queueRead) < 2*time.Second {
		return false, nil
	}
	waiting := false
	for _, i := range f.follow {
		if r := &f.results[i]; r.Status == string(client.DocumentStatusParsed) && !embedSettled(r) {
			waiting = true
		}
	}
	if !waiting {
		return false, nil
	}
	f.queueRead = time.Now()
	counts, err := call[client.JobqueueAllMetrics](f.s.api.JobMetrics(ctx, &client.JobMetricsParams{ProjectId: &f.s.cfg.Project})) //nolint:bodyclose // call closes it
	if _, refused := errors.AsType[*exitCodeError](err); refused {
		f.noCounts = true
		fmt.Fprintf(f.s.stderr, "warning: %v; waiting for the embeddings until the timeout\n", err)
		return false, nil
	}
	if err != nil {
		return false, err
	}
	for _, q := range deref(counts.Queues) {
		if q.Queue == document.QueueChunkEmbedding {
			return q.Pending == 0 && q.Processing == 0, nil
		}
	}
	return false, nil
}

// parsed tells whether every followed document is parsed or failed.
func (f *follower) parsed() bool {
	for _, i := range f.follow {
		if st := f.results[i].Status; st != string(client.DocumentStatusParsed) && st != string(client.DocumentStatusFailed) {
			return false
		}
	}
	return true
}

// extractionDone tells whether every extraction job found is final.
func (f *follower) extractionDone() bool {
	for _, j := range f.jobs {
		if !jobEnded(string(j.Status)) {
			return false
		}
	}
	return true
}

// readJobs pages through the project's extraction jobs, newest first,
// down to the first followed document's creation (a parse queues its
// document's jobs after the document exists), and records the followed
// documents' jobs.
func (f *follower) readJobs(ctx context.Context) error {
	// A document's rows: files of the same content share one.
	byDoc := map[string][]int{}
	for _, i := range f.follow {
		byDoc[f.results[i].DocumentID] = append(byDoc[f.results[i].DocumentID], i)
	}
	f.jobs = map[string]client.ExtractionJob{}
	limit := int64(100) // the route's most
	for offset := int64(0); ; offset += limit {
		page, err := call[client.ListJob](f.s.api.ListExtractionJobs(ctx, f.s.cfg.Project, //nolint:bodyclose // call closes it
			&client.ListExtractionJobsParams{Limit: &limit, Offset: &offset}))
		if err != nil {
			return err
		}
		jobs := deref(page.Data)
		for _, j := range jobs {
			if _, ok := byDoc[str(j.DocumentId)]; ok {
				f.jobs[j.Id] = j
			}
		}
		if int64(len(jobs)) < limit || jobs[len(jobs)-1].CreatedAt.Before(f.since) {
			break
		}
	}
	for _, i := range f.follow {
		f.results[i].Extraction = nil
	}
	for _, j := range f.jobs {
		for _, i := range byDoc[str(j.DocumentId)] {
			r := &f.results[i]
			r.Extraction = append(r.Extraction, string(j.Status))
			if j.Status == client.ExtractionJobStatusFailed {
				r.Result, r.Error = ingestFailed, "extraction failed: "+str(j.ErrorMsg)
			}
		}
	}
	for _, i := range f.follow {
		slices.Sort(f.results[i].Extraction)
	}
	return nil
}

// show sets the parse, extract and embed bars; uploaded tells that every
// document to follow is known. The bars count documents, not files: files
// of the same content share one document, counted once.
func (f *follower) show(bars *phaseBars, uploaded bool) {
	var parsed, chunks, embedded, jobsDone int64
	embedWaits := false
	seen := make(map[string]bool, len(f.follow))
	for _, i := range f.follow {
		r := &f.results[i]
		if seen[r.DocumentID] {
			continue
		}
		seen[r.DocumentID] = true
		switch r.Status {
		case string(client.DocumentStatusParsed):
			parsed++
			chunks += r.Chunks
			embedded += min(r.EmbeddedChunks, r.Chunks)
			if !embedSettled(r) {
				embedWaits = true
			}
		case string(client.DocumentStatusFailed):
			parsed++
		}
	}
	for _, j := range f.jobs {
		if jobEnded(string(j.Status)) {
			jobsDone++
		}
	}
	docs, jobs := int64(len(seen)), int64(len(f.jobs))
	allParsed := uploaded && parsed == docs
	bars.set(phaseParse, parsed, docs, allParsed, fmt.Sprintf("%d/%d", parsed, docs))
	bars.set(phaseExtract, jobsDone, jobs, uploaded && (f.extracted || len(f.follow) == 0), fmt.Sprintf("%d/%d", jobsDone, jobs))
	bars.set(phaseEmbed, embedded, chunks, allParsed && !embedWaits, fmt.Sprintf("%d/%d", embedded, chunks))
}
