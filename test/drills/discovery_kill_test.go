package drills

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/llm/llmtest"
)

// discoveryKillDocuments is how many documents (one per batch) the
// discovery kill drill reads.
const discoveryKillDocuments = 12

var drillDocRE = regexp.MustCompile(`(?s)<document id="([^"]+)" name="[^"]*">\n(.*?)\n</document>`)

// TestDiscoveryKillNineDrill: graphmill serve running a schema discovery
// job (one document per batch, each batch call answered slowly by a
// Gemini fake) is killed with SIGKILL after some batches were committed
// and while the next one's call is in flight, and restarted on the same
// data directory. Once the job's lease has expired it resumes from the
// last finished batch: every finished batch was asked exactly once, the
// call log holds a successful call of every batch, each batch was
// checkpointed once, and the job completes with the types of every
// batch, each document counted once.
func TestDiscoveryKillNineDrill(t *testing.T) {
	t.Parallel()
	const apiKey = "AIzaSy-drill-discovery-1234"
	fake := llmtest.NewGemini(t, apiKey)
	var mu sync.Mutex
	asked := map[string]int{} // document id -> batch calls naming it
	fake.SetGenerate(func(c llmtest.GenerateCall) string {
		prompt := strings.Join(c.Parts, "\n")
		schema := string(c.Schema)
		switch {
		case strings.Contains(schema, `"relation_type"`):
			return `{"relationships": []}`
		case strings.Contains(schema, `"type_name"`) && strings.Contains(prompt, "<document id="):
			time.Sleep(300 * time.Millisecond)
			var types []map[string]any
			for _, m := range drillDocRE.FindAllStringSubmatch(prompt, -1) {
				mu.Lock()
				asked[m[1]]++
				mu.Unlock()
				line := strings.SplitN(strings.TrimSpace(m[2]), "\n", 2)[0]
				types = append(types, map[string]any{
					"type_name": "Expedition", "description": "An expedition of the reports.", "properties": map[string]any{},
					"required_properties": []string{}, "confidence": 0.9,
					"instances": []map[string]any{{"name": strings.TrimPrefix(line, "# "), "quote": line, "document_id": m[1]}},
				})
			}
			b, _ := json.Marshal(map[string]any{"types": types})
			return string(b)
		case strings.Contains(schema, `"type_name"`):
			_, list, _ := strings.Cut(prompt, `{"types":`)
			return `{"types":` + list
		default:
			return `{"objects": [], "relationships": []}`
		}
	})
	dir := dataDir(t)
	token := newToken()
	srv := newProc(t, dir, "serve", "serve", "GRAPHMILL_DATA_DIR="+dir, "GRAPHMILL_BOOTSTRAP_TOKEN="+token,
		"GRAPHMILL_LOCAL_PROVIDER=false", "GRAPHMILL_KEY_AI_API_KEY="+apiKey, "GRAPHMILL_KEY_AI_BASE_URL="+fake.URL())
	srv.start()
	base := "http://" + srv.api
	db := openDB(t, embeddedURL(t, dir))
	project := defaultProject(t, base, token)

	docs := make([]string, discoveryKillDocuments)
	for i := range docs {
		raw := mustCall(t, 201, base, token, "POST", "/api/documents", map[string]any{
			"filename": fmt.Sprintf("expedition-%02d.md", i), "content": drillDocument(i, 2), "mimeType": "text/markdown",
		}, "X-Project-ID", project)
		var d struct {
			ID string `json:"id"`
		}
		require.NoError(t, json.Unmarshal(raw, &d))
		docs[i] = d.ID
	}
	require.Eventually(t, func() bool {
		return count(t, db, `SELECT count(*) FROM documents WHERE status = 'parsed'`) == discoveryKillDocuments
	}, time.Minute, 50*time.Millisecond)
	raw := mustCall(t, 201, base, token, "POST", "/api/discovery-jobs", map[string]any{
		"document_ids": docs, "batch_size": 1, "include_relationships": false,
	}, "X-Project-ID", project)
	var started struct {
		JobID string `json:"jobId"`
	}
	require.NoError(t, json.Unmarshal(raw, &started))
	job := started.JobID
	finished := func() int {
		return count(t, db, `SELECT jsonb_array_length(batch_proposals) FROM discovery_jobs WHERE id = $1`, job)
	}

	// Kill with some batches committed and the next one's call in flight.
	require.Eventually(t, func() bool {
		done := finished()
		mu.Lock()
		defer mu.Unlock()
		return done >= discoveryKillDocuments/3 && len(asked) > done
	}, time.Minute, 5*time.Millisecond)
	srv.kill()
	before := finished()
	require.Less(t, before, discoveryKillDocuments, "killed mid-job")
	require.Equal(t, "running", func() string {
		var st string
		require.NoError(t, db.QueryRow(context.Background(), `SELECT status FROM discovery_jobs WHERE id = $1`, job).Scan(&st))
		return st
	}())
	srv.start()

	require.Eventually(t, func() bool {
		return count(t, db, `SELECT count(*) FROM discovery_jobs WHERE id = $1 AND status IN ('completed', 'failed')`, job) == 1
	}, 3*time.Minute, 200*time.Millisecond)
	var status string
	var attempt, types int
	require.NoError(t, db.QueryRow(context.Background(), `SELECT status, attempt, jsonb_array_length(discovered_types) FROM discovery_jobs WHERE id = $1`, job).
		Scan(&status, &attempt, &types))
	require.Equal(t, "completed", status)
	require.Equal(t, 2, attempt, "one attempt killed, one resumed")
	require.Equal(t, 1, types, "the batches' Expedition candidates merged into one type")
	mu.Lock()
	for i, d := range docs {
		if i < before {
			require.Equal(t, 1, asked[d], "finished batch %d was asked once", i+1)
		} else {
			require.GreaterOrEqual(t, asked[d], 1, "batch %d was asked", i+1)
		}
	}
	mu.Unlock()
	require.Equal(t, discoveryKillDocuments, count(t, db, `SELECT count(DISTINCT step) FROM discovery_llm_calls
		WHERE job_id = $1 AND phase = 'analyzing' AND status = 'success'`, job))
	// A kill between a batch's logged call and its checkpoint leaves a
	// second successful call of that batch in the log; what is
	// guaranteed is that no batch is checkpointed twice and the result
	// counts each batch once.
	require.Equal(t, discoveryKillDocuments, count(t, db, `SELECT count(DISTINCT d) FROM discovery_jobs,
		jsonb_array_elements(batch_proposals) p, jsonb_array_elements_text(p->'DocumentIDs') d WHERE id = $1`, job), "each batch checkpointed once")
	require.Equal(t, discoveryKillDocuments, count(t, db, `SELECT jsonb_array_length(batch_proposals) FROM discovery_jobs WHERE id = $1`, job))
	require.Equal(t, discoveryKillDocuments, count(t, db, `SELECT (discovered_types->0->>'frequency')::int FROM discovery_jobs WHERE id = $1`, job),
		"the type is counted once per document")
	srv.stop()
	t.Logf("discovery kill -9 drill: %d batches; killed after %d were committed; resumed from batch %d and completed", discoveryKillDocuments, before, before+1)
}
