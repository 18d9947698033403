package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// seenRequest is one request a countingFront passed on.
type seenRequest struct {
	method, path string
	ids          []string // the ids filter, sorted
}

// countingFront is a proxy in front of s that records the requests it
// passes on; seen returns those recorded so far, reset empties them.
type countingFront struct {
	url  string
	mu   sync.Mutex
	reqs []seenRequest
}

// newCountingFront starts a countingFront for the test.
func (s *testServer) newCountingFront(t *testing.T) *countingFront {
	t.Helper()
	target, err := url.Parse(s.base)
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.FlushInterval = -1
	f := &countingFront{}
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ids []string
		if v := r.URL.Query().Get("ids"); v != "" {
			ids = strings.Split(v, ",")
			slices.Sort(ids)
		}
		f.mu.Lock()
		f.reqs = append(f.reqs, seenRequest{method: r.Method, path: r.URL.Path, ids: ids})
		f.mu.Unlock()
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	f.url = front.URL
	return f
}

// seen is the requests recorded so far.
func (f *countingFront) seen() []seenRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.reqs)
}

// reset forgets the requests recorded so far.
func (f *countingFront) reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reqs = nil
}

// under is the recorded requests whose path starts with prefix.
func (f *countingFront) under(prefix string) []seenRequest {
	var out []seenRequest
	for _, r := range f.seen() {
		if strings.HasPrefix(r.path, prefix) {
			out = append(out, r)
		}
	}
	return out
}

// count is how many of the recorded requests are GETs of path (a prefix
// when path ends with /).
func (f *countingFront) count(path string) int {
	n := 0
	for _, r := range f.seen() {
		if r.method == http.MethodGet && (r.path == path || (strings.HasSuffix(path, "/") && strings.HasPrefix(r.path, path))) {
			n++
		}
	}
	return n
}

// env is a CLI environment talking to the server through f as token, in
// project.
func (f *countingFront) env(s *testServer, t *testing.T, token, project string) []string {
	t.Helper()
	return append(s.cliEnviron(t, ""), "GRAPHMILL_URL="+f.url, "GRAPHMILL_TOKEN="+token, "GRAPHMILL_PROJECT="+project)
}

// TestCLISearchNamesDocuments: search's table names a chunk hit by its
// document's file name, the page's documents read in one request;
// --json prints the server's answer without reading them; a token that
// may not read documents gets the document ids and a warning.
func TestCLISearchNamesDocuments(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	front := s.newCountingFront(t)
	env := front.env(s, t, s.admin, project)
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"engine.md": "# Engine\n\nCharles Babbage designed the Analytical Engine.\n",
		"loom.txt":  "Babbage admired the Jacquard loom and its punched cards.\n",
	})
	var ingested []ingestResult
	decodeCLI(t, runCLI(t, env, "ingest", "--wait", "--json", dir), &ingested)
	names := map[string]string{}
	for _, r := range ingested {
		names[r.DocumentID] = filepath.Base(r.Path)
	}

	front.reset()
	var found struct {
		Data []struct {
			ID         string `json:"id"`
			Target     string `json:"target"`
			DocumentID string `json:"documentId"`
		} `json:"data"`
	}
	decodeCLI(t, runCLI(t, env, "search", "Babbage", "--mode", "keyword", "--json"), &found)
	require.Zero(t, front.count("/api/documents"), "--json reads no document")
	var chunkDocs []string
	chunk := -1
	for i, h := range found.Data {
		if h.Target == "chunk" {
			chunkDocs = append(chunkDocs, h.DocumentID)
			chunk = i
		}
	}
	require.ElementsMatch(t, []string{ingested[0].DocumentID, ingested[1].DocumentID}, chunkDocs, "%+v", found.Data)

	front.reset()
	r := runCLI(t, env, "search", "Babbage", "--mode", "keyword")
	require.NoError(t, r.err, r.stderr)
	for _, h := range found.Data {
		if h.Target == "chunk" {
			require.Regexp(t, `chunk\s+`+h.ID+`\s+`+regexp.QuoteMeta(names[h.DocumentID])+`\s`, r.stdout)
		}
	}
	require.Equal(t, []seenRequest{{method: "GET", path: "/api/documents", ids: sorted(ingested[0].DocumentID, ingested[1].DocumentID)}}, front.under("/api/documents"))

	// Without documents:read: the document ids, and a warning.
	_, searcher := s.newMember("searcher@example.com", []string{"search:read"}, project, "viewer")
	r = runCLI(t, front.env(s, t, searcher, project), "search", "Babbage", "--mode", "keyword")
	require.NoError(t, r.err, r.stderr)
	require.Contains(t, r.stderr, "warning: ")
	require.Contains(t, r.stderr, "documents shown by id")
	require.Regexp(t, `chunk\s+`+found.Data[chunk].ID+`\s+`+found.Data[chunk].DocumentID+`\s`, r.stdout)
}

// TestCLIJobsNamesDocuments: jobs ls names an extraction job's document by
// its file name (the jobs' documents read in one request); --json keeps
// the document id beside it.
func TestCLIJobsNamesDocuments(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	front := s.newCountingFront(t)
	env := front.env(s, t, s.admin, project)
	a := ingestOne(t, env, "ada.md", "# Ada\n\nAda Lovelace wrote the first program.\n")
	b := ingestOne(t, env, "babbage.md", "# Babbage\n\nCharles Babbage designed the engine.\n")

	front.reset()
	r := runCLI(t, env, "jobs", "ls")
	require.NoError(t, r.err, r.stderr)
	require.Regexp(t, `object_extraction\s+completed\s+ada\.md\s`, r.stdout)
	require.Regexp(t, `object_extraction\s+completed\s+babbage\.md\s`, r.stdout)
	require.NotContains(t, r.stdout, a)
	require.Equal(t, []seenRequest{{method: "GET", path: "/api/documents", ids: sorted(a, b)}}, front.under("/api/documents"))

	var jobs []jobRecord
	decodeCLI(t, runCLI(t, env, "jobs", "ls", "--json"), &jobs)
	require.Len(t, jobs, 2)
	byDoc := map[string]string{}
	for _, j := range jobs {
		byDoc[j.DocumentID] = j.FileName
	}
	require.Equal(t, map[string]string{a: "ada.md", b: "babbage.md"}, byDoc)
}

// TestCLIGraphNeighborsReadsOthersAtOnce: graph neighbors reads the
// relationships, then the objects at their other ends in one request
// (each once), never one request per object; --json reads no object.
func TestCLIGraphNeighborsReadsOthersAtOnce(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	hp := header{"X-Project-ID", project}
	front := s.newCountingFront(t)
	env := front.env(s, t, s.admin, project)
	acme := s.graphCreateObject(s.admin, project, map[string]any{"type": "Organization", "name": "Acme"})
	ada := s.graphCreateObject(s.admin, project, map[string]any{"type": "Person", "name": "Ada"})
	charles := s.graphCreateObject(s.admin, project, map[string]any{"type": "Person", "name": "Charles"})
	london := s.graphCreateObject(s.admin, project, map[string]any{"type": "Location", "name": "London"})
	for _, rel := range [][3]string{{"WORKS_FOR", ada, acme}, {"WORKS_FOR", charles, acme}, {"LOCATED_IN", acme, london}, {"FOUNDED", ada, acme}} {
		s.must(201, "POST", "/api/graph/relationships", s.admin, map[string]any{"type": rel[0], "sourceId": rel[1], "targetId": rel[2]}, hp)
	}

	r := runCLI(t, env, "graph", "neighbors", acme)
	require.NoError(t, r.err, r.stderr)
	require.Regexp(t, `WORKS_FOR\s+in\s+`+ada+`\s+Person\s+Ada\n`, r.stdout)
	require.Regexp(t, `FOUNDED\s+in\s+`+ada+`\s+Person\s+Ada\n`, r.stdout)
	require.Regexp(t, `WORKS_FOR\s+in\s+`+charles+`\s+Person\s+Charles\n`, r.stdout)
	require.Regexp(t, `LOCATED_IN\s+out\s+`+london+`\s+Location\s+London\n`, r.stdout)
	require.Equal(t, []seenRequest{
		{method: "GET", path: "/api/graph/objects/" + acme + "/relationships"},
		{method: "GET", path: "/api/graph/objects", ids: sorted(ada, charles, london)},
	}, front.seen())

	front.reset()
	var rels struct {
		Data []json.RawMessage `json:"data"`
	}
	decodeCLI(t, runCLI(t, env, "graph", "neighbors", acme, "--json"), &rels)
	require.Len(t, rels.Data, 4)
	require.Equal(t, []seenRequest{{method: "GET", path: "/api/graph/objects/" + acme + "/relationships"}}, front.seen())
}

// TestCLIIngestReadsFollowedDocumentsAtOnce: one read of ingest's
// follower reads all its unsettled documents in one request (the list
// filtered by their ids, each once though two files share one), never
// one GET per document, and fills their results; settled documents are
// not read again.
func TestCLIIngestReadsFollowedDocumentsAtOnce(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	front := s.newCountingFront(t)
	type upload struct {
		ID        string    `json:"id"`
		CreatedAt time.Time `json:"createdAt"`
	}
	var docs []upload
	for _, name := range []string{"a.md", "b.md", "c.md"} {
		var d upload
		s.uploadFile(s.admin, project, name, "text/markdown", []byte("# "+name+"\n\nSome text about "+name+".\n")).Decode(t, &d)
		docs = append(docs, d)
	}
	for _, d := range docs {
		require.Equal(t, "parsed", s.waitDocument(project, d.ID).Status)
	}

	c := &cli{ctx: t.Context(), stdout: io.Discard, stderr: io.Discard}
	sess, err := c.open(cliConfig{Server: front.url, Token: s.admin, Project: project})
	require.NoError(t, err)
	results := []ingestResult{{Path: "a.md"}, {Path: "b.md"}, {Path: "b-copy.md"}, {Path: "c.md"}}
	for i, d := range []upload{docs[0], docs[1], docs[1], docs[2]} {
		results[i].DocumentID, results[i].created = d.ID, d.CreatedAt
	}
	f := &follower{s: sess, results: results}
	for i := range results {
		f.add(i)
	}
	require.NoError(t, f.read(t.Context()))
	seen := front.seen()
	require.NotEmpty(t, seen)
	require.Equal(t, seenRequest{method: "GET", path: "/api/documents", ids: sorted(docs[0].ID, docs[1].ID, docs[2].ID)}, seen[0])
	require.Zero(t, front.count("/api/documents/"), "no GET per document")
	require.Equal(t, 1, front.count("/api/documents"))
	for _, r := range results {
		require.Equal(t, "parsed", r.Status, r.Path)
		require.Positive(t, r.Chunks, r.Path)
	}

	// Settled documents (parsed, embedded) are not read again.
	for i := range results {
		results[i].EmbeddedChunks = results[i].Chunks
	}
	front.reset()
	require.NoError(t, f.read(t.Context()))
	require.Zero(t, front.count("/api/documents"))
}

// TestCLIJobRecordsOneSpelling: graphmill jobs prints a job of any queue
// with the same fields spelled the same way (id, queue, status,
// projectId, documentId, fileName, subject, error, createdAt), whatever
// its queue's route spells them (errorMsg, errorMessage, error_message,
// created_at), with the route's record whole in record: in ls, watch and
// the project's actions.
func TestCLIJobRecordsOneSpelling(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	env := append(s.cliEnviron(t, s.admin), "GRAPHMILL_PROJECT="+project)
	doc := ingestOne(t, env, "loom.md", "# Loom\n\nJacquard's loom read punched cards.\n")
	disc := s.discStart(s.admin, project, map[string]any{"document_ids": []string{doc}})
	require.NoError(t, runCLI(t, env, "jobs", "watch", "--queue", "schema_discovery", disc).err)
	ctx := t.Context()
	for _, table := range []string{"object_extraction_jobs", "document_parsing_jobs", "discovery_jobs"} {
		_, err := s.m.db.pool.Exec(ctx, `UPDATE `+table+` SET status = 'failed', error_msg = $1, completed_at = now() WHERE project_id = $2`, table+" boom", project)
		require.NoError(t, err)
	}

	fields := []string{"createdAt", "error", "id", "projectId", "queue", "record", "status", "subject"}
	withDoc := append(slices.Clone(fields), "documentId", "fileName")
	slices.Sort(withDoc)
	check := func(r map[string]json.RawMessage, queue, table string, keys []string) {
		t.Helper()
		require.Equal(t, keys, slices.Sorted(maps.Keys(r)), queue)
		var rec jobRecord
		raw, err := json.Marshal(r)
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(raw, &rec))
		require.Equal(t, queue, rec.Queue)
		require.Equal(t, "failed", rec.Status, queue)
		require.Equal(t, project, rec.ProjectID, queue)
		if table != "" {
			require.Equal(t, table+" boom", rec.Error, queue)
		}
		require.False(t, rec.CreatedAt.IsZero(), queue)
		var own struct {
			ID string `json:"id"`
		}
		require.NoError(t, json.Unmarshal(rec.Record, &own))
		require.Equal(t, rec.ID, own.ID, "the route's record, whole")
		if rec.DocumentID != "" {
			require.Equal(t, doc, rec.DocumentID, queue)
			require.Equal(t, "loom.md", rec.FileName, queue)
			require.Equal(t, "loom.md", rec.Subject, queue)
		}
	}
	var extraction string
	for queue, want := range map[string]struct {
		table string
		keys  []string
	}{
		"object_extraction": {"object_extraction_jobs", withDoc},
		"document_parsing":  {"document_parsing_jobs", withDoc},
		// Discovery's list items have no error (the spec's list item).
		"schema_discovery": {"", slices.DeleteFunc(slices.Clone(fields), func(k string) bool { return k == "error" })},
	} {
		var list []map[string]json.RawMessage
		decodeCLI(t, runCLI(t, env, "jobs", "ls", "--queue", queue, "--json"), &list)
		require.Len(t, list, 1, queue)
		check(list[0], queue, want.table, want.keys)
		if queue == "object_extraction" {
			require.NoError(t, json.Unmarshal(list[0]["id"], &extraction))
		}
		r := runCLI(t, env, "jobs", "ls", "--queue", queue)
		require.NoError(t, r.err, queue)
		if want.table != "" {
			require.Contains(t, r.stdout, want.table+" boom", queue)
		}
	}

	// watch (one line for the one status) and retry print the same record.
	r := runCLI(t, env, "jobs", "watch", extraction, "--json")
	require.Equal(t, exitFailed, r.code, "%v", r.err)
	var watched map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &watched), r.stdout)
	check(watched, "object_extraction", "object_extraction_jobs", withDoc)
	r = runCLI(t, env, "jobs", "watch", "--queue", "schema_discovery", disc, "--json")
	require.Equal(t, exitFailed, r.code, "%v", r.err)
	watched = nil
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &watched), r.stdout)
	check(watched, "schema_discovery", "discovery_jobs", fields)
	var retried jobRecord
	decodeCLI(t, runCLI(t, env, "jobs", "retry", extraction, "--json"), &retried)
	require.Equal(t, extraction, retried.ID)
	require.Equal(t, "object_extraction", retried.Queue)
	require.Equal(t, "loom.md", retried.FileName)
}

// TestByIDsChunks: byIDs asks for the distinct ids ("" left out) 200 at
// a time, each batch's size its limit, and keys the records answered by
// their ids; ids not answered are absent.
func TestByIDsChunks(t *testing.T) {
	t.Parallel()
	var ids []string
	for i := range 401 {
		ids = append(ids, fmt.Sprintf("id-%03d", i))
	}
	ids = append(ids, "", ids[0], ids[400])
	var batches [][]string
	got, err := byIDs(ids, func(r string) string { return r }, func(batch []string, limit int64) (*[]string, error) {
		require.Equal(t, int64(len(batch)), limit)
		batches = append(batches, slices.Clone(batch))
		answered := slices.DeleteFunc(slices.Clone(batch), func(id string) bool { return id == "id-007" })
		return &answered, nil
	})
	require.NoError(t, err)
	require.Equal(t, []int{200, 200, 1}, []int{len(batches[0]), len(batches[1]), len(batches[2])})
	require.Equal(t, ids[:401], slices.Concat(batches...))
	require.Len(t, got, 400)
	require.NotContains(t, got, "id-007")
}

// TestCLIIngestFollowedDocumentDeleted: a followed document deleted
// while ingest --wait follows it (absent from the list filtered by the
// ids) ends the read with an error naming its file, as the 404 of a GET
// by id did.
func TestCLIIngestFollowedDocumentDeleted(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	hp := header{"X-Project-ID", project}
	var kept, gone idBody
	s.uploadFile(s.admin, project, "kept.md", "text/markdown", []byte("# Kept\n\nStays.\n")).Decode(t, &kept)
	s.uploadFile(s.admin, project, "gone.md", "text/markdown", []byte("# Gone\n\nDeleted.\n")).Decode(t, &gone)
	s.waitDocument(project, gone.ID)
	s.must(204, "DELETE", "/api/documents/"+gone.ID, s.admin, nil, hp)

	c := &cli{ctx: t.Context(), stdout: io.Discard, stderr: io.Discard}
	sess, err := c.open(cliConfig{Server: s.base, Token: s.admin, Project: project})
	require.NoError(t, err)
	f := &follower{s: sess, results: []ingestResult{{Path: "kept.md", DocumentID: kept.ID}, {Path: "gone.md", DocumentID: gone.ID}}}
	f.add(0)
	f.add(1)
	require.EqualError(t, f.read(t.Context()), "gone.md: document "+gone.ID+" not found (deleted meanwhile?)")
}
