package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// ingestOne writes one file, name with body, in a new folder and ingests
// the folder with --wait as env's caller; it returns the document's id.
func ingestOne(t *testing.T, env []string, name, body string) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600))
	var ingested []ingestResult
	decodeCLI(t, runCLI(t, env, "ingest", "--wait", "--json", dir), &ingested)
	require.Len(t, ingested, 1)
	require.Equal(t, "parsed", ingested[0].Status)
	return ingested[0].DocumentID
}

// TestCLIIngestFollowsItsDocuments runs ingest --wait through a proxy that
// records the requests: the project's documents are listed once (for the
// hashes), then only the documents sent are read, several at a time (the
// list filtered by their ids), never one GET per document, while the
// project's other documents are never read again.
func TestCLIIngestFollowsItsDocuments(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	var others []string
	for i := range 3 {
		var d idBody
		s.uploadFile(s.admin, project, fmt.Sprintf("other-%d.md", i), "text/markdown", fmt.Appendf(nil, "# Other %d\n\nSomething else.\n", i)).Decode(t, &d)
		others = append(others, d.ID)
	}
	front := s.newCountingFront(t)
	env := front.env(s, t, s.admin, project)

	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.md"), []byte("# A\n\nAda wrote programs.\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "b.md"), []byte("# B\n\nBabbage built engines.\n"), 0o600))
	var results []ingestResult
	decodeCLI(t, runCLI(t, env, "ingest", "--wait", "--json", dir), &results)
	require.Len(t, results, 2)
	sent := map[string]bool{}
	for _, r := range results {
		require.Equal(t, ingestUploaded, r.Result)
		require.Equal(t, "parsed", r.Status)
		require.Equal(t, []string{"completed"}, r.Extraction)
		sent[r.DocumentID] = true
	}

	lists, reads := 0, 0
	read := map[string]bool{}
	for _, q := range front.seen() {
		switch {
		case q.method == "GET" && q.path == "/api/documents" && q.ids == nil:
			lists++
		case q.method == "GET" && q.path == "/api/documents":
			reads++
			for _, id := range q.ids {
				require.True(t, sent[id], "read a document it did not send: %s", id)
				read[id] = true
			}
		}
	}
	require.Equal(t, 1, lists, "%v", front.seen())
	require.Positive(t, reads)
	require.Zero(t, front.count("/api/documents/"), "no GET per document")
	for _, id := range others {
		require.False(t, sent[id], "the project's other document %s reported as sent", id)
		require.False(t, read[id], "the project's other document %s read again", id)
	}
}

// TestCLIIngestSameContentTwice: two files of one folder with the same
// content are one document, sent once; with --wait both rows show that
// document's parse and its extraction jobs (the first row's were lost
// to the second).
func TestCLIIngestSameContentTwice(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	env := append(s.cliEnviron(t, ""), "GRAPHMILL_URL="+s.base, "GRAPHMILL_TOKEN="+s.admin, "GRAPHMILL_PROJECT="+project)
	dir := t.TempDir()
	for _, name := range []string{"a.md", "b.md"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte("# Ada\n\nAda Lovelace wrote programs.\n"), 0o600))
	}
	var results []ingestResult
	decodeCLI(t, runCLI(t, env, "ingest", "--wait", "--json", dir), &results)
	require.Len(t, results, 2)
	require.Equal(t, ingestUploaded, results[0].Result)
	require.Equal(t, ingestUnchanged, results[1].Result)
	require.Equal(t, results[0].DocumentID, results[1].DocumentID)
	for _, r := range results {
		require.Equal(t, "parsed", r.Status, r.Path)
		require.Equal(t, []string{"completed"}, r.Extraction, r.Path)
	}
}

// TestCLIIngestProgressCountsDocuments: a file repeating another one's
// content is one more file but not one more document: the parse, extract
// and embed lines count the two documents (and their chunks) once each.
func TestCLIIngestProgressCountsDocuments(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	env := s.cliEnviron(t, s.admin)

	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"a.md":      "# Ada\n\nAda Lovelace wrote the first program for the Analytical Engine.\n",
		"copy/a.md": "# Ada\n\nAda Lovelace wrote the first program for the Analytical Engine.\n",
		"b.txt":     "Charles Babbage designed the Analytical Engine in London.\n",
	})

	var results []ingestResult
	r := runCLI(t, env, "ingest", "--wait", "--json", dir)
	decodeCLI(t, r, &results)
	require.Len(t, results, 3, r.stdout)
	docs := map[string]int64{}
	for _, res := range results {
		require.Equal(t, "parsed", res.Status, "%+v", res)
		docs[res.DocumentID] = res.Chunks
	}
	require.Len(t, docs, 2, "the copy is the same document")
	chunks := int64(0)
	for _, n := range docs {
		chunks += n
	}
	for _, phase := range []string{"upload: 3 file(s)", "parse: 2/2", "extract: 2/2", fmt.Sprintf("embed: %d/%d", chunks, chunks)} {
		require.Contains(t, r.stderr, phase)
	}
}
