package document

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/graphmill/graphmill/internal/events"
	"github.com/graphmill/graphmill/internal/jobqueue"
	"github.com/graphmill/graphmill/internal/postgres"
	"github.com/graphmill/graphmill/internal/vectorindex"
)

// Worker defaults.
const (
	ParseConcurrencyDefault = 2
	EmbedBatchDefault       = 32
	EmbedConcurrencyDefault = 1
)

// AddQueues registers the document pipeline's queues on the job client:
// parsing, and chunk embedding in batches.
func (s *Service) AddQueues(parseConcurrency, projectMax int) error {
	if err := s.jobs.AddQueue(jobqueue.QueueConfig{
		Name: QueueParsing, Table: "document_parsing_jobs", Concurrency: parseConcurrency, BatchSize: 1, ProjectMax: projectMax,
		Handler: jobqueue.EachFunc(s.parseOne), OutcomeFunc: s.parseOutcomes, AnnounceStarted: true,
	}); err != nil {
		return err
	}
	// The extraction and graph-embedding queues are registered by their
	// domains (internal/extraction, internal/embedding).
	return s.jobs.AddQueue(jobqueue.QueueConfig{
		Name: QueueChunkEmbedding, Table: "chunk_embedding_jobs", Concurrency: EmbedConcurrencyDefault, BatchSize: EmbedBatchDefault, ProjectMax: projectMax,
		Handler: jobqueue.HandlerFunc(s.workEmbed), OutcomeFunc: jobqueue.PublishCompletedFunc(QueueChunkEmbedding, time.Now), AnnounceStarted: true,
	})
}

// parseOne parses and chunks a document outside any transaction, then
// stores the chunks, their embedding jobs, the extraction job, the
// document's status, the document.converted event and the job's own
// completion in one transaction: a crash leaves either all of it or none.
// Chunks whose text is already stored are kept (see chunksSync): a re-parse
// of unchanged text changes and queues nothing.
func (s *Service) parseOne(ctx context.Context, j jobqueue.Job) error {
	var docID uuid.UUID
	if err := s.pool.QueryRow(ctx, `SELECT document_id FROM document_parsing_jobs WHERE id = $1`, j.ID).Scan(&docID); err != nil {
		return fmt.Errorf("load parsing job: %w", err)
	}
	src, err := documentContent(ctx, s.pool, docID)
	if err != nil {
		return jobqueue.Permanent(err)
	}
	pctx, cancel := context.WithTimeout(ctx, ParseTimeout)
	parsed, err := Parse(pctx, src.Filename, src.MimeType, src.Content)
	cancel()
	if err != nil {
		if errors.Is(err, ErrUnsupported) || errors.Is(err, ErrCorrupt) || errors.Is(err, context.DeadlineExceeded) {
			return jobqueue.Permanent(err)
		}
		return err
	}
	chunks := s.chunker.Chunk(parsed.Blocks, s.opts)
	project := *j.ProjectID
	// Run again when it loses a deadlock (in the outcome hook FinishInTx
	// calls, say): the chunks and the job's completion commit together.
	return postgres.WithTxRetryDeadlock(ctx, s.pool, func(tx pgx.Tx) error {
		now := s.now().UTC()
		lock, err := documentLockForParse(ctx, tx, docID)
		if errors.Is(err, ErrNotFound) {
			return jobqueue.Permanent(err) // deleted meanwhile
		}
		if err != nil {
			return err
		}
		synced, err := chunksSync(ctx, tx, project, docID, chunks, now)
		if err != nil {
			return err
		}
		trigger := extractionTrigger
		if lock.DatasourceID != nil {
			trigger = extractionTriggerSync
		}
		if err := s.extractor.EnqueueDocument(ctx, tx, project, docID, lock.DatasourceID, trigger, synced.inserted > 0); err != nil {
			return err
		}
		if lock.Status != StatusParsed || synced.changed() {
			if err := documentSetStatus(ctx, tx, docID, StatusParsed, string(parsed.Format), "", len(chunks), now); err != nil {
				return err
			}
			if _, err := events.Publish(ctx, tx, events.TypeDocumentConverted, &project, nil, map[string]any{
				"documentId": docID, "format": parsed.Format, "chunks": len(chunks),
			}, now); err != nil {
				return err
			}
		}
		if synced.inserted > 0 {
			if err := jobqueue.Notify(ctx, tx, QueueChunkEmbedding); err != nil {
				return err
			}
		}
		return s.jobs.FinishInTx(ctx, tx, QueueParsing, j, jobqueue.StatusCompleted)
	})
}

// failedDocument is what parseOutcomes needs of a document whose parsing
// gave up.
type failedDocument struct {
	ID        uuid.UUID  `db:"id"`
	ProjectID uuid.UUID  `db:"project_id"`
	CreatedBy *uuid.UUID `db:"created_by"`
	Filename  string     `db:"filename"`
}

// parseOutcomes marks documents whose parsing gave up as failed, with the
// reason, tells their uploaders, and announces finished jobs.
func (s *Service) parseOutcomes(ctx context.Context, tx pgx.Tx, outcomes []jobqueue.Outcome) error {
	for _, o := range outcomes {
		if !o.FinalFailure() {
			continue
		}
		d, err := postgres.One[failedDocument](ctx, tx, nil, `SELECT d.id, d.project_id, d.created_by, d.filename
			FROM document_parsing_jobs j JOIN documents d ON d.id = j.document_id WHERE j.id = $1`, o.Job.ID)
		if err != nil {
			return fmt.Errorf("load parsing job: %w", err)
		}
		if d.ID == uuid.Nil {
			continue // the document was deleted
		}
		reason := "parsing failed"
		if o.Err != nil {
			reason = postgres.Text(o.Err.Error()) // a parser's error may quote the file
		}
		if err := documentSetStatus(ctx, tx, d.ID, StatusFailed, "", reason, 0, s.now().UTC()); err != nil {
			return err
		}
		if s.notifier != nil && d.CreatedBy != nil {
			if err := s.notifyFailed(ctx, tx, d.ProjectID, d.ID, *d.CreatedBy, d.Filename, reason); err != nil {
				return err
			}
		}
	}
	return jobqueue.PublishCompletedFunc(QueueParsing, time.Now)(ctx, tx, outcomes)
}

// notifyFailed tells the uploader in a savepoint: a notification that
// cannot be written must not keep the document from being marked failed.
// A deadlock or serialization conflict is the exception, answered: the
// whole finishing transaction runs again (jobqueue's outcome hooks), as
// run alone the notification would wait for the same lock.
func (s *Service) notifyFailed(ctx context.Context, tx pgx.Tx, project, doc, uploader uuid.UUID, filename, reason string) error {
	err := pgx.BeginFunc(ctx, tx, func(sp pgx.Tx) error {
		return s.notifier.DocumentParseFailed(ctx, sp, project, doc, uploader, filename, reason)
	})
	if postgres.IsTxConflict(err) {
		return fmt.Errorf("notify document failure: %w", err)
	}
	if err != nil {
		s.logger.Error("notify document failure: the document is marked failed without it", "document", doc, "err", err)
	}
	return nil
}

// workEmbed embeds a batch of chunks with one embedder call and stores the
// vectors in one transaction.
func (s *Service) workEmbed(ctx context.Context, jobs []jobqueue.Job) []error {
	out := make([]error, len(jobs))
	fail := func(err error) []error { return jobqueue.FailAll(len(jobs), err) }
	rows, err := s.pool.Query(ctx, `SELECT j.id, c.id, c.text FROM chunk_embedding_jobs j JOIN document_chunks c ON c.id = j.chunk_id WHERE j.id = ANY($1)`, jobqueue.IDs(jobs))
	if err != nil {
		return fail(fmt.Errorf("load chunks: %w", err))
	}
	type item struct {
		chunk uuid.UUID
		text  string
	}
	byJob := map[uuid.UUID]item{}
	for rows.Next() {
		var jid, cid uuid.UUID
		var text string
		if err := rows.Scan(&jid, &cid, &text); err != nil {
			rows.Close()
			return fail(fmt.Errorf("load chunks: %w", err))
		}
		byJob[jid] = item{cid, text}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fail(fmt.Errorf("load chunks: %w", err))
	}
	// A batch may span projects, which may use different providers: one
	// embedding call per project.
	type group struct {
		jobs     []int
		texts    []string
		chunkIDs []uuid.UUID
	}
	groups := map[uuid.UUID]*group{}
	var order []uuid.UUID
	for i, j := range jobs {
		it, ok := byJob[j.ID]
		if !ok {
			out[i] = jobqueue.Permanent(errors.New("chunk no longer exists"))
			continue
		}
		g := groups[*j.ProjectID]
		if g == nil {
			g = &group{}
			groups[*j.ProjectID] = g
			order = append(order, *j.ProjectID)
		}
		g.jobs = append(g.jobs, i)
		g.texts = append(g.texts, it.text)
		g.chunkIDs = append(g.chunkIDs, it.chunk)
	}
	for _, project := range order {
		g := groups[project]
		gjobs := make([]jobqueue.Job, len(g.jobs))
		for k, i := range g.jobs {
			gjobs[k] = jobs[i]
		}
		if err := s.embedGroup(ctx, project, gjobs, g.texts, g.chunkIDs); err != nil {
			for _, i := range g.jobs {
				out[i] = err
			}
		}
	}
	return out
}

// embedGroup embeds one project's chunks with one call of its embedder and
// stores the vectors and the completion of their jobs in one transaction.
// Chunks that already carry a vector of the embedder's model (a job that
// ran before a crash) are not embedded again.
func (s *Service) embedGroup(ctx context.Context, project uuid.UUID, jobs []jobqueue.Job, texts []string, chunkIDs []uuid.UUID) error {
	emb, err := s.embedders.Embedder(ctx, project)
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		return jobqueue.Permanent(err)
	}
	done, err := chunksEmbeddedWith(ctx, s.pool, chunkIDs, emb.Model())
	if err != nil {
		return err
	}
	var todo []int
	for i, id := range chunkIDs {
		if !done[id] {
			todo = append(todo, i)
		}
	}
	var vectors [][]float32
	if len(todo) > 0 {
		in := make([]string, len(todo))
		for k, i := range todo {
			in[k] = texts[i]
		}
		vectors, err = emb.Embed(ctx, in)
		if err != nil {
			return fmt.Errorf("embed %d chunks with %s: %w", len(in), emb.Model(), err)
		}
		if len(vectors) != len(in) {
			return fmt.Errorf("embedder returned %d vectors for %d texts", len(vectors), len(in))
		}
	}
	// Run again when it loses a deadlock (in the outcome hook
	// FinishBatchInTx calls, say).
	err = postgres.WithTxRetryDeadlock(ctx, s.pool, func(tx pgx.Tx) error {
		now := s.now().UTC()
		if len(todo) > 0 {
			batch := &pgx.Batch{}
			for k, i := range todo {
				batch.Queue(`UPDATE document_chunks SET embedding = $2, embedding_model = $3, embedding_dim = $4, embedded_at = $5 WHERE id = $1`,
					chunkIDs[i], vectors[k], emb.Model(), len(vectors[k]), now)
			}
			if err := tx.SendBatch(ctx, batch).Close(); err != nil {
				return err
			}
			if err := vectorindex.Changed(ctx, tx, project, vectorindex.KindChunks); err != nil {
				return err
			}
		}
		return s.jobs.FinishBatchInTx(ctx, tx, QueueChunkEmbedding, jobs, jobqueue.StatusCompleted)
	})
	if err != nil {
		return fmt.Errorf("store embeddings: %w", err)
	}
	return nil
}
