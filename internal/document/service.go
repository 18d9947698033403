package document

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/jobqueue"
	"github.com/graphmill/graphmill/internal/llm"
	"github.com/graphmill/graphmill/internal/postgres"
)

// ParseTimeout bounds the parsing of one file.
const ParseTimeout = 2 * time.Minute

// Embedders resolves the embedder a project uses.
type Embedders interface {
	Embedder(ctx context.Context, project uuid.UUID) (llm.Embedder, error)
}

// Service holds the document rules and the pipeline's workers.
type Service struct {
	pool      *pgxpool.Pool
	jobs      *jobqueue.Client
	chunker   *Chunker
	embedders Embedders
	extractor Extraction
	activity  Activity
	notifier  FailureNotifier
	logger    *slog.Logger
	now       func() time.Time
	opts      ChunkOptions
}

// Activity removes the users' recent-activity items of deleted documents
// (activity.Forgetter), in the deleting transaction.
type Activity interface {
	ForgetInTx(ctx context.Context, tx pgx.Tx, project uuid.UUID, ids ...uuid.UUID) error
}

// FailureNotifier is told, in the transaction that marks a document
// failed, that its parsing gave up, so that the uploader hears of it
// (notification.Service).
type FailureNotifier interface {
	DocumentParseFailed(ctx context.Context, tx pgx.Tx, project, document, uploader uuid.UUID, filename, reason string) error
}

// Extraction queues and cancels the extraction of documents
// (extraction.Service), in the caller's transaction.
type Extraction interface {
	// EnqueueDocument queues the extraction a parse calls for, with trigger
	// as its trigger type and datasource (nil for an upload) as its
	// datasourceId; newChunks says that the parse added chunks. The caller
	// holds the document's lock.
	EnqueueDocument(ctx context.Context, tx pgx.Tx, project, document uuid.UUID, datasource *uuid.UUID, trigger string, newChunks bool) error
	// CancelDocumentJobs cancels the document's queued and running
	// extraction jobs.
	CancelDocumentJobs(ctx context.Context, tx pgx.Tx, project, document uuid.UUID) error
}

// extractionTrigger is the trigger type of the extraction a parse queues:
// the upload was the user's request. extractionTriggerSync is that of a
// document an integration's sync stored (the spec's datasource sync event).
const (
	extractionTrigger     = "manual"
	extractionTriggerSync = "webhook"
)

// Config configures a Service.
type Config struct {
	Pool *pgxpool.Pool
	Jobs *jobqueue.Client
	// Embedders gives each project's embedder (the provider resolver).
	Embedders Embedders
	// Extraction queues the extraction of parsed documents.
	Extraction Extraction
	// Activity forgets the users' uses of deleted documents.
	Activity Activity
	// Notifier, when set, tells uploaders about documents that could not
	// be parsed.
	Notifier FailureNotifier
	Logger   *slog.Logger
	Now      func() time.Time
	Chunking ChunkOptions
}

// NewService returns a Service; AddQueues registers its workers.
func NewService(c Config) (*Service, error) {
	if c.Extraction == nil {
		return nil, errors.New("document: no extraction to queue parsed documents to")
	}
	if c.Activity == nil {
		return nil, errors.New("document: no activity to forget deleted documents in")
	}
	ch, err := NewChunker()
	if err != nil {
		return nil, err
	}
	return &Service{
		pool: c.Pool, jobs: c.Jobs, chunker: ch, embedders: c.Embedders, extractor: c.Extraction, activity: c.Activity, notifier: c.Notifier, logger: c.Logger, now: c.Now, opts: c.Chunking,
	}, nil
}

// Upload stores a document and queues its parsing, in one transaction. The
// same bytes uploaded again to the project return the existing document
// with Duplicate set, and queue nothing. Errors: invalid_argument.
func (s *Service) Upload(ctx context.Context, u Upload) (Document, error) {
	u.Filename = strings.TrimSpace(filepath.Base(strings.ReplaceAll(u.Filename, `\`, "/")))
	if u.Filename == "" || u.Filename == "." || u.Filename == "/" {
		return Document{}, errs.New(errs.Invalid, "filename is required")
	}
	if len(u.Filename) > 500 || !utf8.ValidString(u.Filename) {
		return Document{}, errs.New(errs.Invalid, "filename must be valid UTF-8 of at most 500 bytes")
	}
	if strings.IndexByte(u.Filename, 0) >= 0 {
		return Document{}, errs.New(errs.Invalid, "filename must not contain the NUL character (U+0000)")
	}
	u.MimeType = storedMediaType(u.MimeType, u.Filename)
	if len(u.MimeType) > 255 || !postgres.ValidText(u.MimeType) {
		return Document{}, errs.New(errs.Invalid, "mimeType must be valid UTF-8 of at most 255 bytes without NUL")
	}
	content := u.Content
	if content == nil {
		content = bytesContent(u.Data)
	}
	if content.Size() == 0 {
		return Document{}, ErrEmpty
	}
	if content.Size() > math.MaxInt32 {
		return Document{}, ErrTooLarge
	}
	if _, err := DetectFormatAt(u.Filename, u.MimeType, content, content.Size()); err != nil {
		return Document{}, err
	}
	sum := content.SHA256()
	id := uuid.Must(uuid.NewV7())
	var (
		duplicate bool
		d         Document
	)
	err := postgres.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		now := s.now().UTC()
		// The same bytes already there cost no transfer; a concurrent
		// upload of them is caught by the insert.
		existing, found, err := documentIDBySum(ctx, tx, u.ProjectID, sum[:])
		if err != nil {
			return err
		}
		inserted := false
		if !found {
			if inserted, err = documentInsert(ctx, tx, id, u, content, sum[:], now); err != nil {
				return err
			}
		}
		if !inserted {
			duplicate = true
			if !found {
				if existing, _, err = documentIDBySum(ctx, tx, u.ProjectID, sum[:]); err != nil {
					return err
				}
			}
			id = existing
		} else {
			if err := parseJobInsert(ctx, tx, u.ProjectID, id, now); err != nil {
				return err
			}
			if err := jobqueue.Notify(ctx, tx, QueueParsing); err != nil {
				return err
			}
		}
		// Read in the transaction: the answer is the document as this
		// upload left it, not as a parse that finished meanwhile did.
		d, err = documentGet(ctx, tx, u.ProjectID, id)
		return err
	})
	if err != nil {
		return Document{}, err
	}
	d.Duplicate = duplicate
	return d, nil
}

// DocumentProject returns the project of document id, for the routes that
// name a document. Errors: not_found.
func (s *Service) DocumentProject(ctx context.Context, id uuid.UUID) (uuid.UUID, error) {
	return documentProject(ctx, s.pool, id)
}

// Get returns a document of project. Errors: not_found.
func (s *Service) Get(ctx context.Context, project, id uuid.UUID) (Document, error) {
	return documentGet(ctx, s.pool, project, id)
}

// Statuses returns the status of each of ids that is a document of
// project, in one query; ids of no document of project are absent.
func (s *Service) Statuses(ctx context.Context, project uuid.UUID, ids []uuid.UUID) (map[uuid.UUID]string, error) {
	return documentStatuses(ctx, s.pool, project, ids)
}

// Filenames returns the file name of each of ids that is a document of
// project, in one query; ids of no document of project are absent.
func (s *Service) Filenames(ctx context.Context, project uuid.UUID, ids []uuid.UUID) (map[uuid.UUID]string, error) {
	return documentFilenames(ctx, s.pool, project, ids)
}

// List lists a project's documents, newest first.
func (s *Service) List(ctx context.Context, project uuid.UUID, limit, offset int) ([]Document, int, error) {
	return documentList(ctx, s.pool, project, nil, limit, offset)
}

// ListByIDs lists the documents of project among ids (all of them when
// ids is nil), newest first: a client reads the documents it follows or
// names in one request.
func (s *Service) ListByIDs(ctx context.Context, project uuid.UUID, ids []uuid.UUID, limit, offset int) ([]Document, int, error) {
	return documentList(ctx, s.pool, project, ids, limit, offset)
}

// Chunks lists a document's chunks in order. Errors: not_found.
func (s *Service) Chunks(ctx context.Context, project, id uuid.UUID, limit, offset int) ([]StoredChunk, int, error) {
	if _, err := documentGet(ctx, s.pool, project, id); err != nil {
		return nil, 0, err
	}
	return chunkList(ctx, s.pool, project, id, limit, offset)
}

// ChunkIndex is the index of chunk id of document doc in project (the
// console links a citation to the page of chunks that holds it). Errors:
// not_found.
func (s *Service) ChunkIndex(ctx context.Context, project, doc, id uuid.UUID) (int, error) {
	return chunkIndex(ctx, s.pool, project, doc, id)
}

// Delete removes a document, its chunks, its pending jobs and the users'
// recent-activity items of it; its running jobs are cancelled (their workers stop within a second and roll back).
// Errors: not_found.
func (s *Service) Delete(ctx context.Context, project, id uuid.UUID) error {
	// A job of the document that is running stops when its cancel commits
	// (the NOTIFY), not before: until then its handler writes on (logs, LLM
	// calls referencing the job) and may deadlock with this transaction's
	// cascade. The victim, when it is this transaction, runs again; the
	// handler's writes are then committed or gone.
	return postgres.WithTxRetryDeadlock(ctx, s.pool, func(tx pgx.Tx) error {
		return s.DeleteInTx(ctx, tx, project, id)
	})
}

// DeleteInTx deletes a document in tx, the caller's transaction, as Delete
// does. Errors: not_found.
func (s *Service) DeleteInTx(ctx context.Context, tx pgx.Tx, project, id uuid.UUID) error {
	// NO KEY UPDATE: it waits for a parse in progress, but lets the
	// foreign-key checks of a job that commits meanwhile through (a job
	// row updated twice in one transaction checks its document), so that
	// cancelling that job below cannot deadlock with its commit.
	if _, err := tx.Exec(ctx, `SELECT 1 FROM documents WHERE project_id = $1 AND id = $2 FOR NO KEY UPDATE`, project, id); err != nil {
		return fmt.Errorf("lock document: %w", err)
	}
	jobs, err := jobsOfDocument(ctx, tx, id)
	if err != nil {
		return err
	}
	for _, q := range []string{QueueParsing, QueueChunkEmbedding} {
		for _, j := range jobs[q] {
			if _, err := s.jobs.Cancel(ctx, tx, q, j); err != nil && errs.CodeOf(err) != errs.FailedPrecondition {
				return err
			}
		}
	}
	if err := s.extractor.CancelDocumentJobs(ctx, tx, project, id); err != nil {
		return err
	}
	ok, err := documentDelete(ctx, tx, project, id)
	if err != nil {
		return err
	}
	if !ok {
		return ErrNotFound
	}
	// After the delete: a recording holding the document has committed.
	return s.activity.ForgetInTx(ctx, tx, project, id)
}

// HoldInTx checks, in tx, that document id of project exists, and keeps
// it from being deleted until tx ends (a key-share lock: a deletion in
// progress is waited for, then seen). Errors: not_found.
func (s *Service) HoldInTx(ctx context.Context, tx pgx.Tx, project, id uuid.UUID) error {
	_, err := postgres.One[int](ctx, tx, ErrNotFound, `SELECT 1 FROM documents WHERE project_id = $1 AND id = $2 FOR KEY SHARE`, project, id)
	return err
}

// DocumentCounts counts the documents of each project (for superadmin
// lists).
func (s *Service) DocumentCounts(ctx context.Context, projects []uuid.UUID) (map[uuid.UUID]int, error) {
	return documentCounts(ctx, s.pool, projects)
}

// ChunksToExtract returns a document's chunks in order: all of them, or,
// with onlyNew, those not extracted yet.
func (s *Service) ChunksToExtract(ctx context.Context, project, document uuid.UUID, onlyNew bool) ([]ChunkText, error) {
	return chunksToExtract(ctx, s.pool, project, document, onlyNew)
}

// MarkExtracted records, in the extraction's transaction, that a
// project's chunks were extracted at now.
func (s *Service) MarkExtracted(ctx context.Context, tx pgx.Tx, project uuid.UUID, chunks []uuid.UUID, now time.Time) error {
	return chunksMarkExtracted(ctx, tx, project, chunks, now)
}
