package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCLIJobsQueues runs graphmill jobs on the queues other than
// extraction: the superadmin's (parsing, embedding, sync, email) and the
// project's discovery jobs, with the exit codes of the actions a queue has
// no route for and of a caller who is not a superadmin.
func TestCLIJobsQueues(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	env := s.cliEnviron(t, s.admin)
	project, _ := s.defaultProject()
	ctx := context.Background()

	doc := ingestOne(t, env, "loom.md", "# Loom\n\nJacquard's loom read punched cards.\n")

	type job struct {
		ID         string `json:"id"`
		Status     string `json:"status"`
		DocumentID string `json:"documentId"`
		FileName   string `json:"fileName"`
		ProjectID  string `json:"projectId"`
	}
	// The document's parsing job, through the superadmin route.
	var parsing []job
	decodeCLI(t, runCLI(t, env, "jobs", "ls", "--queue", "document_parsing", "--json"), &parsing)
	require.Len(t, parsing, 1)
	require.Equal(t, job{ID: parsing[0].ID, Status: "completed", DocumentID: doc, FileName: "loom.md", ProjectID: project}, parsing[0])
	r := runCLI(t, env, "jobs", "ls", "--queue", "document_parsing")
	require.NoError(t, r.err)
	require.Regexp(t, parsing[0].ID+`\s+document_parsing\s+completed\s+loom.md`, r.stdout)
	decodeCLI(t, runCLI(t, env, "jobs", "ls", "--queue", "document_parsing", "--status", "failed", "--json"), &parsing)
	require.Empty(t, parsing)

	// Its chunks' embedding jobs; no graph embedding job for a project without objects.
	var chunks []job
	decodeCLI(t, runCLI(t, env, "jobs", "ls", "--queue", "chunk_embedding", "--json"), &chunks)
	require.NotEmpty(t, chunks)
	for _, j := range chunks {
		require.Equal(t, doc, j.DocumentID)
		require.Equal(t, "completed", j.Status)
	}
	decodeCLI(t, runCLI(t, env, "jobs", "ls", "--queue", "chunk_embedding", "--limit", "1", "--json"), &chunks)
	require.Len(t, chunks, 1)
	var none []job
	decodeCLI(t, runCLI(t, env, "jobs", "ls", "--queue", "graph_embedding", "--json"), &none)
	require.Empty(t, none)
	decodeCLI(t, runCLI(t, env, "jobs", "ls", "--queue", "email", "--json"), &none)
	require.Empty(t, none)
	decodeCLI(t, runCLI(t, env, "jobs", "ls", "--queue", "integration_sync", "--json"), &none)
	require.Empty(t, none)
	decodeCLI(t, runCLI(t, env, "jobs", "ls", "--queue", "schema_discovery", "--json"), &none)
	require.Empty(t, none)

	// Retry of a failed parsing job (the superadmin bulk route, one id):
	// queued again and parsed anew.
	decodeCLI(t, runCLI(t, env, "jobs", "ls", "--queue", "document_parsing", "--json"), &parsing)
	_, err := s.m.db.pool.Exec(ctx, `UPDATE document_parsing_jobs SET status = 'failed', error_msg = 'boom', completed_at = now() WHERE id = $1`, parsing[0].ID)
	require.NoError(t, err)
	decodeCLI(t, runCLI(t, env, "jobs", "ls", "--queue", "document_parsing", "--status", "failed", "--json"), &parsing)
	require.Len(t, parsing, 1)
	var retried struct {
		RetriedCount int `json:"retriedCount"`
	}
	decodeCLI(t, runCLI(t, env, "jobs", "retry", "--queue", "document_parsing", parsing[0].ID, "--json"), &retried)
	require.Equal(t, 1, retried.RetriedCount)
	var status string
	require.NoError(t, s.m.db.pool.QueryRow(ctx, `SELECT status FROM document_parsing_jobs WHERE id = $1`, parsing[0].ID).Scan(&status))
	require.NotEqual(t, "failed", status)
	// Retrying a job that is not failed does nothing: an error (1).
	r = runCLI(t, env, "jobs", "retry", "--queue", "document_parsing", chunks[0].ID)
	require.Equal(t, exitError, r.code, "%v", r.err)
	require.ErrorContains(t, r.err, "nothing done")
	// Cancelling an unknown sync job: nothing cancelled (1).
	r = runCLI(t, env, "jobs", "cancel", "--queue", "integration_sync", doc)
	require.Equal(t, exitError, r.code, "%v", r.err)

	// Actions the API has no route for, and unknown queues: usage (2).
	for _, args := range [][]string{
		{"jobs", "cancel", "--queue", "document_parsing", parsing[0].ID},
		{"jobs", "retry", "--queue", "chunk_embedding", chunks[0].ID},
		{"jobs", "watch", "--queue", "email", chunks[0].ID},
		{"jobs", "ls", "--queue", "nope"},
		{"jobs", "ls", "--queue", "schema_discovery", "--status", "failed"},
		{"jobs", "ls", "--limit", "0"},
	} {
		r = runCLI(t, env, args...)
		require.Equal(t, exitUsage, r.code, "%v: %v", args, r.err)
	}
	r = runCLI(t, env, "jobs", "cancel", "--queue", "document_parsing", parsing[0].ID)
	require.ErrorContains(t, r.err, "the API cannot cancel jobs of queue document_parsing (only of object_extraction, schema_discovery, integration_sync")
	r = runCLI(t, env, "jobs", "retry", "--queue", "integration_sync", doc)
	require.Equal(t, exitUsage, r.code, "%v", r.err)
	require.ErrorContains(t, r.err, "the API cannot retry jobs of queue integration_sync (only of ")

	// A discovery job (the project's routes): watched to its end, listed,
	// and its cancel refused by the server once it ended.
	disc := s.discStart(s.admin, project, map[string]any{"document_ids": []string{doc}})
	r = runCLI(t, env, "jobs", "watch", "--queue", "schema_discovery", disc, "--json")
	require.NoError(t, r.err, r.stderr)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	var watched struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &watched))
	require.Equal(t, disc, watched.ID)
	require.Equal(t, "completed", watched.Status, r.stdout)
	var discoveries []job
	decodeCLI(t, runCLI(t, env, "jobs", "ls", "--queue", "schema_discovery", "--json"), &discoveries)
	require.Len(t, discoveries, 1)
	require.Equal(t, disc, discoveries[0].ID)
	r = runCLI(t, env, "jobs", "cancel", "--queue", "schema_discovery", disc)
	require.Equal(t, exitError, r.code, "%v", r.err)

	// A project member who is not a superadmin: refused (3) on the
	// superadmin queues, served on the project's.
	_, member := s.newMember("member@example.com", []string{"documents:read", "extraction:read", "discovery:read"}, project, "viewer")
	menv := append(s.cliEnviron(t, member), "GRAPHMILL_PROJECT="+project)
	r = runCLI(t, menv, "jobs", "ls", "--queue", "document_parsing")
	require.Equal(t, exitAuth, r.code, "%v", r.err)
	var extraction []job
	decodeCLI(t, runCLI(t, menv, "jobs", "ls", "--json"), &extraction)
	require.Len(t, extraction, 1)
	require.Equal(t, doc, extraction[0].DocumentID)
	decodeCLI(t, runCLI(t, menv, "jobs", "ls", "--queue", "schema_discovery", "--json"), &none)
	require.Len(t, none, 1)
}
