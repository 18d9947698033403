package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/config"
	"github.com/graphmill/graphmill/internal/llm/llmtest"
	"github.com/graphmill/graphmill/internal/templatepack"
)

// discIsRefine tells a refine call (the types schema without documents).
func discIsRefine(prompt, schema string) bool {
	return strings.Contains(schema, `"type_name"`) && !strings.Contains(prompt, "<document id=")
}

// discRefineList is the candidate list a refine call carries.
func discRefineList(t *testing.T, prompt string) []map[string]any {
	_, list, _ := strings.Cut(prompt, `{"types":`)
	var in struct {
		Types []map[string]any `json:"types"`
	}
	if err := json.Unmarshal([]byte(`{"types":`+list), &in); err != nil {
		t.Errorf("refine list: %v", err)
	}
	return in.Types
}

// TestDiscoveryRefineKeepsOnlyListedInstances: the refine answer renames
// Person to Maintainer (keeping its capped examples) and adds an instance
// whose quote is in no document: the rename is taken, the invented
// instance is not stored, and Maintainer keeps Person's frequency (the seven
// documents, not its five examples').
func TestDiscoveryRefineKeepsOnlyListedInstances(t *testing.T) {
	t.Parallel()
	const apiKey = "AIzaSy-disc-refine-1234"
	g := llmtest.NewGemini(t, apiKey)
	var mu sync.Mutex
	var docs []string
	g.SetGenerate(func(c llmtest.GenerateCall) string {
		prompt, schema := strings.Join(c.Parts, "\n"), string(c.Schema)
		if !discIsRefine(prompt, schema) {
			return discFakeAnswer(prompt, schema)
		}
		types := discRefineList(t, prompt)
		mu.Lock()
		first := docs[0]
		mu.Unlock()
		for _, ty := range types {
			if ty["type_name"] == "Person" {
				ty["type_name"] = "Maintainer"
				ty["instances"] = append(ty["instances"].([]any), map[string]any{"name": "Mallory", "quote": "Mallory approved the wire transfer.", "document_id": first})
			}
		}
		b, _ := json.Marshal(map[string]any{"types": types})
		return string(b)
	})
	s := newServer(t, withKeyAI(g.URL(), apiKey), withoutLocalProvider)
	project, _ := s.defaultProject()
	for i := range 7 {
		d := s.discParsed(project, fmt.Sprintf("d%d.md", i), fmt.Sprintf("# D%d\n\nAda Lovelace maintains part %d.", i, i))
		mu.Lock()
		docs = append(docs, d)
		mu.Unlock()
	}
	id := s.discStart(s.admin, project, map[string]any{"document_ids": docs, "batch_size": 7, "max_iterations": 2, "include_relationships": false})
	j := s.discWait(project, id, "completed", "failed")
	require.Equal(t, "completed", j.Status, j.ErrorMessage)
	s.discRequireResult(j, docs)
	require.Len(t, j.DiscoveredTypes, 1)
	human := j.DiscoveredTypes[0]
	require.Equal(t, "Maintainer", human.TypeName, "the rename is taken")
	require.Len(t, human.ExampleInstances, 5)
	for _, e := range human.ExampleInstances {
		require.Equal(t, "Ada Lovelace", e.Name, "no instance outside the documents")
	}
	require.Equal(t, 7, human.Frequency, "the renamed type keeps the documents of the type it was")
}

// TestDiscoveryDropsTypesWithoutVerifiedInstance: a batch answer whose
// only instance of a type is not quoted from the document leaves no
// type (the quote check drops the instance, and the type with it).
func TestDiscoveryDropsTypesWithoutVerifiedInstance(t *testing.T) {
	t.Parallel()
	const apiKey = "AIzaSy-disc-ghost-1234"
	g := llmtest.NewGemini(t, apiKey)
	g.SetGenerate(func(c llmtest.GenerateCall) string {
		prompt, schema := strings.Join(c.Parts, "\n"), string(c.Schema)
		if strings.Contains(schema, `"type_name"`) && strings.Contains(prompt, "<document id=") {
			m := discDocRE.FindStringSubmatch(prompt)
			b, _ := json.Marshal(map[string]any{"types": []any{map[string]any{
				"type_name": "Spaceship", "description": "A spaceship.", "properties": map[string]any{}, "required_properties": []string{}, "confidence": 0.95,
				"instances": []any{map[string]any{"name": "Enterprise", "quote": "The Enterprise docked at noon.", "document_id": m[1]}},
			}}})
			return string(b)
		}
		return discFakeAnswer(prompt, schema)
	})
	s := newServer(t, withKeyAI(g.URL(), apiKey), withoutLocalProvider)
	project, _ := s.defaultProject()
	doc := s.discParsed(project, "a.md", "# A\n\nAda Lovelace maintains the extraction pipeline.")
	id := s.discStart(s.admin, project, map[string]any{"document_ids": []string{doc}, "max_iterations": 1})
	j := s.discWait(project, id, "completed", "failed")
	require.Equal(t, "completed", j.Status, j.ErrorMessage)
	require.Empty(t, j.DiscoveredTypes, "a type none of whose instances is in the documents")
	require.Equal(t, 0, s.extractionCount(`SELECT jsonb_array_length(batch_proposals->0->'Types') FROM discovery_jobs WHERE id = $1`, id),
		"the batch's proposal holds no such type")
}

// TestDiscoveryRejectsLossyRefinement: a refine answer with no types,
// or one that drops a type (its instances), is not taken: the job
// completes with the list merged before, and its progress says the
// refinement was rejected.
func TestDiscoveryRejectsLossyRefinement(t *testing.T) {
	t.Parallel()
	const apiKey = "AIzaSy-disc-wipe-1234"
	g := llmtest.NewGemini(t, apiKey)
	var mode atomic.Int64 // 0: empty answer, 1: drop Provider
	g.SetGenerate(func(c llmtest.GenerateCall) string {
		prompt, schema := strings.Join(c.Parts, "\n"), string(c.Schema)
		if !discIsRefine(prompt, schema) {
			return discFakeAnswer(prompt, schema)
		}
		if mode.Load() == 0 {
			return `{"types": []}`
		}
		var kept []map[string]any
		for _, ty := range discRefineList(t, prompt) {
			if ty["type_name"] != "Provider" {
				kept = append(kept, ty)
			}
		}
		b, _ := json.Marshal(map[string]any{"types": kept})
		return string(b)
	})
	s := newServer(t, withKeyAI(g.URL(), apiKey), withoutLocalProvider)
	project, _ := s.defaultProject()
	doc := s.discParsed(project, "a.md", "# A\n\nAda Lovelace maintains the extraction pipeline with Ollama.")
	for m, reason := range []string{"no type kept", "instances of the list lost"} {
		mode.Store(int64(m))
		id := s.discStart(s.admin, project, map[string]any{"document_ids": []string{doc}, "include_relationships": false})
		j := s.discWait(project, id, "completed", "failed")
		require.Equal(t, "completed", j.Status, j.ErrorMessage)
		var names []string
		for _, ty := range j.DiscoveredTypes {
			names = append(names, ty.TypeName)
		}
		require.ElementsMatch(t, []string{"Person", "Provider"}, names, "the list before the refinement")
		require.Equal(t, 1, s.extractionCount(`SELECT count(*) FROM events WHERE type = 'discovery.progress' AND payload->>'jobId' = $1
			AND payload->'progress'->>'message' LIKE 'refinement 1 rejected (%' || $2 || '%): kept the previous 2 types'`, id, reason), reason)
		require.Equal(t, 1, s.extractionCount(`SELECT count(*) FROM discovery_llm_calls WHERE job_id = $1 AND phase = 'merging'
			AND request_payload->>'purpose' <> 'embed'`, id),
			"no further refinement after a rejected one")
	}
}

// TestDiscoveryRelationshipsSeededFilteredCounted: the relationships
// call names the installed relationship types; a relationship below
// min_confidence is dropped; a relationship's frequency is the number
// of documents holding instances of both its ends, however often the
// answer repeats it.
func TestDiscoveryRelationshipsSeededFilteredCounted(t *testing.T) {
	t.Parallel()
	const apiKey = "AIzaSy-disc-rels-1234"
	g := llmtest.NewGemini(t, apiKey)
	var relPrompt atomic.Value
	g.SetGenerate(func(c llmtest.GenerateCall) string {
		prompt, schema := strings.Join(c.Parts, "\n"), string(c.Schema)
		if !strings.Contains(schema, `"relation_type"`) {
			return discFakeAnswer(prompt, schema)
		}
		relPrompt.Store(prompt)
		maintains := `{"source_type": "Person", "target_type": "Queue", "relation_type": "MAINTAINS", "description": "Maintains.", "cardinality": "one_to_many", "confidence": 0.8}`
		return `{"relationships": [` + maintains + `,` + maintains + `,` + maintains + `,
			{"source_type": "Person", "target_type": "Provider", "relation_type": "PREFERS", "description": "Likes.", "cardinality": "many_to_many", "confidence": 0.3}]}`
	})
	s := newServer(t, withKeyAI(g.URL(), apiKey), withoutLocalProvider)
	project, _ := s.defaultProject()
	pack := s.graphCreatePack(project, templatepack.PackInput{
		Name: "Seed", Source: templatepack.SourceManual,
		ObjectTypes: []templatepack.ObjectType{{Name: "Team", Description: "A team.", Schema: map[string]any{"type": "object"}}},
		RelationshipTypes: []templatepack.RelationshipType{
			{Name: "MEMBER_OF", SourceType: "Person", TargetType: "Team", Cardinality: templatepack.ManyToMany, Description: "A person belongs to a team."},
		},
	})
	s.must(201, "POST", "/api/projects/"+project+"/template-packs/"+pack, s.admin, nil)
	docs := []string{
		s.discParsed(project, "a.md", "# A\n\nAda Lovelace maintains the schema_discovery queue."),
		s.discParsed(project, "b.md", "# B\n\nGrace Hopper prefers Ollama."),
		s.discParsed(project, "c.md", "# C\n\nAlan Turing maintains the document_parsing queue."),
	}
	id := s.discStart(s.admin, project, map[string]any{"document_ids": docs, "max_iterations": 1})
	j := s.discWait(project, id, "completed", "failed")
	require.Equal(t, "completed", j.Status, j.ErrorMessage)
	p, _ := relPrompt.Load().(string)
	require.Contains(t, p, "- MEMBER_OF: Person -> Team: A person belongs to a team.", "the installed relationship types seed the call")
	require.Equal(t, []discRel{{
		SourceType: "Person", TargetType: "Queue", RelationType: "MAINTAINS", Description: "Maintains.",
		Cardinality: "one_to_many", Confidence: 0.8, Frequency: 2,
	}}, j.DiscoveredRelationships, "PREFERS (0.3) is below min_confidence; MAINTAINS is in a.md and c.md, said three times")
}

// TestDiscoveryEmbeddingFailureMergesByName: the project's embedding
// model fails: the job still completes (types merged by name), the
// failed embedding call is in the call log and the progress says so.
func TestDiscoveryEmbeddingFailureMergesByName(t *testing.T) {
	t.Parallel()
	const apiKey = "AIzaSy-disc-embed-1234"
	g := llmtest.NewGemini(t, apiKey)
	g.SetGenerate(func(c llmtest.GenerateCall) string {
		return discFakeAnswer(strings.Join(c.Parts, "\n"), string(c.Schema))
	})
	s := newServer(t, withKeyAI(g.URL(), apiKey), withoutLocalProvider)
	project, _ := s.defaultProject()
	doc := s.discParsed(project, "a.md", "# A\n\nAda Lovelace maintains the extraction pipeline with Ollama.")
	g.FailNextOn(llmtest.EndpointEmbed, 1000, http.StatusBadRequest)
	id := s.discStart(s.admin, project, map[string]any{"document_ids": []string{doc}, "max_iterations": 1, "include_relationships": false})
	j := s.discWait(project, id, "completed", "failed")
	require.Equal(t, "completed", j.Status, j.ErrorMessage)
	require.Len(t, j.DiscoveredTypes, 2)
	require.Contains(t, j.Progress.Message, "embedding failed: types merged by name only")
	require.Equal(t, 1, s.extractionCount(`SELECT count(*) FROM discovery_llm_calls WHERE job_id = $1 AND phase = 'merging'
		AND status = 'error' AND request_payload->>'purpose' = 'embed' AND provider = 'key-ai' AND model_name <> ''`, id), "the failed embedding call is logged")
}

// TestDiscoverySkipsDeletedAndEmptyDocuments: documents deleted or left
// without text after the start are skipped: no empty document goes to
// the model, they are not counted as processed, and the progress says
// how many were skipped.
func TestDiscoverySkipsDeletedAndEmptyDocuments(t *testing.T) {
	t.Parallel()
	const apiKey = "AIzaSy-disc-skip-1234"
	g := llmtest.NewGemini(t, apiKey)
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	var mu sync.Mutex
	var sent []string // the document blocks of the batch calls
	var batches atomic.Int64
	g.SetGenerate(func(c llmtest.GenerateCall) string {
		prompt, schema := strings.Join(c.Parts, "\n"), string(c.Schema)
		if strings.Contains(schema, `"type_name"`) && strings.Contains(prompt, "<document id=") {
			mu.Lock()
			for _, m := range discDocRE.FindAllStringSubmatch(prompt, -1) {
				sent = append(sent, m[1]+":"+m[2])
			}
			mu.Unlock()
			if batches.Add(1) == 1 {
				select {
				case <-release:
				case <-time.After(time.Minute):
				}
			}
		}
		return discFakeAnswer(prompt, schema)
	})
	s := newServer(t, withKeyAI(g.URL(), apiKey), withoutLocalProvider)
	project, _ := s.defaultProject()
	hp := header{"X-Project-ID", project}
	docs := []string{
		s.discParsed(project, "a.md", "# A\n\nAda Lovelace maintains the extraction pipeline."),
		s.discParsed(project, "b.md", "# B\n\nGrace Hopper maintains the job engine."),
		s.discParsed(project, "c.md", "# C\n\nAlan Turing uses Ollama."),
	}
	id := s.discStart(s.admin, project, map[string]any{"document_ids": docs, "batch_size": 1, "include_relationships": false, "max_iterations": 1})
	require.Eventually(t, func() bool { return batches.Load() == 1 }, 30*time.Second, 10*time.Millisecond)
	s.must(204, "DELETE", "/api/documents/"+docs[1], s.admin, nil, hp)
	_, err := s.m.db.pool.Exec(t.Context(), `UPDATE document_chunks SET text = ' ' WHERE document_id = $1`, docs[2])
	require.NoError(t, err)
	once.Do(func() { close(release) })
	j := s.discWait(project, id, "completed", "failed")
	require.Equal(t, "completed", j.Status, j.ErrorMessage)
	mu.Lock()
	require.Len(t, sent, 1, "only the first document went to the model: %v", sent)
	require.True(t, strings.HasPrefix(sent[0], docs[0]+":"))
	mu.Unlock()
	require.Equal(t, 1, j.Progress.DocumentsProcessed)
	require.Equal(t, 3, j.Progress.DocumentsTotal)
	require.Contains(t, j.Progress.Message, "in 1 documents")
	require.Contains(t, j.Progress.Message, "2 documents skipped (deleted or without text)")
	require.Equal(t, 2, s.extractionCount(`SELECT count(*) FROM events WHERE type = 'discovery.progress' AND payload->>'jobId' = $1
		AND payload->'progress'->>'message' LIKE '%; 1 documents skipped (deleted or without text)'`, id), "each batch says what it skipped")
}

// TestDiscoveryCancelPending: a job still pending (the project's one
// running slot is taken) is cancelled: its status is cancelled at once,
// a second cancel answers 409, and it never runs.
func TestDiscoveryCancelPending(t *testing.T) {
	t.Parallel()
	const apiKey = "AIzaSy-disc-pending-1234"
	g := newDiscBlockingGemini(t, apiKey, 0)
	s := newServer(t, withKeyAI(g.URL(), apiKey), withoutLocalProvider, func(c *config.Config) { c.QueueProjectMax = 1 })
	project, _ := s.defaultProject()
	hp := header{"X-Project-ID", project}
	a := s.discParsed(project, "a.md", "# A\n\nAda Lovelace maintains the extraction pipeline.")
	b := s.discParsed(project, "b.md", "# B\n\nGrace Hopper maintains the job engine.")
	running := s.discStart(s.admin, project, map[string]any{"document_ids": []string{a}})
	require.Eventually(t, func() bool { return g.batches.Load() == 1 }, 30*time.Second, 10*time.Millisecond, "the first job's call is in flight")
	pending := s.discStart(s.admin, project, map[string]any{"document_ids": []string{b}})
	require.Equal(t, "pending", s.discGet(project, pending).Status)

	var cancelled discJob
	s.must(200, "POST", "/api/discovery-jobs/"+pending+"/cancel", s.admin, nil, hp).Decode(t, &cancelled)
	require.Equal(t, "cancelled", cancelled.Status)
	require.Empty(t, cancelled.StartedAt, "it never started")
	r := s.do("POST", "/api/discovery-jobs/"+pending+"/cancel", s.admin, nil, hp)
	require.Equal(t, 409, r.Status)
	require.Contains(t, r.Detail(t), "is cancelled")

	g.Release()
	require.Equal(t, "completed", s.discWait(project, running, "completed", "failed").Status)
	require.Equal(t, "cancelled", s.discGet(project, pending).Status)
	require.Zero(t, s.extractionCount(`SELECT count(*) FROM discovery_llm_calls WHERE job_id = $1`, pending), "the cancelled job never called the model")
	require.Equal(t, int64(1), g.batches.Load())
}
