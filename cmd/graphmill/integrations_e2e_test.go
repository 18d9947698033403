package main

import (
	"slices"
	"time"

	"github.com/stretchr/testify/require"
)

// syncCounts are the counters of a finished sync job.
type syncCounts struct {
	Total     int `json:"totalItems"`
	Processed int `json:"processedItems"`
	Created   int `json:"createdItems"`
	Updated   int `json:"updatedItems"`
	Unchanged int `json:"unchangedItems"`
	Deleted   int `json:"deletedItems"`
	Failed    int `json:"failedItems"`
}

// syncDoc is a synced document as the documents API answers it.
type syncDoc struct {
	ID            string `json:"id"`
	Filename      string `json:"filename"`
	Status        string `json:"status"`
	ChunkCount    int    `json:"chunkCount"`
	DatasourceID  string `json:"datasourceId"`
	ExternalID    string `json:"externalId"`
	SourceURL     string `json:"sourceUrl"`
	SourceVersion string `json:"sourceVersion"`
	SourceTitle   string `json:"sourceTitle"`
}

// syncIntegration is an integration of a whole-server sync test.
type syncIntegration struct {
	s       *testServer
	project string
	name    string
	id      string
}

// createIntegration creates the integration name of provider with config
// through the API.
func (s *testServer) createIntegration(project, name, provider string, config map[string]any) *syncIntegration {
	s.t.Helper()
	r := s.must(201, "POST", "/api/integrations", s.admin, map[string]any{
		"name": name, "display_name": name, "provider_type": provider, "config": config,
	}, header{"X-Project-ID", project})
	id, _ := r.JSON(s.t)["id"].(string)
	require.NotEmpty(s.t, id)
	return &syncIntegration{s: s, project: project, name: name, id: id}
}

// sync starts a sync through the API, waits for its job to complete and
// returns its counters.
func (in *syncIntegration) sync(body any) syncCounts {
	s := in.s
	s.t.Helper()
	var res struct {
		Success bool   `json:"success"`
		Message string `json:"message"`
		JobID   string `json:"job_id"`
	}
	s.must(200, "POST", "/api/integrations/"+in.name+"/sync", s.admin, body, header{"X-Project-ID", in.project}).Decode(s.t, &res)
	require.True(s.t, res.Success, res.Message)
	return in.waitSync(res.JobID)
}

// waitSync waits for the sync job id to finish, requires it completed and
// returns its counters.
func (in *syncIntegration) waitSync(id string) syncCounts {
	s := in.s
	s.t.Helper()
	type row struct {
		syncCounts
		ID     string `json:"id"`
		Status string `json:"status"`
		Error  string `json:"error"`
	}
	var job row
	require.Eventually(s.t, func() bool {
		var list struct {
			Data []row `json:"data"`
		}
		s.must(200, "GET", "/api/superadmin/sync-jobs?projectId="+in.project+"&limit=100", s.admin, nil).Decode(s.t, &list)
		i := slices.IndexFunc(list.Data, func(r row) bool { return r.ID == id })
		if i < 0 {
			return false
		}
		job = list.Data[i]
		return job.Status == "completed" || job.Status == "failed" || job.Status == "cancelled"
	}, 60*time.Second, 50*time.Millisecond, "sync job %s never finished", id)
	require.Equal(s.t, "completed", job.Status, "sync job: %+v", job)
	return job.syncCounts
}

// docs are the integration's documents, by external id.
func (in *syncIntegration) docs() map[string]syncDoc {
	s := in.s
	s.t.Helper()
	var list struct {
		Data []syncDoc `json:"data"`
	}
	s.must(200, "GET", "/api/documents?limit=100", s.admin, nil, header{"X-Project-ID", in.project}).Decode(s.t, &list)
	out := map[string]syncDoc{}
	for _, d := range list.Data {
		if d.DatasourceID == in.id {
			out[d.ExternalID] = d
		}
	}
	return out
}

// extractionJobs counts the extraction jobs of the document doc.
func (in *syncIntegration) extractionJobs(doc string) int {
	in.s.t.Helper()
	return in.s.extractionCount(`SELECT count(*) FROM object_extraction_jobs WHERE document_id = $1`, doc)
}

// firstSync syncs the source for the first time, requires n documents
// created and through the pipeline (requirePipeline with word), and
// returns them by external id.
func (in *syncIntegration) firstSync(n int, word string) map[string]syncDoc {
	in.s.t.Helper()
	require.Equal(in.s.t, syncCounts{Total: n, Processed: n, Created: n}, in.sync(nil))
	docs := in.docs()
	require.Len(in.s.t, docs, n)
	in.requirePipeline(docs, word)
	return docs
}

// requirePipeline waits until every document of the integration is parsed
// into chunks and extracted by completed jobs carrying the integration's
// datasourceId and trigger webhook, requires objects in the graph from
// them, and requires a keyword search for word to find a chunk of one of
// them.
func (in *syncIntegration) requirePipeline(docs map[string]syncDoc, word string) {
	s := in.s
	s.t.Helper()
	hp := header{"X-Project-ID", in.project}
	ids := []string{}
	for ext, d := range docs {
		require.Equal(s.t, in.id, d.DatasourceID, ext)
		require.NotEmpty(s.t, d.SourceVersion, ext)
		require.NotEmpty(s.t, d.SourceTitle, ext)
		var got syncDoc
		require.Eventually(s.t, func() bool {
			s.must(200, "GET", "/api/documents/"+d.ID, s.admin, nil, hp).Decode(s.t, &got)
			return got.Status != "parsing"
		}, 30*time.Second, 20*time.Millisecond)
		require.Equal(s.t, "parsed", got.Status, ext)
		require.Positive(s.t, got.ChunkCount, ext)
		ids = append(ids, d.ID)
	}
	require.Eventually(s.t, func() bool {
		return s.extractionCount(`SELECT count(*) FROM object_extraction_jobs WHERE document_id = ANY($1::uuid[])
			AND status NOT IN ('completed', 'failed', 'requires_review', 'cancelled')`, ids) == 0 &&
			s.extractionCount(`SELECT count(DISTINCT document_id) FROM object_extraction_jobs WHERE document_id = ANY($1::uuid[])`, ids) == len(ids)
	}, 60*time.Second, 50*time.Millisecond, "extraction of the synced documents never finished")
	require.Zero(s.t, s.extractionCount(`SELECT count(*) FROM object_extraction_jobs WHERE document_id = ANY($1::uuid[])
		AND (status <> 'completed' OR trigger_type <> 'webhook' OR datasource_id IS DISTINCT FROM $2::uuid)`, ids, in.id),
		"every extraction job completed, trigger webhook, datasourceId the integration")
	require.Positive(s.t, s.extractionCount(`SELECT count(*) FROM graph_objects o JOIN object_extraction_jobs j ON j.id = o.extraction_job_id
		WHERE j.document_id = ANY($1::uuid[])`, ids), "objects extracted from the synced documents")

	var r searchResult
	s.must(200, "POST", "/api/search", s.admin, map[string]any{"query": word, "mode": "keyword", "targets": []string{"chunks"}}, hp).Decode(s.t, &r)
	require.NotEmpty(s.t, r.Data, "search for %q", word)
	require.Contains(s.t, ids, r.Data[0].DocumentID, "search for %q", word)
}

// requireFound requires a keyword search for word to find chunks of the
// document doc only.
func (in *syncIntegration) requireFound(word, doc string) {
	s := in.s
	s.t.Helper()
	var r searchResult
	s.must(200, "POST", "/api/search", s.admin, map[string]any{"query": word, "mode": "keyword", "targets": []string{"chunks"}}, header{"X-Project-ID", in.project}).Decode(s.t, &r)
	require.NotEmpty(s.t, r.Data, "search for %q", word)
	for _, h := range r.Data {
		require.Equal(s.t, doc, h.DocumentID, "search for %q", word)
	}
}

// syncSnapshot is what a sync may move of a document: its version and
// its extraction jobs.
type syncSnapshot struct {
	version string
	jobs    int
}

// snapshot records the state of every document of the integration.
func (in *syncIntegration) snapshot() map[string]syncSnapshot {
	in.s.t.Helper()
	out := map[string]syncSnapshot{}
	for ext, d := range in.docs() {
		out[ext] = syncSnapshot{version: d.SourceVersion, jobs: in.extractionJobs(d.ID)}
	}
	return out
}

// resyncUnchanged syncs the unchanged source again, requires every
// document counted unchanged and none moved, and returns their snapshot.
func (in *syncIntegration) resyncUnchanged() map[string]syncSnapshot {
	in.s.t.Helper()
	before := in.snapshot()
	n := len(before)
	require.Equal(in.s.t, syncCounts{Total: n, Processed: n, Unchanged: n}, in.sync(nil))
	in.requireOnlyMoved(before, nil, nil)
	return before
}

// requireOnlyMoved requires that, between before and now, only the
// documents moved changed (version, one more extraction job, an
// incremental one with trigger webhook), those in gone disappeared, and
// every other document kept its version and its jobs.
func (in *syncIntegration) requireOnlyMoved(before map[string]syncSnapshot, moved, gone []string) {
	s := in.s
	s.t.Helper()
	now := in.snapshot()
	docs := in.docs()
	for ext, b := range before {
		a, ok := now[ext]
		switch {
		case slices.Contains(gone, ext):
			require.False(s.t, ok, "%s deleted", ext)
		case slices.Contains(moved, ext):
			require.True(s.t, ok, ext)
			require.NotEqual(s.t, b.version, a.version, "%s has a new version", ext)
			require.Equal(s.t, b.jobs+1, a.jobs, "%s re-extracted once", ext)
			require.Equal(s.t, 1, s.extractionCount(`SELECT count(*) FROM object_extraction_jobs WHERE document_id = $1
				AND job_type = 'incremental' AND trigger_type = 'webhook' AND datasource_id = $2::uuid`, docs[ext].ID, in.id), ext)
		default:
			require.Equal(s.t, b, a, "%s did not move", ext)
		}
	}
	require.Len(s.t, now, len(before)-len(gone), "no document appeared")
}

// waitExtractionIdle waits until no parsing or extraction job of the
// project is queued or running. A sync completes before the parses it
// queued: a parse queues its extraction when it finishes, so extraction
// alone can look idle while a parse is still on its way.
func (in *syncIntegration) waitExtractionIdle() {
	s := in.s
	s.t.Helper()
	require.Eventually(s.t, func() bool {
		return s.extractionCount(`SELECT (SELECT count(*) FROM document_parsing_jobs WHERE project_id = $1
			AND status NOT IN ('completed', 'failed', 'requires_review', 'cancelled'))
			+ (SELECT count(*) FROM object_extraction_jobs WHERE project_id = $1
			AND status NOT IN ('completed', 'failed', 'requires_review', 'cancelled'))`, in.project) == 0
	}, 60*time.Second, 50*time.Millisecond)
}
