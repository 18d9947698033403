package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/stretchr/testify/require"
)

// TestIntegrationSyncS3: a bucket of an in-process S3 server (gofakes3),
// synced through the whole server, becomes parsed, extracted, searchable
// documents (only under the prefix); a re-sync of the unchanged bucket
// moves nothing; one removed object deletes its document and nothing else
// moves.
func TestIntegrationSyncS3(t *testing.T) {
	t.Parallel()
	backend := s3mem.New()
	require.NoError(t, backend.CreateBucket("kb-docs"))
	srv := httptest.NewServer(gofakes3.New(backend).Server())
	t.Cleanup(srv.Close)
	put := func(key, body string) {
		meta := map[string]string{"Last-Modified": time.Now().UTC().Format(http.TimeFormat), "Content-Type": "text/markdown"}
		_, err := backend.PutObject("kb-docs", key, meta, strings.NewReader(body), int64(len(body)), nil)
		require.NoError(t, err)
	}
	put("docs/orbit.md", "# Orbit\n\nOrbit was started by Maria Gonzalez at Northwind Labs in Berlin with the tamarisque engine.\n")
	put("docs/team.md", "# Team\n\nDavid Chen works for Acme Corporation in Toronto.\n")
	put("docs/install.md", "# Install\n\nPriya Raman wrote the installer at Contoso Systems in Madrid.\n")
	put("other/skip.md", "# Skipped\n\nOutside the prefix.\n")

	s := newServer(t, withEgressAllow("127.0.0.0/8"))
	project, _ := s.defaultProject()
	s.extractionSetThreshold(project, 0)
	in := s.createIntegration(project, "bucket", "s3", map[string]any{
		"endpoint": srv.Listener.Addr().String(), "bucket": "kb-docs", "prefix": "docs/", "use_ssl": false, "region": "us-east-1",
		"access_key_id": "AKIDGRAPHMILL", "secret_access_key": "s3cr3t-value",
	})

	docs := in.firstSync(3, "tamarisque")
	require.Contains(t, docs, "docs/team.md")

	before := in.resyncUnchanged()

	_, err := backend.DeleteObject("kb-docs", "docs/install.md")
	require.NoError(t, err)
	require.Equal(t, syncCounts{Total: 2, Processed: 2, Unchanged: 2, Deleted: 1}, in.sync(nil))
	in.requireOnlyMoved(before, nil, []string{"docs/install.md"})
	require.Zero(t, s.extractionCount(`SELECT count(*) FROM documents WHERE id = $1`, docs["docs/install.md"].ID), "the document row is gone")
	require.Zero(t, s.extractionCount(`SELECT count(*) FROM document_chunks WHERE document_id = $1`, docs["docs/install.md"].ID), "its chunks with it")
}
