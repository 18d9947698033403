package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func (s *testServer) ops(method, path, body string) response {
	s.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = bytes.NewReader([]byte(body))
	}
	req, err := http.NewRequestWithContext(context.Background(), method, "http://"+s.m.OpsAddr()+path, rd)
	require.NoError(s.t, err)
	res, err := http.DefaultClient.Do(req)
	require.NoError(s.t, err)
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return response{Status: res.StatusCode, Header: res.Header, Body: raw}
}

func TestJobMetrics(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, org := s.defaultProject()
	var other idBody
	s.must(201, "POST", "/api/projects", s.admin, map[string]any{"name": "other", "orgId": org}).Decode(t, &other)
	userID, user := s.newUser("u@example.com", []string{"admin:read"}, "")
	s.addMember(other.ID, userID, "viewer")
	_, noScope := s.newMember("n@example.com", []string{"documents:read"}, project, "viewer")

	d := s.must(201, "POST", "/api/documents", s.admin, map[string]any{"filename": "a.md", "content": "# A\n\nSome text about things."},
		header{"X-Project-ID", project}).JSON(t)
	s.waitDocument(project, d["id"].(string))

	type metrics struct {
		Queues []struct {
			Queue      string `json:"queue"`
			Pending    int64  `json:"pending"`
			Processing int64  `json:"processing"`
			Completed  int64  `json:"completed"`
			Failed     int64  `json:"failed"`
			Total      int64  `json:"total"`
			LastHour   int64  `json:"last_hour"`
			Last24     int64  `json:"last_24_hours"`
		} `json:"queues"`
		Timestamp string `json:"timestamp"`
	}
	var m metrics
	// The job rows are marked completed just after the document's data is
	// written.
	require.Eventually(t, func() bool {
		s.must(200, "GET", "/api/metrics/jobs?projectId="+project, s.admin, nil).Decode(t, &m)
		for _, q := range m.Queues {
			if (q.Queue == "chunk_embedding" || q.Queue == "document_parsing") && (q.Pending > 0 || q.Processing > 0) {
				return false
			}
		}
		return true
	}, 5*time.Second, 10*time.Millisecond)
	_, err := time.Parse(time.RFC3339Nano, m.Timestamp)
	require.NoError(t, err)
	byQueue := map[string]int64{}
	for _, q := range m.Queues {
		byQueue[q.Queue] = q.Completed
		if q.Queue == "document_parsing" {
			require.EqualValues(t, 1, q.Total)
			require.EqualValues(t, 1, q.LastHour)
			require.EqualValues(t, 1, q.Last24)
		}
	}
	require.EqualValues(t, 1, byQueue["document_parsing"])
	names := []string{}
	for _, q := range m.Queues {
		names = append(names, q.Queue)
	}
	require.ElementsMatch(t, []string{"document_parsing", "chunk_embedding", "object_extraction", "graph_embedding", "email", "integration_sync", "schema_discovery", "agent_run"}, names)
	for _, q := range m.Queues {
		if q.Queue == "object_extraction" {
			require.EqualValues(t, 1, q.Total, "parsing queued the extraction")
		}
	}
	require.Positive(t, byQueue["chunk_embedding"])

	// Another project's view is empty; scoping rules apply.
	s.must(200, "GET", "/api/metrics/jobs?projectId="+other.ID, user, nil).Decode(t, &m)
	for _, q := range m.Queues {
		require.Zero(t, q.Total, q.Queue)
	}
	s.must(404, "GET", "/api/metrics/jobs?projectId="+project, user, nil)
	s.must(404, "GET", "/api/metrics/jobs?projectId=nope", user, nil)
	require.Contains(t, s.must(400, "GET", "/api/metrics/jobs", user, nil).Detail(t), "projectId")
	s.must(200, "GET", "/api/metrics/jobs", s.admin, nil)
	s.must(401, "GET", "/api/metrics/jobs", "", nil)
	s.must(403, "GET", "/api/metrics/jobs?projectId="+project, noScope, nil)
	s.must(404, "GET", "/api/metrics/jobs?projectId="+other.ID, noScope, nil) // invisible: 404 before 403, as on every route
}

func TestEmbeddingWorkerControl(t *testing.T) {
	t.Parallel()
	a := newServer(t)
	b := startServer(t, a.dbURL)
	project, _ := a.defaultProject()

	st := a.ops("GET", "/api/embeddings/status", "").JSON(t)
	require.Equal(t, false, st["paused"])
	require.Contains(t, st["queues"], "chunk_embedding")
	require.Contains(t, st["queues"], "graph_embedding")

	// Bad input.
	for _, body := range []string{`{"batchSize": 0}`, `{"batchSize": 1025}`, `{"concurrency": 65}`, `{}`, `{"batch": 2}`, `nope`} {
		r := a.ops("PATCH", "/api/embeddings/config", body)
		require.Equal(t, 400, r.Status, body)
		require.NotEmpty(t, r.Detail(t))
	}

	// Config set on a reaches b within a second.
	r := a.ops("PATCH", "/api/embeddings/config", `{"batchSize": 7, "concurrency": 3}`)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	require.Eventually(t, func() bool {
		st := b.ops("GET", "/api/embeddings/status", "").JSON(t)
		return st["batchSize"] == float64(7) && st["concurrency"] == float64(3)
	}, time.Second, 10*time.Millisecond)

	// Pause on b: no process embeds; resume on a: the backlog is worked.
	require.Equal(t, 200, b.ops("POST", "/api/embeddings/pause", "").Status)
	require.Eventually(t, func() bool { return a.ops("GET", "/api/embeddings/status", "").JSON(t)["paused"] == true }, time.Second, 10*time.Millisecond)
	d := a.must(201, "POST", "/api/documents", a.admin, map[string]any{"filename": "p.md", "content": "# Paused\n\nText waiting for embeddings."},
		header{"X-Project-ID", project}).JSON(t)
	var doc docBody
	require.Eventually(t, func() bool {
		a.must(200, "GET", "/api/documents/"+d["id"].(string), a.admin, nil, header{"X-Project-ID", project}).Decode(t, &doc)
		return doc.Status == "parsed"
	}, 10*time.Second, 20*time.Millisecond)
	time.Sleep(300 * time.Millisecond) // give a paused worker the chance to misbehave
	a.must(200, "GET", "/api/documents/"+d["id"].(string), a.admin, nil, header{"X-Project-ID", project}).Decode(t, &doc)
	require.Zero(t, doc.EmbeddedChunks)
	st = a.ops("GET", "/api/embeddings/status", "").JSON(t)
	require.Positive(t, st["queues"].(map[string]any)["chunk_embedding"].(map[string]any)["pending"])

	require.Equal(t, 200, a.ops("POST", "/api/embeddings/resume", "").Status)
	a.waitDocument(project, d["id"].(string))
	require.Eventually(t, func() bool {
		return b.ops("GET", "/api/embeddings/status", "").JSON(t)["throughputLastMinute"].(float64) > 0
	}, 5*time.Second, 20*time.Millisecond)
}
