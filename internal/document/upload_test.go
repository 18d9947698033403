package document

import (
	"bytes"
	"context"
	"crypto/sha256"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/pgtest"
)

func TestSpool(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	data := bytes.Repeat([]byte("spooled bytes "), 10_000)
	sp, err := NewSpool(dir, iotest.HalfReader(bytes.NewReader(data)), int64(len(data)))
	require.NoError(t, err)
	require.Equal(t, int64(len(data)), sp.Size())
	require.Equal(t, sha256.Sum256(data), sp.SHA256())
	got, err := io.ReadAll(io.NewSectionReader(sp, 0, sp.Size()))
	require.NoError(t, err)
	require.Equal(t, data, got)
	require.NoError(t, sp.Close())

	_, err = NewSpool(dir, bytes.NewReader(data), int64(len(data))-1)
	require.ErrorIs(t, err, ErrTooLarge)
	_, err = NewSpool(dir, iotest.ErrReader(io.ErrUnexpectedEOF), 10)
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	left, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, left, "no spool file outlives its upload")

	// The spool directory failing is the server's fault, not the body's.
	missing := filepath.Join(dir, "missing")
	_, err = NewSpool(missing, bytes.NewReader(data), int64(len(data)))
	require.ErrorIs(t, err, ErrSpool)
	require.ErrorContains(t, CheckSpoolDir(missing), "upload spool directory")
	require.NoError(t, CheckSpoolDir(dir))
	left, err = os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, left, "the check leaves nothing behind")

	s := strings.Repeat("a string of content ", 9000)
	c := StringContent(s)
	require.Equal(t, int64(len(s)), c.Size())
	require.Equal(t, sha256.Sum256([]byte(s)), c.SHA256())
}

// TestDocumentInsertSameBytes: the insert streams the content with COPY;
// when the project got the same bytes meanwhile (a concurrent upload that
// committed first), it reports false and leaves the transaction usable.
func TestDocumentInsertSameBytes(t *testing.T) {
	t.Parallel()
	pool := pgtest.New(t)
	ctx := context.Background()
	org, project := uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())
	now := time.Date(2026, 3, 4, 5, 6, 7, 891_234_000, time.UTC)
	_, err := pool.Exec(ctx, `INSERT INTO orgs (id, name, created_at, updated_at) VALUES ($1, 'o', $2, $2)`, org, now)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `INSERT INTO projects (id, org_id, name, created_at, updated_at) VALUES ($1, $2, 'p', $3, $3)`, project, org, now)
	require.NoError(t, err)

	data := bytes.Repeat([]byte{0, 1, 2, 255, 'x'}, 100_000) // bytea keeps any byte
	c := bytesContent(data)
	sum := c.SHA256()
	u := Upload{ProjectID: project, Filename: "née.bin", MimeType: "text/plain"}
	first, second := uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())

	tx1, err := pool.Begin(ctx)
	require.NoError(t, err)
	ok, err := documentInsert(ctx, tx1, first, u, c, sum[:], now)
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, tx1.Commit(ctx))

	tx2, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx2.Rollback(ctx) }()
	ok, err = documentInsert(ctx, tx2, second, u, c, sum[:], now)
	require.NoError(t, err)
	require.False(t, ok)
	id, found, err := documentIDBySum(ctx, tx2, project, sum[:])
	require.NoError(t, err, "the transaction is still usable")
	require.True(t, found)
	require.Equal(t, first, id)
	require.NoError(t, tx2.Commit(ctx))

	var (
		filename, mimeType, status string
		size                       int64
		content, storedSum         []byte
		createdBy                  *uuid.UUID
		createdAt                  time.Time
	)
	require.NoError(t, pool.QueryRow(ctx, `SELECT filename, mime_type, status, size_bytes, content, sha256, created_by, created_at
		FROM documents WHERE id = $1`, first).Scan(&filename, &mimeType, &status, &size, &content, &storedSum, &createdBy, &createdAt))
	require.Equal(t, "née.bin", filename)
	require.Equal(t, "text/plain", mimeType)
	require.Equal(t, StatusParsing, status)
	require.Equal(t, int64(len(data)), size)
	require.Equal(t, data, content)
	require.Equal(t, sum[:], storedSum)
	require.Nil(t, createdBy)
	require.True(t, now.Equal(createdAt), "%s", createdAt)
	var n int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM documents`).Scan(&n))
	require.Equal(t, 1, n)

	// A NUL in a text column is refused by PostgreSQL: the service refuses
	// such names first.
	svc := &Service{pool: pool, now: func() time.Time { return now }}
	_, err = svc.Upload(ctx, Upload{ProjectID: project, Filename: "a\x00.txt", Data: []byte("x")})
	require.Equal(t, errs.Invalid, errs.CodeOf(err))
	require.Contains(t, err.Error(), "NUL")
}
