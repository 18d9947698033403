package main

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/config"
	"github.com/graphmill/graphmill/internal/llm/llmtest"
	"github.com/graphmill/graphmill/internal/mcpregistry/mcptest"
)

// extractionNULAnswer is a model's answer whose strings hold the \u0000
// escape, in values and in a property's name.
const extractionNULAnswer = `{
  "objects": [
    {"type": "Person", "name": "Ada\u0000 Lovelace", "key": "Ada Lovelace", "description": "Mathe\u0000matician.",
     "properties": {"occu\u0000pation": "mathe\u0000matician"}, "confidence": 0.95},
    {"type": "Person", "name": "Charles Babbage", "properties": {}, "confidence": 0.9},
    {"type": "Organization", "name": "Analytical Society", "properties": {}, "confidence": 0.85}
  ],
  "relationships": [
    {"type": "FOUNDED", "source": "Charles\u0000 Babbage", "target": "Analytical Society", "description": "Founded\u0000 it.", "confidence": 0.9}
  ]
}`

// TestExtractionModelTextWithNUL: a model's answer holding NUL characters
// (the \u0000 escape) is extracted with the NULs dropped, never a failed
// job: the objects, their descriptions and properties, the relationship
// and the call log's answer are stored. A provider error whose message
// holds a NUL fails the job with that message, the NUL dropped, in the
// job, its call log, its log and the notification of the project's
// admins.
func TestExtractionModelTextWithNUL(t *testing.T) {
	t.Parallel()
	const apiKey = "AIzaSy-extraction-nul-1234"
	gemini := llmtest.NewGemini(t, apiKey)
	gemini.SetGenerate(func(llmtest.GenerateCall) string { return extractionNULAnswer })
	s := newServer(t, withKeyAI(gemini.URL(), apiKey), withoutLocalProvider)
	project, _ := s.defaultProject()
	s.extractionSetThreshold(project, 0)
	doc := s.extractionUpload(project, "engine.md", "# Engine\n\nAda Lovelace worked with Charles Babbage.")
	j := s.extractionWaitJob(s.extractionJobOf(doc), "completed", "failed", "requires_review")
	require.Equal(t, "completed", j.Status, j.ErrorMsg)
	ctx := context.Background()
	var name, desc, props string
	require.NoError(t, s.m.db.pool.QueryRow(ctx, `SELECT name, description, properties::text FROM graph_objects
		WHERE project_id = $1 AND key = 'Ada Lovelace'`, project).Scan(&name, &desc, &props))
	require.Equal(t, "Ada Lovelace", name)
	require.Equal(t, "Mathematician.", desc)
	require.JSONEq(t, `{"occupation": "mathematician"}`, props)
	require.Equal(t, 1, s.extractionCount(`SELECT count(*) FROM graph_relationships WHERE project_id = $1 AND properties->>'description' = 'Founded it.'`, project))
	require.Equal(t, 1, s.extractionCount(`SELECT count(*) FROM extraction_llm_calls
		WHERE job_id = $1 AND status = 'success' AND response_payload->'objects'->0->>'name' = 'Ada Lovelace'`, j.ID))

	// The provider refuses the next document's call with a NUL in its
	// message.
	require.NoError(t, s.m.jobs.Pause(ctx, "object_extraction"))
	doc = s.extractionUpload(project, "second.md", "# Second\n\nCharles Babbage designed the Analytical Engine.")
	s.waitDocument(project, doc)
	gemini.FailNextOnWith(llmtest.EndpointGenerate, 1, http.StatusBadRequest, "bad\x00 request")
	require.NoError(t, s.m.jobs.Resume(ctx, "object_extraction"))
	j = s.extractionWaitJob(s.extractionJobOf(doc), "failed", "completed")
	require.Equal(t, "failed", j.Status)
	require.Contains(t, j.ErrorMsg, "bad request")
	require.NotContains(t, j.ErrorMsg, "\x00")
	require.Equal(t, 1, s.extractionCount(`SELECT count(*) FROM extraction_llm_calls WHERE job_id = $1 AND status = 'error' AND error_message LIKE '%bad request%'`, j.ID))
	require.Equal(t, 1, s.extractionCount(`SELECT count(*) FROM notifications WHERE type = 'job_failed' AND message LIKE '%bad request%'`))
	var logged bool
	for _, l := range s.extractionLogs(j.ID) {
		logged = logged || (l.Operation == "error" && strings.HasPrefix(l.Message, "job failed: ") && strings.Contains(l.Message, "bad request"))
	}
	require.True(t, logged, "the failure is logged")
}

// TestChatModelTextWithNUL: a streamed answer whose deltas hold NUL
// characters is streamed and stored with the NULs dropped, never a failed
// turn.
func TestChatModelTextWithNUL(t *testing.T) {
	t.Parallel()
	fake := llmtest.NewOpenAI(t)
	fake.SetChatStream(func(c llmtest.OpenAIChat) []llmtest.OpenAIDelta {
		out := fakeOpenAIAnswer(c)
		out[0].Content = "According\x00 to the sources, "
		return out
	})
	s := newServer(t, withOpenAI(fake.URL(), "", "llama3.1:8b", "nomic-embed-text"))
	project, _ := s.defaultProject()
	chatUpload(t, s, project)
	session := s.chatSession(s.admin, project)

	r := s.chatStream(s.admin, project, session, "Who designed the zephyrine turbine?")
	require.NotNil(t, r.Completed, "events: %v, error: %v", r.Events, r.Error)
	require.Equal(t, "According to the sources, ", r.Deltas[0])
	require.Equal(t, strings.Join(r.Deltas, ""), r.Completed.Content)
	var got chatSession
	s.must(200, "GET", "/api/chat/sessions/"+session, s.admin, nil, header{"X-Project-ID", project}).Decode(t, &got)
	require.Len(t, got.Messages, 2)
	require.Equal(t, *r.Completed, got.Messages[1], "stored as streamed")
}

// TestAgentExternalToolResultWithNUL: an external MCP tool whose result
// holds a NUL completes its step with the NUL dropped, and the run goes
// on: never a failed run.
func TestAgentExternalToolResultWithNUL(t *testing.T) {
	t.Parallel()
	server := mcp.NewServer(&mcp.Implementation{Name: "nul", Version: "1.0.0"}, nil)
	server.AddTool(&mcp.Tool{Name: "lookup", Description: "Looks it up.", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "found\x00 it"}}}, nil
		})
	external := mcptest.Streamable(t, server, "", "")
	s := newServer(t, mcpRegWith(func(*config.Config) {}))
	project, _ := s.defaultProject()
	var srv struct {
		ID string `json:"id"`
	}
	s.must(201, "POST", "/api/admin/mcp-servers", s.admin, map[string]any{"name": "src", "type": "http", "url": external.URL},
		header{"X-Project-ID", project}).Decode(t, &srv)
	s.must(200, "POST", "/api/admin/mcp-servers/"+srv.ID+"/sync", s.admin, nil)
	id := s.agentCreate(s.admin, project, map[string]any{"name": "lookup", "instructions": "i", "tools": []string{"src/lookup"}})
	run := s.agentWait(s.admin, s.agentStart(s.admin, id, "CALL: src:lookup {}").ID, "completed", "failed")
	require.Equal(t, "completed", run.Status, run.Error)
	require.Equal(t, []string{"model", "tool:src/lookup", "model"}, run.stepKinds())
	require.Contains(t, string(run.Steps[1].Output), "found it")
	require.Equal(t, 1, s.extractionCount(`SELECT count(*) FROM agent_run_steps WHERE run_id = $1 AND kind = 'tool' AND output::text LIKE '%found it%'`, run.ID))
}

// TestParseErrorQuotingBytes: a parser error quoting bytes of the file
// that are not UTF-8 fails the document with that error, the bytes
// replaced: the document, its job and the uploader's notification say
// why, never a parse left running.
func TestParseErrorQuotingBytes(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	// startxref points at a token that is not "xref" (the comment makes
	// the file long enough to be read): the PDF reader quotes it in its
	// error.
	r := s.uploadFile(s.admin, project, "broken.pdf", "application/pdf", []byte("%PDF-1.4\n\xff\xfe\n%"+strings.Repeat("x", 100)+"\nstartxref\n9\n%%EOF\n"))
	require.Equal(t, 201, r.Status, "%s", r.Body)
	var d docBody
	r.Decode(t, &d)
	d = s.waitDocument(project, d.ID)
	require.Equal(t, "failed", d.Status)
	require.Contains(t, d.Error, "cross-reference table not found: \uFFFD")
	var status, jobErr string
	require.NoError(t, s.m.db.pool.QueryRow(context.Background(),
		`SELECT status, error_msg FROM document_parsing_jobs WHERE document_id = $1`, d.ID).Scan(&status, &jobErr))
	require.Equal(t, "failed", status)
	require.Contains(t, jobErr, "cross-reference table not found: \uFFFD")
	require.Equal(t, 1, s.extractionCount(`SELECT count(*) FROM notifications WHERE type = 'document_parse_failed' AND message LIKE '%cross-reference%'`))
}

// TestDiscoveryModelTextWithNUL: a discovery whose model answers hold NUL
// characters and whose embedding model fails with a NUL in its message
// completes: the proposals are stored with the NULs dropped, and the
// failed embedding call is in the call log with its message.
func TestDiscoveryModelTextWithNUL(t *testing.T) {
	t.Parallel()
	const apiKey = "AIzaSy-disc-nul-1234"
	g := llmtest.NewGemini(t, apiKey)
	g.SetGenerate(func(c llmtest.GenerateCall) string {
		return strings.ReplaceAll(discFakeAnswer(strings.Join(c.Parts, "\n"), string(c.Schema)), "named in the documents", `named\u0000 in the documents`)
	})
	s := newServer(t, withKeyAI(g.URL(), apiKey), withoutLocalProvider)
	project, _ := s.defaultProject()
	doc := s.discParsed(project, "a.md", "# A\n\nAda Lovelace maintains the extraction pipeline with Ollama.")
	g.FailNextOnWith(llmtest.EndpointEmbed, 1000, http.StatusBadRequest, "bad\x00 embedding")
	id := s.discStart(s.admin, project, map[string]any{"document_ids": []string{doc}, "max_iterations": 1, "include_relationships": false})
	j := s.discWait(project, id, "completed", "failed")
	require.Equal(t, "completed", j.Status, j.ErrorMessage)
	require.Len(t, j.DiscoveredTypes, 2)
	for _, typ := range j.DiscoveredTypes {
		require.Equal(t, "A "+strings.ToLower(typ.TypeName)+" named in the documents.", typ.Description)
	}
	require.Equal(t, 1, s.extractionCount(`SELECT count(*) FROM discovery_llm_calls WHERE job_id = $1 AND phase = 'merging'
		AND status = 'error' AND request_payload->>'purpose' = 'embed' AND error_message LIKE '%bad embedding%'`, id), "the failed embedding call is logged")
}

// TestOIDCClaimsWithNUL: an identity provider's profile claims holding a
// NUL sign the user in: the name is recorded with the NUL dropped, the
// address not at all (an address is what invitations and emails are
// matched to: changed, it would be another one). A subject holding a NUL
// is refused as an unknown credential.
func TestOIDCClaimsWithNUL(t *testing.T) {
	t.Parallel()
	iss := newOIDCIssuer(t)
	s := newServer(t, withOIDC(iss))
	sub := "sub-" + uuid.NewString()
	s.must(200, "GET", "/api/superadmin/me", iss.token(t, iss.claims(sub, map[string]any{
		"name": "Ada\x00 Lovelace", "email": "ada\x00@example.com",
	})), nil)
	users := s.usersBySubject(sub)
	require.Len(t, users, 1)
	require.Equal(t, "Ada Lovelace", users[0].DisplayName)
	require.Empty(t, users[0].PrimaryEmail)

	requireUnauthenticated(t, s.do("GET", "/api/superadmin/me", iss.token(t, iss.claims(sub+"\x00", nil)), nil))
	require.Len(t, s.usersBySubject(sub), 1)
}

// TestIntegrationSyncClickUpNUL: a ClickUp workspace (the fake speaking
// its API) whose task names and ids hold NUL characters syncs: a task
// named with one is stored with the NUL dropped, a task whose id holds one
// is refused as an item (its external id would name another task), counted
// failed and logged, and the sync completes.
func TestIntegrationSyncClickUpNUL(t *testing.T) {
	t.Parallel()
	_, s, project, in := clickUpWorkspaceOf(t,
		&clickUpTask{ID: "t1", Name: "Fix\x00 login", Desc: "Maria Gonzalez of Northwind Labs in Berlin reported the login failure.", Updated: 1700000001000},
		&clickUpTask{ID: "t\x002", Name: "Add search", Desc: "David Chen of Acme Corporation in Toronto asked for search.", Updated: 1700000002000},
	)
	require.Equal(t, syncCounts{Total: 3, Processed: 3, Created: 2, Failed: 1}, in.sync(nil))
	docs := in.docs()
	require.Len(t, docs, 2)
	require.Equal(t, "Fix login", docs["task/t1"].SourceTitle)
	require.Equal(t, 1, s.extractionCount(`SELECT count(*) FROM integration_sync_logs WHERE project_id = $1
		AND message LIKE 'skipped: an item needs an external id%' AND details->>'externalId' = 'task/t2'`, project))
}
