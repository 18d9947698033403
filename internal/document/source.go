package document

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/jobqueue"
	"github.com/graphmill/graphmill/internal/postgres"
)

// Sourced is an item of an integration stored as a document: keyed by
// (DatasourceID, ExternalID) instead of by its bytes, with the item's
// source metadata.
type Sourced struct {
	ProjectID    uuid.UUID
	DatasourceID uuid.UUID
	// SyncJobID is the sync storing it; recorded on the document.
	SyncJobID  uuid.UUID
	ExternalID string
	Version    string
	Title      string
	URL        string
	Filename   string
	MimeType   string
	Data       []byte
	Modified   time.Time
}

// SourceState is what an integration's sync knows of a document it
// stored: the document, the item's version and content hash, and the last
// sync job that stored or confirmed it.
type SourceState struct {
	DocumentID uuid.UUID  `db:"id"`
	ExternalID string     `db:"external_id"`
	Version    string     `db:"source_version"`
	SHA256     []byte     `db:"sha256"`
	SyncJobID  *uuid.UUID `db:"sync_job_id"`
}

// PutResult says what PutSourced did.
type PutResult string

// PutSourced results.
const (
	PutCreated   PutResult = "created"
	PutUpdated   PutResult = "updated"
	PutUnchanged PutResult = "unchanged"
)

// SourceStates lists the documents an integration stored in project, by
// external id.
func (s *Service) SourceStates(ctx context.Context, project, datasource uuid.UUID) (map[string]SourceState, error) {
	rows, _ := s.pool.Query(ctx, `SELECT id, external_id, COALESCE(source_version, '') AS source_version, sha256, sync_job_id
		FROM documents WHERE project_id = $1 AND datasource_id = $2`, project, datasource)
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[SourceState])
	if err != nil {
		return nil, fmt.Errorf("list synced documents: %w", err)
	}
	out := make(map[string]SourceState, len(list))
	for _, st := range list {
		out[st.ExternalID] = st
	}
	return out, nil
}

// PutSourced stores an integration's item in tx, the sync's transaction:
// a new item becomes a document queued for parsing as an upload is; an
// item whose bytes changed replaces the document's content in place and
// is parsed again (its chunks are kept where their text is, and the new
// ones extracted incrementally); an item with the same bytes only has its
// source metadata refreshed. Every document it touches records the sync.
// Errors: invalid_argument (empty, unnamed or an unsupported format),
// payload_too_large.
func (s *Service) PutSourced(ctx context.Context, tx pgx.Tx, in Sourced) (uuid.UUID, PutResult, error) {
	if err := checkSourced(&in); err != nil {
		return uuid.Nil, "", err
	}
	sum := sha256.Sum256(in.Data)
	now := s.now().UTC()
	var modified *time.Time
	if !in.Modified.IsZero() {
		m := in.Modified.UTC()
		modified = &m
	}
	var (
		id  uuid.UUID
		old []byte
	)
	err := tx.QueryRow(ctx, `SELECT id, sha256 FROM documents WHERE project_id = $1 AND datasource_id = $2 AND external_id = $3 FOR NO KEY UPDATE`,
		in.ProjectID, in.DatasourceID, in.ExternalID).Scan(&id, &old)
	switch {
	case err == pgx.ErrNoRows: //nolint:errorlint // pgx returns the sentinel itself
		id = uuid.Must(uuid.NewV7())
		if _, err := tx.Exec(ctx, `INSERT INTO documents (id, project_id, filename, mime_type, size_bytes, sha256, content, status,
			created_at, updated_at, datasource_id, external_id, source_url, source_version, source_title, source_modified, sync_job_id)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9, $10, $11, NULLIF($12, ''), NULLIF($13, ''), NULLIF($14, ''), $15, $16)`,
			id, in.ProjectID, in.Filename, in.MimeType, len(in.Data), sum[:], in.Data, StatusParsing, now,
			in.DatasourceID, in.ExternalID, in.URL, in.Version, in.Title, modified, in.SyncJobID); err != nil {
			return uuid.Nil, "", fmt.Errorf("insert synced document: %w", err)
		}
		return id, PutCreated, s.queueParse(ctx, tx, in.ProjectID, id, now)
	case err != nil:
		return uuid.Nil, "", fmt.Errorf("find synced document: %w", err)
	case bytes.Equal(old, sum[:]):
		if _, err := tx.Exec(ctx, `UPDATE documents SET source_url = NULLIF($2, ''), source_version = NULLIF($3, ''), source_title = NULLIF($4, ''),
			source_modified = $5, sync_job_id = $6 WHERE id = $1`, id, in.URL, in.Version, in.Title, modified, in.SyncJobID); err != nil {
			return uuid.Nil, "", fmt.Errorf("update synced document: %w", err)
		}
		return id, PutUnchanged, nil
	}
	if _, err := tx.Exec(ctx, `UPDATE documents SET filename = $2, mime_type = $3, size_bytes = $4, sha256 = $5, content = $6, status = $7,
		error = NULL, updated_at = $8, source_url = NULLIF($9, ''), source_version = NULLIF($10, ''), source_title = NULLIF($11, ''),
		source_modified = $12, sync_job_id = $13 WHERE id = $1`,
		id, in.Filename, in.MimeType, len(in.Data), sum[:], in.Data, StatusParsing, now, in.URL, in.Version, in.Title, modified, in.SyncJobID); err != nil {
		return uuid.Nil, "", fmt.Errorf("update synced document: %w", err)
	}
	return id, PutUpdated, s.queueParse(ctx, tx, in.ProjectID, id, now)
}

// queueParse queues a document's parsing, waking the parsers at commit.
func (s *Service) queueParse(ctx context.Context, tx pgx.Tx, project, id uuid.UUID, now time.Time) error {
	jobs, err := jobsOfDocument(ctx, tx, id)
	if err != nil {
		return err
	}
	// A parse in progress read the old content: it is cancelled (a
	// running one rolls back) and the new content parsed by a new job.
	for _, j := range jobs[QueueParsing] {
		if _, err := s.jobs.Cancel(ctx, tx, QueueParsing, j); err != nil && errs.CodeOf(err) != errs.FailedPrecondition {
			return err
		}
	}
	if err := parseJobInsert(ctx, tx, project, id, now); err != nil {
		return err
	}
	return jobqueue.Notify(ctx, tx, QueueParsing)
}

// checkSourced applies an upload's rules to an item.
func checkSourced(in *Sourced) error {
	if in.ExternalID == "" || len(in.ExternalID) > 2000 || !postgres.ValidText(in.ExternalID) {
		return errs.New(errs.Invalid, "an item needs an external id of valid UTF-8 without NUL of at most 2000 bytes")
	}
	name := strings.TrimSpace(in.Filename)
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	if name == "" || name == "." || len(name) > 500 || !postgres.ValidText(name) {
		return errs.Errorf(errs.Invalid, "item %s: the filename must be valid UTF-8 of 1 to 500 bytes without NUL", in.ExternalID)
	}
	in.Filename = name
	in.MimeType = storedMediaType(postgres.Text(in.MimeType), in.Filename)
	if len(in.Data) == 0 {
		return ErrEmpty
	}
	if len(in.Data) > math.MaxInt32 {
		return ErrTooLarge
	}
	if _, err := DetectFormatAt(in.Filename, in.MimeType, bytesContent(in.Data), int64(len(in.Data))); err != nil {
		return err
	}
	for _, v := range []*string{&in.Title, &in.URL} {
		*v = postgres.Text(*v)
	}
	// The next sync compares the version (Known): a changed spelling
	// would be another version.
	in.Version = postgres.NameText(in.Version)
	return nil
}

// MarkSourced records, in tx, that sync job confirmed the integration's
// documents of these external ids unchanged.
func (s *Service) MarkSourced(ctx context.Context, tx pgx.Tx, project, datasource, job uuid.UUID, externalIDs []string) error {
	if len(externalIDs) == 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, `UPDATE documents SET sync_job_id = $3 WHERE project_id = $1 AND datasource_id = $2 AND external_id = ANY($4)`,
		project, datasource, job, externalIDs); err != nil {
		return fmt.Errorf("mark synced documents: %w", err)
	}
	return nil
}
