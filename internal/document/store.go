package document

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/graphmill/graphmill/internal/jobqueue"
	"github.com/graphmill/graphmill/internal/postgres"
	"github.com/graphmill/graphmill/internal/vectorindex"
)

// documentColumns are Document's, of documents d (pgx matches them to its
// fields by name).
const documentColumns = `d.id, d.project_id, d.filename, d.mime_type, d.size_bytes, encode(d.sha256, 'hex') AS sha256, d.status,
	COALESCE(d.error, '') AS error, COALESCE(d.format, '') AS format, d.chunk_count,
	(SELECT count(*) FROM document_chunks c WHERE c.document_id = d.id AND c.embedded_at IS NOT NULL)::int AS embedded,
	d.created_at, d.updated_at, d.datasource_id, COALESCE(d.external_id, '') AS external_id, COALESCE(d.source_url, '') AS source_url,
	COALESCE(d.source_version, '') AS source_version, COALESCE(d.source_title, '') AS source_title`

func documentGet(ctx context.Context, db postgres.DBTX, project, id uuid.UUID) (Document, error) {
	d, err := postgres.One[Document](ctx, db, ErrNotFound, `SELECT `+documentColumns+` FROM documents d WHERE d.project_id = $1 AND d.id = $2`, project, id)
	if err != nil {
		return Document{}, fmt.Errorf("get document: %w", err)
	}
	return d, nil
}

func documentList(ctx context.Context, db postgres.DBTX, project uuid.UUID, ids []uuid.UUID, limit, offset int) ([]Document, int, error) {
	cond, args := `d.project_id = $1`, []any{project}
	if ids != nil {
		cond, args = cond+` AND d.id = ANY($2)`, append(args, ids)
	}
	rows, _ := db.Query(ctx, `SELECT `+documentColumns+`, count(*) OVER () AS total FROM documents d
		WHERE `+cond+fmt.Sprintf(` ORDER BY d.created_at DESC, d.id DESC LIMIT $%d OFFSET $%d`, len(args)+1, len(args)+2),
		append(slices.Clip(args), limit, offset)...)
	out, total, err := postgres.CollectPageOf[Document](rows)
	if err != nil {
		return nil, 0, fmt.Errorf("list documents: %w", err)
	}
	if total, err = postgres.TotalPastEnd(ctx, db, len(out), offset, total, `SELECT count(*) FROM documents d WHERE `+cond, args...); err != nil {
		return nil, 0, fmt.Errorf("count documents: %w", err)
	}
	return out, total, nil
}

// documentInsert streams a document into the documents table with a
// binary COPY: its content goes from c to the connection 64 KiB at a time
// and is never held in memory whole. It runs in a savepoint and reports
// false, with tx usable, when the project got the same bytes meanwhile (a
// concurrent upload: the unique violation COPY cannot skip).
func documentInsert(ctx context.Context, tx pgx.Tx, id uuid.UUID, u Upload, c Content, sum []byte, now time.Time) (bool, error) {
	sp, err := tx.Begin(ctx)
	if err != nil {
		return false, fmt.Errorf("insert document: %w", err)
	}
	defer func() { _ = sp.Rollback(context.WithoutCancel(ctx)) }()
	var head, tail copyRow
	head.start(11)
	head.bytes(id[:])
	head.bytes(u.ProjectID[:])
	head.bytes([]byte(u.Filename))
	head.bytes([]byte(u.MimeType))
	head.int64(c.Size())
	head.bytes(sum)
	head.bytes([]byte(StatusParsing))
	if u.UserID == uuid.Nil {
		head.null()
	} else {
		head.bytes(u.UserID[:])
	}
	head.timestamptz(now)
	head.timestamptz(now)
	head.int32(int32(c.Size())) //nolint:gosec // Service.Upload refuses more than MaxInt32 bytes
	tail.end()
	r := io.MultiReader(bytes.NewReader(head), io.NewSectionReader(c, 0, c.Size()), bytes.NewReader(tail))
	_, err = sp.Conn().PgConn().CopyFrom(ctx, r, `COPY documents (id, project_id, filename, mime_type, size_bytes, sha256, status,
		created_by, created_at, updated_at, content) FROM STDIN (FORMAT binary)`)
	if postgres.IsUniqueViolation(err, "documents_project_sha256_key") {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("insert document: %w", err)
	}
	if err := sp.Commit(ctx); err != nil {
		return false, fmt.Errorf("insert document: %w", err)
	}
	return true, nil
}

// copyRow builds PostgreSQL's binary COPY format: a header and one tuple
// of fields, each a 32-bit length and the value in binary (send) form.
type copyRow []byte

// pgEpochMicros is the zero of PostgreSQL's timestamps, 2000-01-01 UTC,
// in Unix microseconds.
const pgEpochMicros = 946_684_800_000_000

// start writes the file header and the field count of the tuple.
func (r *copyRow) start(fields int) {
	*r = append(*r, "PGCOPY\n\xff\r\n\x00"...)
	*r = binary.BigEndian.AppendUint32(*r, 0)              // flags
	*r = binary.BigEndian.AppendUint32(*r, 0)              // header extension
	*r = binary.BigEndian.AppendUint16(*r, uint16(fields)) //nolint:gosec // a handful of columns
}

// bytes writes a text, bytea or uuid field.
func (r *copyRow) bytes(b []byte) {
	r.int32(int32(len(b))) //nolint:gosec // short values
	*r = append(*r, b...)
}

func (r *copyRow) null() { *r = binary.BigEndian.AppendUint32(*r, 0xFFFFFFFF) }

// int32 writes a bare 32-bit integer (a field length).
func (r *copyRow) int32(n int32) { *r = binary.BigEndian.AppendUint32(*r, uint32(n)) } //nolint:gosec // two's complement as sent

func (r *copyRow) int64(n int64) {
	r.int32(8)
	*r = binary.BigEndian.AppendUint64(*r, uint64(n)) //nolint:gosec // two's complement as sent
}

// timestamptz writes microseconds since 2000-01-01 UTC.
func (r *copyRow) timestamptz(t time.Time) { r.int64(t.UnixMicro() - pgEpochMicros) }

// end writes the file trailer.
func (r *copyRow) end() { *r = binary.BigEndian.AppendUint16(*r, 0xFFFF) }

// documentIDBySum finds the project's document of these bytes.
func documentIDBySum(ctx context.Context, db postgres.DBTX, project uuid.UUID, sum []byte) (uuid.UUID, bool, error) {
	id, err := postgres.One[uuid.UUID](ctx, db, nil, `SELECT id FROM documents WHERE project_id = $1 AND sha256 = $2 AND external_id IS NULL`, project, sum)
	if err != nil {
		return uuid.Nil, false, fmt.Errorf("find document by checksum: %w", err)
	}
	return id, id != uuid.Nil, nil
}

// documentSource is what the parser needs of a document.
type documentSource struct {
	Filename string `db:"filename"`
	MimeType string `db:"mime_type"`
	Content  []byte `db:"content"`
}

// documentContent loads what the parser needs.
func documentContent(ctx context.Context, db postgres.DBTX, id uuid.UUID) (documentSource, error) {
	src, err := postgres.One[documentSource](ctx, db, ErrNotFound, `SELECT filename, mime_type, content FROM documents WHERE id = $1`, id)
	if err != nil {
		return documentSource{}, fmt.Errorf("load document: %w", err)
	}
	return src, nil
}

func documentSetStatus(ctx context.Context, db postgres.DBTX, id uuid.UUID, status, format, reason string, chunks int, now time.Time) error {
	_, err := db.Exec(ctx, `UPDATE documents SET status = $2, format = COALESCE(NULLIF($3, ''), format), error = NULLIF($4, ''),
		chunk_count = CASE WHEN $2 = 'parsed' THEN $5 ELSE chunk_count END, updated_at = $6 WHERE id = $1`,
		id, status, format, reason, chunks, now)
	if err != nil {
		return fmt.Errorf("set document status: %w", err)
	}
	return nil
}

func documentDelete(ctx context.Context, db postgres.DBTX, project, id uuid.UUID) (bool, error) {
	tag, err := db.Exec(ctx, `DELETE FROM documents WHERE project_id = $1 AND id = $2`, project, id)
	if err != nil {
		return false, fmt.Errorf("delete document: %w", err)
	}
	if tag.RowsAffected() != 1 {
		return false, nil
	}
	// Its chunks went with it: every process's vector index forgets them.
	return true, vectorindex.Removed(ctx, db, project, vectorindex.KindChunks)
}

// documentCounts counts documents per project.
func documentCounts(ctx context.Context, db postgres.DBTX, projects []uuid.UUID) (map[uuid.UUID]int, error) {
	rows, _ := db.Query(ctx, `SELECT project_id, count(*)::int FROM documents WHERE project_id = ANY($1) GROUP BY project_id`, projects)
	out, err := postgres.CollectMap[uuid.UUID, int](rows)
	if err != nil {
		return nil, fmt.Errorf("count documents: %w", err)
	}
	return out, nil
}

func chunkIndex(ctx context.Context, db postgres.DBTX, project, document, id uuid.UUID) (int, error) {
	return postgres.One[int](ctx, db, ErrChunkNotFound, `SELECT chunk_index FROM document_chunks
		WHERE project_id = $1 AND document_id = $2 AND id = $3`, project, document, id)
}

func chunkList(ctx context.Context, db postgres.DBTX, project, document uuid.UUID, limit, offset int) ([]StoredChunk, int, error) {
	const from = `FROM document_chunks WHERE project_id = $1 AND document_id = $2`
	rows, err := db.Query(ctx, `SELECT id, document_id, chunk_index, text, start_offset, end_offset, heading_path, token_count,
		COALESCE(embedding_model, ''), COALESCE(embedding_dim, 0), embedded_at, count(*) OVER ()
		`+from+` ORDER BY chunk_index LIMIT $3 OFFSET $4`,
		project, document, limit, offset)
	if err != nil {
		return nil, 0, fmt.Errorf("list chunks: %w", err)
	}
	defer rows.Close()
	out := []StoredChunk{}
	total := 0
	for rows.Next() {
		var c StoredChunk
		if err := rows.Scan(&c.ID, &c.DocumentID, &c.Index, &c.Text, &c.StartOffset, &c.EndOffset, &c.HeadingPath, &c.TokenCount,
			&c.EmbeddingModel, &c.EmbeddingDim, &c.EmbeddedAt, &total); err != nil {
			return nil, 0, fmt.Errorf("list chunks: %w", err)
		}
		if c.EmbeddedAt != nil {
			u := c.EmbeddedAt.UTC()
			c.EmbeddedAt = &u
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("list chunks: %w", err)
	}
	total, err = postgres.TotalPastEnd(ctx, db, len(out), offset, total, `SELECT count(*) `+from, project, document)
	if err != nil {
		return nil, 0, fmt.Errorf("list chunks: %w", err)
	}
	return out, total, nil
}

// chunkSync is what chunksSync did to a document's chunks.
type chunkSync struct {
	inserted, removed, kept int
}

// changed reports whether the chunk texts changed.
func (c chunkSync) changed() bool { return c.inserted > 0 || c.removed > 0 }

// oldChunk is a stored chunk as chunksSync compares it.
type oldChunk struct {
	id                    uuid.UUID
	index, start, end, tk int
	sum                   []byte
	path                  []string
	embedded              bool
}

// chunkSum is the content hash a re-parse compares chunks by.
func chunkSum(text string) []byte {
	sum := sha256.Sum256([]byte(text))
	return sum[:]
}

// chunksSync makes a document's stored chunks those of a parse. A stored
// chunk whose text (by hash) is in the parse is kept with its id,
// embedding and provenance (its index, offsets and heading path follow the
// parse); the others are deleted (their embedding jobs and provenance go
// with them), and the parse's new texts are inserted with one embedding job
// each. A re-parse of unchanged text thus changes nothing and queues
// nothing.
func chunksSync(ctx context.Context, tx pgx.Tx, project, document uuid.UUID, chunks []Chunk, now time.Time) (chunkSync, error) {
	var res chunkSync
	rows, err := tx.Query(ctx, `SELECT id, chunk_index, start_offset, end_offset, token_count,
		coalesce(content_sha256, sha256(convert_to(text, 'UTF8'))), heading_path, embedded_at IS NOT NULL
		FROM document_chunks WHERE document_id = $1 ORDER BY chunk_index`, document)
	if err != nil {
		return res, fmt.Errorf("load chunks: %w", err)
	}
	old, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (oldChunk, error) {
		var c oldChunk
		err := r.Scan(&c.id, &c.index, &c.start, &c.end, &c.tk, &c.sum, &c.path, &c.embedded)
		return c, err
	})
	if err != nil {
		return res, fmt.Errorf("load chunks: %w", err)
	}
	// Match each new chunk to the first unused stored chunk of the same text.
	byText := map[string][]int{}
	for i, c := range old {
		byText[string(c.sum)] = append(byText[string(c.sum)], i)
	}
	used := make([]bool, len(old))
	var (
		moveIDs                             []uuid.UUID
		moveIdx, moveStart, moveEnd, moveTk []int32
		movePaths                           [][]string
		insert                              [][]any
		jobs                                [][]any
		gone                                []uuid.UUID
		goneEmbedded                        bool
	)
	parent := jobqueue.TraceParent(ctx)
	for _, c := range chunks {
		sum := chunkSum(c.Text)
		path := c.HeadingPath
		if path == nil {
			path = []string{}
		}
		if cand := byText[string(sum)]; len(cand) > 0 {
			o := old[cand[0]]
			byText[string(sum)] = cand[1:]
			used[cand[0]] = true
			res.kept++
			if o.index != c.Index || o.start != c.StartOffset || o.end != c.EndOffset || o.tk != c.TokenCount || !slices.Equal(o.path, path) {
				moveIDs = append(moveIDs, o.id)
				moveIdx = append(moveIdx, int32(c.Index))           //nolint:gosec // chunk counts are small
				moveStart = append(moveStart, int32(c.StartOffset)) //nolint:gosec // offsets fit the int column
				moveEnd = append(moveEnd, int32(c.EndOffset))       //nolint:gosec // offsets fit the int column
				moveTk = append(moveTk, int32(c.TokenCount))        //nolint:gosec // token counts are small
				movePaths = append(movePaths, path)
			}
			continue
		}
		id := uuid.Must(uuid.NewV7())
		insert = append(insert, []any{id, project, document, c.Index, c.Text, sum, c.StartOffset, c.EndOffset, path, c.TokenCount, now})
		jobs = append(jobs, []any{uuid.Must(uuid.NewV7()), project, now, now, now, id, parent})
	}
	for i, c := range old {
		if !used[i] {
			gone = append(gone, c.id)
			goneEmbedded = goneEmbedded || c.embedded
		}
	}
	res.inserted, res.removed = len(insert), len(gone)
	if len(gone) > 0 {
		if _, err := tx.Exec(ctx, `DELETE FROM document_chunks WHERE id = ANY($1)`, gone); err != nil {
			return res, fmt.Errorf("delete old chunks: %w", err)
		}
		if goneEmbedded {
			if err := vectorindex.Removed(ctx, tx, project, vectorindex.KindChunks); err != nil {
				return res, err
			}
		}
	}
	if len(moveIDs) > 0 {
		// (document_id, chunk_index) is checked row by row: park the moved
		// chunks on negative indexes first, so that no two collide midway.
		if _, err := tx.Exec(ctx, `UPDATE document_chunks SET chunk_index = -1 - chunk_index WHERE id = ANY($1)`, moveIDs); err != nil {
			return res, fmt.Errorf("renumber chunks: %w", err)
		}
		batch := &pgx.Batch{}
		for i, id := range moveIDs {
			batch.Queue(`UPDATE document_chunks SET chunk_index = $2, start_offset = $3, end_offset = $4, token_count = $5, heading_path = $6 WHERE id = $1`,
				id, moveIdx[i], moveStart[i], moveEnd[i], moveTk[i], movePaths[i])
		}
		if err := tx.SendBatch(ctx, batch).Close(); err != nil {
			return res, fmt.Errorf("renumber chunks: %w", err)
		}
	}
	if len(insert) == 0 {
		return res, nil
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"document_chunks"},
		[]string{"id", "project_id", "document_id", "chunk_index", "text", "content_sha256", "start_offset", "end_offset", "heading_path", "token_count", "created_at"},
		pgx.CopyFromRows(insert)); err != nil {
		return res, fmt.Errorf("insert chunks: %w", err)
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"chunk_embedding_jobs"},
		[]string{"id", "project_id", "run_at", "created_at", "updated_at", "chunk_id", "trace_parent"},
		pgx.CopyFromRows(jobs)); err != nil {
		return res, fmt.Errorf("queue chunk embeddings: %w", err)
	}
	return res, nil
}

// chunksEmbeddedWith returns which of ids already carry a vector of model.
func chunksEmbeddedWith(ctx context.Context, db postgres.DBTX, ids []uuid.UUID, model string) (map[uuid.UUID]bool, error) {
	rows, err := db.Query(ctx, `SELECT id FROM document_chunks WHERE id = ANY($1) AND embedded_at IS NOT NULL AND embedding_model = $2`, ids, model)
	if err != nil {
		return nil, fmt.Errorf("load embedded chunks: %w", err)
	}
	set, err := postgres.CollectIDSet(rows)
	if err != nil {
		return nil, fmt.Errorf("load embedded chunks: %w", err)
	}
	return set, nil
}

// chunksToExtract loads a document's chunks in order: all of them, or only
// those not extracted yet.
func chunksToExtract(ctx context.Context, db postgres.DBTX, project, document uuid.UUID, onlyNew bool) ([]ChunkText, error) {
	rows, _ := db.Query(ctx, `SELECT id, chunk_index, text, token_count FROM document_chunks
		WHERE project_id = $1 AND document_id = $2 AND (NOT $3 OR extracted_at IS NULL) ORDER BY chunk_index`, project, document, onlyNew)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[ChunkText])
	if err != nil {
		return nil, fmt.Errorf("load chunks to extract: %w", err)
	}
	return out, nil
}

func chunksMarkExtracted(ctx context.Context, db postgres.DBTX, project uuid.UUID, ids []uuid.UUID, now time.Time) error {
	if len(ids) == 0 {
		return nil
	}
	if _, err := db.Exec(ctx, `UPDATE document_chunks SET extracted_at = $3 WHERE project_id = $1 AND id = ANY($2)`, project, ids, now); err != nil {
		return fmt.Errorf("mark chunks extracted: %w", err)
	}
	return nil
}

// documentLockForParse locks a document for the transaction that stores
// its parse (one parse of a document at a time) and returns its status and
// integration.
func documentLockForParse(ctx context.Context, tx pgx.Tx, id uuid.UUID) (parseLock, error) {
	l, err := postgres.One[parseLock](ctx, tx, ErrNotFound, `SELECT status, datasource_id FROM documents WHERE id = $1 FOR NO KEY UPDATE`, id)
	if err != nil {
		return parseLock{}, fmt.Errorf("lock document: %w", err)
	}
	return l, nil
}

// parseLock is what a parse needs of the document it locked: its status,
// and its integration when it was synced from one.
type parseLock struct {
	Status       string     `db:"status"`
	DatasourceID *uuid.UUID `db:"datasource_id"`
}

func parseJobInsert(ctx context.Context, db postgres.DBTX, project, document uuid.UUID, now time.Time) error {
	_, err := db.Exec(ctx, `INSERT INTO document_parsing_jobs (id, project_id, run_at, created_at, updated_at, document_id, trace_parent)
		VALUES ($1, $2, $3, $3, $3, $4, $5)`, uuid.Must(uuid.NewV7()), project, now, document, jobqueue.TraceParent(ctx))
	if err != nil {
		return fmt.Errorf("queue parsing: %w", err)
	}
	return nil
}

// jobsOfDocument lists the unfinished jobs of the pipeline's queues that
// work on a document.
func jobsOfDocument(ctx context.Context, db postgres.DBTX, document uuid.UUID) (map[string][]uuid.UUID, error) {
	rows, err := db.Query(ctx, `
		SELECT 'document_parsing', id FROM document_parsing_jobs WHERE document_id = $1 AND status IN ('queued', 'running')
		UNION ALL SELECT 'chunk_embedding', j.id FROM chunk_embedding_jobs j JOIN document_chunks c ON c.id = j.chunk_id
		  WHERE c.document_id = $1 AND j.status = 'running'`, document)
	if err != nil {
		return nil, fmt.Errorf("jobs of document: %w", err)
	}
	defer rows.Close()
	out := map[string][]uuid.UUID{}
	for rows.Next() {
		var q string
		var id uuid.UUID
		if err := rows.Scan(&q, &id); err != nil {
			return nil, fmt.Errorf("jobs of document: %w", err)
		}
		out[q] = append(out[q], id)
	}
	return out, rows.Err()
}

// documentStatuses is the status of each of ids that is a document of
// project.
func documentStatuses(ctx context.Context, db postgres.DBTX, project uuid.UUID, ids []uuid.UUID) (map[uuid.UUID]string, error) {
	return documentColumn(ctx, db, "status", project, ids)
}

func documentFilenames(ctx context.Context, db postgres.DBTX, project uuid.UUID, ids []uuid.UUID) (map[uuid.UUID]string, error) {
	return documentColumn(ctx, db, "filename", project, ids)
}

// documentColumn reads one text column (a constant name) of each of ids
// that is a document of project.
func documentColumn(ctx context.Context, db postgres.DBTX, column string, project uuid.UUID, ids []uuid.UUID) (map[uuid.UUID]string, error) {
	rows, _ := db.Query(ctx, `SELECT id, `+column+` FROM documents WHERE project_id = $1 AND id = ANY($2)`, project, ids)
	out, err := postgres.CollectMap[uuid.UUID, string](rows)
	if err != nil {
		return nil, fmt.Errorf("read document %ss: %w", column, err)
	}
	return out, nil
}

func documentProject(ctx context.Context, db postgres.DBTX, id uuid.UUID) (uuid.UUID, error) {
	return postgres.One[uuid.UUID](ctx, db, ErrNotFound, `SELECT project_id FROM documents WHERE id = $1`, id)
}
