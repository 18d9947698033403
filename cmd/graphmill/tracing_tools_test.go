package main

import (
	"context"
	"encoding/hex"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/graphmill/graphmill/internal/config"
	"github.com/graphmill/graphmill/internal/pgtest"
)

// newTracedServer starts a server exporting its spans to an in-process
// OTLP receiver.
func newTracedServer(t *testing.T) (*testServer, *otlpReceiver) {
	t.Helper()
	rcv := newOTLPReceiver(t)
	s := startLoggedServer(t, pgtest.NewURL(t), slog.DiscardHandler, func(c *config.Config) { c.OTLPEndpoint = rcv.srv.URL })
	return s, rcv
}

// traceParentOf is the W3C traceparent of a sampled span.
func traceParentOf(sp *tracepb.Span) string {
	return "00-" + hex.EncodeToString(sp.GetTraceId()) + "-" + hex.EncodeToString(sp.GetSpanId()) + "-01"
}

// childOf reports whether sp is a child of parent (same trace, parent id).
func childOf(sp, parent *tracepb.Span) bool {
	return string(sp.GetTraceId()) == string(parent.GetTraceId()) && string(sp.GetParentSpanId()) == string(parent.GetSpanId())
}

// TestTracesOfMCPToolCalls: a tool called over /api/mcp is a server span
// "tools/call <tool>" beneath the HTTP request that carried it, with the
// tool's queries beneath it; a tool error is its error status; neither
// arguments nor results are attributes.
func TestTracesOfMCPToolCalls(t *testing.T) {
	t.Parallel()
	s, rcv := newTracedServer(t)
	project, _ := s.defaultProject()
	cs := mcpSrvConnect(t, s, s.admin, header{"X-Project-ID", project})
	const marker = "Quillwort traced query"
	res := mcpSrvCall(t, cs, "search", map[string]any{"query": marker})
	require.False(t, res.IsError, mcpSrvText(res))
	res = mcpSrvCall(t, cs, "graph_get_object", map[string]any{"id": "00000000-0000-7000-8000-000000000000"})
	require.True(t, res.IsError, "an unknown object is a tool error")
	_, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)

	s.m.Stop(context.Background())
	_, spans := rcv.received()
	search := findSpan(t, spans, "the search tool's span", func(sp *tracepb.Span, a map[string]string) bool {
		return sp.GetName() == "tools/call search"
	})
	a := spanAttrs(search)
	require.Equal(t, tracepb.Span_SPAN_KIND_SERVER, search.GetKind())
	require.Equal(t, "tools/call", a["mcp.method.name"])
	require.Equal(t, "search", a["gen_ai.tool.name"])
	require.Equal(t, "graphmill", a["graphmill.mcp.server"])
	require.Equal(t, project, a["graphmill.project.id"])
	require.Equal(t, tracepb.Status_STATUS_CODE_UNSET, search.GetStatus().GetCode())
	post := findSpan(t, spans, "the request that carried the call", func(sp *tracepb.Span, a map[string]string) bool {
		return sp.GetName() == "POST /api/mcp" && childOf(search, sp)
	})
	require.Equal(t, tracepb.Span_SPAN_KIND_SERVER, post.GetKind())
	findSpan(t, spans, "a query of the tool", func(sp *tracepb.Span, a map[string]string) bool {
		return a["db.system.name"] != "" && childOf(sp, search)
	})

	failed := findSpan(t, spans, "the failed tool call", func(sp *tracepb.Span, a map[string]string) bool {
		return sp.GetName() == "tools/call graph_get_object"
	})
	require.Equal(t, tracepb.Status_STATUS_CODE_ERROR, failed.GetStatus().GetCode())
	findSpan(t, spans, "its request", func(sp *tracepb.Span, a map[string]string) bool {
		return sp.GetName() == "POST /api/mcp" && childOf(failed, sp)
	})
	for _, sp := range spans {
		require.NotEqual(t, "tools/list", sp.GetName(), "only tool calls get MCP spans")
		for k, v := range spanAttrs(sp) {
			require.NotContains(t, v, marker, "span %s attribute %s carries an argument", sp.GetName(), k)
			require.NotContains(t, v, s.admin, "span %s attribute %s", sp.GetName(), k)
		}
	}
}

// TestTracesOfAgentRuns: an agent run started by a request stores the
// request's traceparent on its row, so the run's job span is the
// request's child and its tool calls (the tool box's client span, the
// built-in server's span beneath it) follow; a run the scheduler starts
// is beneath the scheduler task's root span, one trace with its work.
func TestTracesOfAgentRuns(t *testing.T) {
	t.Parallel()
	s, rcv := newTracedServer(t)
	project, _ := s.defaultProject()
	agentID := s.agentCreate(s.admin, project, map[string]any{
		"name": "Digest", "instructions": "Summarise the project.", "tools": []string{"search"}, "schedule": "*/5 * * * *",
	})
	run := s.agentStart(s.admin, agentID, "What is in the project?")
	require.Equal(t, "completed", s.agentWait(s.admin, run.ID, "completed", "failed").Status)
	s.runSchedulerTask("agent-schedule", 6*time.Minute)
	runs := s.agentRuns(s.admin, agentID)
	require.Len(t, runs, 2)
	scheduled := runs[0]
	if scheduled.ID == run.ID {
		scheduled = runs[1]
	}
	require.Equal(t, "schedule", scheduled.Trigger)
	require.Equal(t, "completed", s.agentWait(s.admin, scheduled.ID, "completed", "failed").Status)

	pool := s.pool()
	parents := map[string]*string{}
	for _, id := range []string{run.ID, scheduled.ID} {
		var p *string
		require.NoError(t, pool.QueryRow(context.Background(), `SELECT trace_parent FROM agent_runs WHERE id = $1`, id).Scan(&p))
		require.NotNil(t, p, "run %s keeps the traceparent that started it", id)
		parents[id] = p
	}

	s.m.Stop(context.Background())
	_, spans := rcv.received()

	// Started by a request.
	start := findSpan(t, spans, "the request starting the run", func(sp *tracepb.Span, a map[string]string) bool {
		return sp.GetName() == "POST /api/agents/{id}/runs"
	})
	require.Equal(t, traceParentOf(start), *parents[run.ID])
	job := findSpan(t, spans, "the run's job span", func(sp *tracepb.Span, a map[string]string) bool {
		return sp.GetName() == "job agent_run" && a["graphmill.job.id"] == run.ID
	})
	require.True(t, childOf(job, start), "the run continues the request's trace")
	call := findSpan(t, spans, "the run's tool call", func(sp *tracepb.Span, a map[string]string) bool {
		return sp.GetName() == "tools/call search" && sp.GetKind() == tracepb.Span_SPAN_KIND_CLIENT && childOf(sp, job)
	})
	findSpan(t, spans, "the built-in server's span of that call", func(sp *tracepb.Span, a map[string]string) bool {
		return sp.GetName() == "tools/call search" && sp.GetKind() == tracepb.Span_SPAN_KIND_SERVER && childOf(sp, call)
	})

	// Started by the scheduler: a root span of its own.
	task := findSpan(t, spans, "the scheduler task that started the run", func(sp *tracepb.Span, a map[string]string) bool {
		return sp.GetName() == "scheduler agent-schedule" && traceParentOf(sp) == *parents[scheduled.ID]
	})
	require.Empty(t, task.GetParentSpanId(), "a root span")
	require.Equal(t, "agent-schedule", spanAttrs(task)["graphmill.scheduler.task"])
	sjob := findSpan(t, spans, "the scheduled run's job span", func(sp *tracepb.Span, a map[string]string) bool {
		return sp.GetName() == "job agent_run" && a["graphmill.job.id"] == scheduled.ID
	})
	require.True(t, childOf(sjob, task), "the scheduled run continues the task's trace")
	findSpan(t, spans, "the task's insert of the run", func(sp *tracepb.Span, a map[string]string) bool {
		return sp.GetName() == "INSERT agent_runs" && childOf(sp, task)
	})
}
