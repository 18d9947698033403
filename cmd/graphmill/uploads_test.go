package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/config"
	"github.com/graphmill/graphmill/internal/pgtest"
)

// documentCount counts the documents of the database.
func (s *testServer) documentCount() int {
	s.t.Helper()
	var n int
	require.NoError(s.t, s.m.db.pool.QueryRow(context.Background(), `SELECT count(*) FROM documents`).Scan(&n))
	return n
}

// postUpload sends body as an upload with contentType.
func (s *testServer) postUpload(project, contentType string, body io.Reader) response {
	s.t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), "POST", s.base+"/api/documents", body)
	require.NoError(s.t, err)
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Authorization", "Bearer "+s.admin)
	req.Header.Set("X-Project-ID", project)
	res, err := s.client.Do(req)
	require.NoError(s.t, err)
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return response{Status: res.StatusCode, Header: res.Header, Body: raw}
}

// TestUploadStreamsToStorage: a multipart upload is stored byte for byte
// with its checksum (it passes through a spool file, which is removed
// afterwards, whatever the outcome); the same bytes again are a duplicate.
func TestUploadStreamsToStorage(t *testing.T) {
	t.Parallel()
	spool := t.TempDir()
	s := newServer(t, func(c *config.Config) { c.UploadSpoolDir = spool; c.MaxUploadBytes = 4 << 20 })
	project, _ := s.defaultProject()
	ctx := context.Background()

	var content bytes.Buffer
	for i := 0; content.Len() < 3<<20; i++ {
		fmt.Fprintf(&content, "Line %d of a large document, streamed to storage.\n", i)
	}
	data := content.Bytes()
	r := s.uploadFile(s.admin, project, "large.txt", "text/plain", data)
	require.Equal(t, 201, r.Status, "%s", r.Body)
	var d docBody
	r.Decode(t, &d)
	sum := sha256.Sum256(data)
	var size int64
	var stored, same bool
	require.NoError(t, s.m.db.pool.QueryRow(ctx, `SELECT size_bytes, sha256 = $2, content = $3 FROM documents WHERE id = $1`,
		d.ID, sum[:], data).Scan(&size, &stored, &same))
	require.Equal(t, int64(len(data)), size)
	require.True(t, stored, "sha256")
	require.True(t, same, "content")
	require.Equal(t, fmt.Sprintf("%x", sum), r.JSON(t)["sha256"])

	again := s.uploadFile(s.admin, project, "again.txt", "text/plain", data)
	require.Equal(t, 200, again.Status, "%s", again.Body)
	require.Equal(t, d.ID, again.JSON(t)["id"])
	require.Equal(t, 1, s.documentCount())

	// A JSON upload's content is stored as its decoded bytes.
	r = s.do("POST", "/api/documents", s.admin, `{"filename": "caf\u00e9.txt", "content": "caf\u00e9 \"quoted\"\n\ttab"}`, header{"X-Project-ID", project})
	require.Equal(t, 201, r.Status, "%s", r.Body)
	want := []byte("café \"quoted\"\n\ttab")
	jsum := sha256.Sum256(want)
	require.NoError(t, s.m.db.pool.QueryRow(ctx, `SELECT sha256 = $2, content = $3 FROM documents WHERE id = $1`,
		r.JSON(t)["id"], jsum[:], want).Scan(&stored, &same))
	require.True(t, stored, "sha256")
	require.True(t, same, "content")
	require.Equal(t, "café.txt", r.JSON(t)["filename"])

	// Too large, and a client that goes away mid-body: nothing stored.
	big := bytes.Repeat([]byte("x"), 5<<20)
	requireProblem(t, s.uploadFile(s.admin, project, "big.txt", "text/plain", big), 413, "payload_too_large")
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		part, _ := mw.CreateFormFile("file", "cut.txt")
		_, _ = part.Write(bytes.Repeat([]byte("y"), 1<<20))
		_ = pw.CloseWithError(io.ErrUnexpectedEOF)
	}()
	req, err := http.NewRequestWithContext(ctx, "POST", s.base+"/api/documents", pr)
	require.NoError(t, err)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+s.admin)
	req.Header.Set("X-Project-ID", project)
	if res, err := s.client.Do(req); err == nil {
		_ = res.Body.Close()
	}
	require.Equal(t, 2, s.documentCount())
	require.Eventually(t, func() bool {
		left, err := os.ReadDir(spool)
		require.NoError(t, err)
		return len(left) == 0
	}, 5*time.Second, 10*time.Millisecond, "spool files are removed")
}

// TestUploadLimits: JSON uploads are bounded lower than multipart ones
// (413 beyond), uploads in progress are bounded per process (429 with
// Retry-After beyond, nothing stored), and file names with NUL are
// refused.
func TestUploadLimits(t *testing.T) {
	t.Parallel()
	s := newServer(t, func(c *config.Config) {
		c.MaxUploadBytes, c.MaxJSONUploadBytes, c.MaxConcurrentUploads = 8000, 2000, 1
	})
	project, _ := s.defaultProject()
	hp := header{"X-Project-ID", project}

	text := strings.Repeat("Bounded uploads. ", 180) // 3060 bytes
	r := s.do("POST", "/api/documents", s.admin, map[string]any{"filename": "a.txt", "content": text}, hp)
	requireProblem(t, r, 413, "payload_too_large")
	require.Zero(t, s.documentCount())
	require.Equal(t, 201, s.uploadFile(s.admin, project, "a.txt", "text/plain", []byte(text)).Status, "multipart takes more")
	s.must(201, "POST", "/api/documents", s.admin, map[string]any{"filename": "b.txt", "content": text[:1500]}, hp)
	require.Equal(t, 2, s.documentCount())

	// NUL in a file name: in JSON (the boundary) and in a multipart
	// header (RFC 2231 encoding).
	r = s.do("POST", "/api/documents", s.admin, `{"filename": "a\u0000.txt", "content": "x"}`, hp)
	require.Contains(t, requireProblem(t, r, 400, "invalid_argument")["detail"], "body.filename")
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	part, err := mw.CreatePart(map[string][]string{"Content-Disposition": {`form-data; name="file"; filename*=UTF-8''a%00b.txt`}})
	require.NoError(t, err)
	_, _ = part.Write([]byte("named with a NUL"))
	require.NoError(t, mw.Close())
	r = s.postUpload(project, mw.FormDataContentType(), &body)
	require.Contains(t, requireProblem(t, r, 400, "invalid_argument")["detail"], "filename")
	require.Equal(t, 2, s.documentCount())

	// One upload in progress (its body still coming) takes the only slot.
	pr, pw := io.Pipe()
	slow := multipart.NewWriter(pw)
	done := make(chan response, 1)
	go func() { done <- s.postUpload(project, slow.FormDataContentType(), pr) }()
	part, err = slow.CreateFormFile("file", "slow.txt")
	require.NoError(t, err)
	_, err = part.Write([]byte("The first half arrives, "))
	require.NoError(t, err)
	var busy response
	require.Eventually(t, func() bool {
		busy = s.do("POST", "/api/documents", s.admin, `{}`, hp) // 400 while a slot is free
		return busy.Status == 429
	}, 5*time.Second, 10*time.Millisecond)
	requireProblem(t, busy, 429, "rate_limited")
	require.Equal(t, "5", busy.Header.Get("Retry-After"))
	requireProblem(t, s.uploadFile(s.admin, project, "c.txt", "text/plain", []byte("Refused while busy.")), 429, "rate_limited")
	require.Equal(t, 2, s.documentCount())

	_, err = part.Write([]byte("then the second half."))
	require.NoError(t, err)
	require.NoError(t, slow.Close())
	require.NoError(t, pw.Close())
	first := <-done
	require.Equal(t, 201, first.Status, "%s", first.Body)
	// The slot is free again.
	require.Equal(t, 201, s.uploadFile(s.admin, project, "c.txt", "text/plain", []byte("Accepted once free.")).Status)
	require.Equal(t, 4, s.documentCount())
}

// TestMissingSpoolDirStopsStart: a spool directory that cannot hold files
// stops the server at start, naming it, instead of failing every upload.
func TestMissingSpoolDirStopsStart(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t, pgtest.NewURL(t))
	cfg.UploadSpoolDir = filepath.Join(t.TempDir(), "missing")
	m := &Main{Config: cfg, Logger: slog.New(slog.DiscardHandler)}
	err := m.Start(context.Background())
	require.ErrorContains(t, err, "upload spool directory")
	require.ErrorContains(t, err, "GRAPHMILL_UPLOAD_SPOOL_DIR")
}
