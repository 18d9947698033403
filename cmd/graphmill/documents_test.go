package main

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/config"
)

func buildTestDOCX(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, err := zw.Create("[Content_Types].xml")
	require.NoError(t, err)
	_, _ = io.WriteString(w, `<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>`)
	w, err = zw.Create("word/document.xml")
	require.NoError(t, err)
	_, _ = io.WriteString(w, `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>`+
		`<w:p><w:pPr><w:pStyle w:val="Heading1"/></w:pPr><w:r><w:t>Quarterly report</w:t></w:r></w:p>`+
		`<w:p><w:r><w:t>Revenue grew in every region, led by the northern offices.</w:t></w:r></w:p>`+
		`</w:body></w:document>`)
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

// uploadFile sends a multipart upload.
func (s *testServer) uploadFile(token, project, filename, contentType string, data []byte) response {
	s.t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	h := make(map[string][]string)
	h["Content-Disposition"] = []string{`form-data; name="file"; filename="` + filename + `"`}
	if contentType != "" {
		h["Content-Type"] = []string{contentType}
	}
	part, err := mw.CreatePart(h)
	require.NoError(s.t, err)
	_, _ = part.Write(data)
	require.NoError(s.t, mw.Close())
	req, err := http.NewRequestWithContext(context.Background(), "POST", s.base+"/api/documents", &body)
	require.NoError(s.t, err)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("X-Project-ID", project)
	res, err := s.client.Do(req)
	require.NoError(s.t, err)
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return response{Status: res.StatusCode, Header: res.Header, Body: raw}
}

type docBody struct {
	ID             string `json:"id"`
	Status         string `json:"status"`
	Error          string `json:"error"`
	Format         string `json:"format"`
	ChunkCount     int    `json:"chunkCount"`
	EmbeddedChunks int    `json:"embeddedChunks"`
	Duplicate      bool   `json:"duplicate"`
}

// waitDocument waits until the document leaves "parsing" and, when parsed,
// until every chunk is embedded.
func (s *testServer) waitDocument(project, id string) docBody {
	s.t.Helper()
	var d docBody
	require.Eventually(s.t, func() bool {
		s.must(200, "GET", "/api/documents/"+id, s.admin, nil, header{"X-Project-ID", project}).Decode(s.t, &d)
		return d.Status == "failed" || (d.Status == "parsed" && d.EmbeddedChunks == d.ChunkCount)
	}, 20*time.Second, 20*time.Millisecond)
	return d
}

func TestDocumentPipelineFormats(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	frames, _ := s.openStream(s.admin, 0)
	pdf, err := os.ReadFile("../../internal/document/testdata/hello.pdf")
	require.NoError(t, err)
	long := "# Guide\n\n## Install\n\n"
	for range 200 {
		long += "Graphmill parses documents into chunks and embeds every chunk for search. "
	}
	cases := []struct {
		name, filename, ct string
		data               []byte
		format, contains   string
	}{
		{"markdown", "guide.md", "text/markdown", []byte(long + "\n\n## Usage\n\nRun make run.\n"), "markdown", "Run make run."},
		{"html", "page.html", "text/html", []byte(`<html><head><script>x()</script></head><body><h1>Title</h1><p>Hello <b>web</b> page.</p></body></html>`), "html", "Hello web page."},
		{"pdf", "hello.pdf", "application/pdf", pdf, "pdf", "quick brown fox"},
		{"docx", "report.docx", "", buildTestDOCX(t), "docx", "Revenue grew"},
	}
	for _, c := range cases {
		r := s.uploadFile(s.admin, project, c.filename, c.ct, c.data)
		require.Equal(t, 201, r.Status, "%s: %s", c.name, r.Body)
		var d docBody
		r.Decode(t, &d)
		require.Contains(t, []string{"parsing", "parsed"}, d.Status) // a fast worker may already be done
		d = s.waitDocument(project, d.ID)
		require.Equal(t, "parsed", d.Status, "%s: %s", c.name, d.Error)
		require.Equal(t, c.format, d.Format)
		require.Positive(t, d.ChunkCount)

		var chunks struct {
			Data []struct {
				Text           string   `json:"text"`
				TokenCount     int      `json:"tokenCount"`
				HeadingPath    []string `json:"headingPath"`
				EmbeddingModel string   `json:"embeddingModel"`
				EmbeddingDim   int      `json:"embeddingDim"`
			} `json:"data"`
			Total int `json:"total"`
		}
		s.must(200, "GET", "/api/documents/"+d.ID+"/chunks?limit=200", s.admin, nil, header{"X-Project-ID", project}).Decode(t, &chunks)
		require.Equal(t, d.ChunkCount, chunks.Total)
		all := ""
		for _, ch := range chunks.Data {
			require.LessOrEqual(t, ch.TokenCount, 512)
			require.Equal(t, "local/feature-hash-v1", ch.EmbeddingModel)
			require.Equal(t, 768, ch.EmbeddingDim)
			all += ch.Text + " "
		}
		require.Contains(t, all, c.contains, c.name)

		// One extraction job was queued for the extraction worker (which
		// may have run it already).
		var n int
		require.NoError(t, s.m.db.pool.QueryRow(context.Background(),
			`SELECT count(*) FROM object_extraction_jobs WHERE document_id = $1 AND job_type = 'full_extraction' AND trigger_type = 'manual'`, d.ID).Scan(&n))
		require.Equal(t, 1, n, c.name)

		// The stream announces the conversion.
		for {
			f := nextEvent(t, frames)
			if f.Data["type"] == "document.converted" && f.Data["data"].(map[string]any)["documentId"] == d.ID {
				break
			}
		}
	}
	// The long Markdown document was split on structure.
	var md struct {
		Data []struct {
			HeadingPath []string `json:"headingPath"`
		} `json:"data"`
	}
	var list struct {
		Data  []docBody `json:"data"`
		Total int       `json:"total"`
	}
	s.must(200, "GET", "/api/documents", s.admin, nil, header{"X-Project-ID", project}).Decode(t, &list)
	require.Equal(t, 4, list.Total)
	mdID := list.Data[3].ID // newest first
	s.must(200, "GET", "/api/documents/"+mdID+"/chunks", s.admin, nil, header{"X-Project-ID", project}).Decode(t, &md)
	require.Greater(t, len(md.Data), 1)
	require.Equal(t, []string{"Guide"}, md.Data[0].HeadingPath)
	require.Equal(t, []string{"Guide", "Install"}, md.Data[1].HeadingPath)
}

func TestDocumentUploadRules(t *testing.T) {
	t.Parallel()
	s := newServer(t, func(c *config.Config) { c.MaxUploadBytes = 1000 })
	project, _ := s.defaultProject()
	_, reader := s.newUser("r@example.com", []string{"documents:read", "documents:write"}, "")
	readerID := ""
	{
		var users pagedBody
		s.must(200, "GET", "/api/superadmin/users?search=r@example.com", s.admin, nil).Decode(t, &users)
		readerID = users.Data[0]["id"].(string)
	}
	_, outsider := s.newUser("o@example.com", []string{"documents:read", "documents:write"}, "")
	hp := header{"X-Project-ID", project}

	// JSON upload, then the same bytes again: the same document, no new job.
	body := map[string]any{"filename": "a.txt", "content": "Alpha beta gamma.", "mimeType": "text/plain"}
	var d1, d2 docBody
	s.must(201, "POST", "/api/documents", s.admin, body, hp).Decode(t, &d1)
	s.must(200, "POST", "/api/documents", s.admin, body, hp).Decode(t, &d2)
	require.Equal(t, d1.ID, d2.ID)
	require.True(t, d2.Duplicate)
	var jobs int
	require.NoError(t, s.m.db.pool.QueryRow(context.Background(), `SELECT count(*) FROM document_parsing_jobs`).Scan(&jobs))
	require.Equal(t, 1, jobs)

	// Auth: no token, no scope, viewer role, other tenant.
	s.must(401, "POST", "/api/documents", "", body, hp)
	s.addMember(project, readerID, "viewer")
	require.Contains(t, s.must(403, "POST", "/api/documents", reader, map[string]any{"filename": "b.txt", "content": "x"}, hp).Detail(t), "editor")
	s.must(200, "GET", "/api/documents/"+d1.ID, reader, nil, hp)
	s.must(404, "GET", "/api/documents/"+d1.ID, outsider, nil, hp)
	s.must(404, "GET", "/api/documents", outsider, nil, hp)
	s.must(404, "DELETE", "/api/documents/"+d1.ID, outsider, nil, hp)
	s.must(400, "GET", "/api/documents", s.admin, nil) // no project

	// Bad input.
	require.Contains(t, s.must(400, "POST", "/api/documents", s.admin, map[string]any{"filename": "", "content": "x"}, hp).Detail(t), "filename")
	require.Contains(t, s.must(400, "POST", "/api/documents", s.admin, map[string]any{"filename": "e.txt", "content": ""}, hp).Detail(t), "empty")
	require.Contains(t, s.must(400, "POST", "/api/documents", s.admin, map[string]any{"filename": "x.exe", "content": "MZ\x02\x01binary", "mimeType": "application/x-msdownload"}, hp).Detail(t), "unsupported")
	s.must(400, "POST", "/api/documents", s.admin, `{"filename": "a.txt", "content": "x", "bogus": 1}`, hp)
	require.Equal(t, 400, s.uploadFile(s.admin, project, "", "text/plain", []byte("x")).Status)
	big := make([]byte, 5000)
	for i := range big {
		big[i] = 'a'
	}
	require.Equal(t, 413, s.uploadFile(s.admin, project, "big.txt", "text/plain", big).Status)
	s.must(404, "GET", "/api/documents/not-a-uuid", s.admin, nil, hp)

	// Delete removes the document, its chunks and jobs.
	s.waitDocument(project, d1.ID)
	s.must(204, "DELETE", "/api/documents/"+d1.ID, s.admin, nil, hp)
	s.must(404, "GET", "/api/documents/"+d1.ID, s.admin, nil, hp)
	s.must(404, "DELETE", "/api/documents/"+d1.ID, s.admin, nil, hp)
	var left int
	require.NoError(t, s.m.db.pool.QueryRow(context.Background(), `SELECT
		(SELECT count(*) FROM document_chunks) + (SELECT count(*) FROM chunk_embedding_jobs) +
		(SELECT count(*) FROM document_parsing_jobs) + (SELECT count(*) FROM object_extraction_jobs)`).Scan(&left))
	require.Zero(t, left)
}

// TestUploadMediaType: an upload that declares no media type, or a
// generic one (curl -F sends application/octet-stream), is stored with its
// extension's type, over multipart, JSON and an integration's items alike
// (the last through document.PutSourced, TestStoredMediaType covers the
// rule); a declared type is kept.
func TestUploadMediaType(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	hp := header{"X-Project-ID", project}
	stored := func(id string) string {
		var mt string
		require.NoError(t, s.m.db.pool.QueryRow(context.Background(), `SELECT mime_type FROM documents WHERE id = $1`, id).Scan(&mt))
		return mt
	}
	upload := func(name, contentType, text string) (id, mimeType string) {
		res := s.uploadFile(s.admin, project, name, contentType, []byte(text))
		require.Equal(t, 201, res.Status, string(res.Body))
		var d struct {
			ID       string `json:"id"`
			MimeType string `json:"mimeType"`
		}
		require.NoError(t, json.Unmarshal(res.Body, &d))
		return d.ID, d.MimeType
	}
	for _, c := range []struct{ name, contentType, want string }{
		{"generic.md", "application/octet-stream", "text/markdown"},
		{"none.md", "", "text/markdown"},
		{"page.html", "application/octet-stream", "text/html"},
		{"declared.md", "text/plain", "text/plain"},
		{"noext", "application/octet-stream", "application/octet-stream"},
	} {
		id, mt := upload(c.name, c.contentType, "# "+c.name+"\n\nSome words about "+c.name+".\n")
		require.Equal(t, c.want, mt, c.name)
		require.Equal(t, c.want, stored(id), c.name)
	}
	var d struct {
		ID       string `json:"id"`
		MimeType string `json:"mimeType"`
	}
	s.must(201, "POST", "/api/documents", s.admin, map[string]any{"filename": "json.txt", "content": "Plain words."}, hp).Decode(t, &d)
	require.Equal(t, "text/plain", d.MimeType)
	require.Equal(t, "text/plain", stored(d.ID))
}

func TestCorruptDocumentFailsPermanently(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	frames, stop := s.openStream(s.admin, 0)
	defer stop()
	r := s.uploadFile(s.admin, project, "broken.pdf", "application/pdf", []byte("%PDF-1.4\nthis is not really a pdf"))
	require.Equal(t, 201, r.Status, "%s", r.Body)
	var d docBody
	r.Decode(t, &d)
	d = s.waitDocument(project, d.ID)
	require.Equal(t, "failed", d.Status)
	require.NotEmpty(t, d.Error)
	var attempt, retries int
	var status string
	require.NoError(t, s.m.db.pool.QueryRow(context.Background(),
		`SELECT status, attempt, retry_count FROM document_parsing_jobs WHERE document_id = $1`, d.ID).Scan(&status, &attempt, &retries))
	require.Equal(t, "failed", status)
	require.Equal(t, 1, attempt, "a permanent error is not retried")
	require.Zero(t, retries)

	// The failure is announced as job.completed with status failed.
	for {
		f := nextEvent(t, frames)
		data, _ := f.Data["data"].(map[string]any)
		if f.Data["type"] == "job.completed" && data["queue"] == "document_parsing" {
			require.Equal(t, "failed", data["status"])
			require.NotEmpty(t, data["error"])
			break
		}
	}
}

// Running a document's parsing again (as after a crash between its writes
// and its completion) replaces its chunks: no duplicates, no second
// extraction job; and every finished job is announced on the stream.
func TestReparseLeavesNoDuplicates(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	// The extraction job stays queued, so that parsing again must not add one.
	require.NoError(t, s.m.jobs.Pause(context.Background(), "object_extraction"))
	project, _ := s.defaultProject()
	frames, _ := s.openStream(s.admin, 0)
	content := "# Title\n\n" + strings.Repeat("Chunks must not be duplicated when parsing runs twice. ", 120)
	var d docBody
	s.must(201, "POST", "/api/documents", s.admin, map[string]any{"filename": "r.md", "content": content}, header{"X-Project-ID", project}).Decode(t, &d)
	first := s.waitDocument(project, d.ID)
	require.Greater(t, first.ChunkCount, 1)

	// job.completed for the parsing job.
	for {
		f := nextEvent(t, frames)
		data, _ := f.Data["data"].(map[string]any)
		if f.Data["type"] == "job.completed" && data["queue"] == "document_parsing" {
			require.Equal(t, "completed", data["status"])
			break
		}
	}

	ctx := context.Background()
	pool := s.m.db.pool
	_, err := pool.Exec(ctx, `UPDATE document_parsing_jobs SET status = 'queued', run_at = now(), completed_at = NULL WHERE document_id = $1`, d.ID)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `SELECT pg_notify('jobqueue_document_parsing', '')`)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		var attempt int
		var status string
		require.NoError(t, pool.QueryRow(ctx, `SELECT attempt, status FROM document_parsing_jobs WHERE document_id = $1`, d.ID).Scan(&attempt, &status))
		return attempt == 2 && status == "completed"
	}, 10*time.Second, 20*time.Millisecond)
	again := s.waitDocument(project, d.ID)
	require.Equal(t, first.ChunkCount, again.ChunkCount)
	var rows, distinct, extraction int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*), count(DISTINCT chunk_index),
		(SELECT count(*) FROM object_extraction_jobs WHERE document_id = $1)
		FROM document_chunks WHERE document_id = $1`, d.ID).Scan(&rows, &distinct, &extraction))
	require.Equal(t, first.ChunkCount, rows)
	require.Equal(t, rows, distinct)
	require.Equal(t, 1, extraction)
}

// TestUploadUnsupportedNamesFormat: an upload of a format Graphmill does
// not read is 400 naming what was found (the media type, else the
// extension) and the formats it reads; the detail said only
// "unsupported document format".
func TestUploadUnsupportedNamesFormat(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	const formats = " (supported: text, Markdown, HTML, PDF and DOCX)"
	r := s.uploadFile(s.admin, project, "picture.png", "", []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"))
	require.Equal(t, 400, r.Status, "%s", r.Body)
	require.Equal(t, "unsupported document format: .png"+formats, r.Detail(t))
	r = s.must(400, "POST", "/api/documents", s.admin, map[string]any{"filename": "x.exe", "content": "MZ\x02\x01binary", "mimeType": "application/x-msdownload"}, header{"X-Project-ID", project})
	require.Equal(t, "unsupported document format: application/x-msdownload"+formats, r.Detail(t))
}
