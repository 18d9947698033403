package main

import (
	"github.com/graphmill/graphmill/internal/agent"
	"github.com/graphmill/graphmill/internal/console"
	"github.com/graphmill/graphmill/internal/discovery"
	"github.com/graphmill/graphmill/internal/document"
	"github.com/graphmill/graphmill/internal/email"
	"github.com/graphmill/graphmill/internal/embedding"
	"github.com/graphmill/graphmill/internal/events"
	"github.com/graphmill/graphmill/internal/extraction"
	"github.com/graphmill/graphmill/internal/integration"
)

// consoleOpsQueues are the queues with superadmin console pages, each
// with the superadmin API's list and bulk actions for it (superadmin.Register,
// RegisterSyncJobs, RegisterEmail) and, for the embedding queues, the ops
// address's worker control (opsHandler). The wiring names them: queue
// names stay with their owners elsewhere.
func consoleOpsQueues() []console.OpsQueue {
	return []console.OpsQueue{
		{Name: document.QueueParsing, List: "/api/superadmin/document-parsing-jobs", Retry: "/api/superadmin/document-parsing-jobs/retry"},
		{Name: document.QueueChunkEmbedding, List: "/api/superadmin/embedding-jobs", Kind: embedding.JobTypeChunk, Pausable: true},
		{Name: embedding.Queue, List: "/api/superadmin/embedding-jobs", Kind: embedding.JobTypeGraph, Pausable: true},
		{Name: extraction.Queue, List: "/api/superadmin/extraction-jobs", Cancel: "/api/superadmin/extraction-jobs/cancel", ProjectJobs: true},
		{
			Name: integration.Queue, List: "/api/superadmin/sync-jobs", Cancel: "/api/superadmin/sync-jobs/cancel",
			Logs: "/api/superadmin/sync-jobs/{id}/logs", EndEvent: events.TypeIntegrationSyncCompleted,
		},
		{Name: email.Queue, List: "/api/superadmin/email-jobs"},
	}
}

// consoleJobPages are the queues whose jobs have a project page in the
// console, which a failed job's notification links to: every queue whose
// jobs belong to a project (email jobs do when they are about one: an
// invitation).
func consoleJobPages() map[string]console.JobPage {
	return map[string]console.JobPage{
		extraction.Queue:             console.ExtractionJobPage,
		discovery.Queue:              console.DiscoveryJobPage,
		agent.Queue:                  console.AgentRunPage,
		integration.Queue:            console.SyncJobPage,
		document.QueueParsing:        console.ParsingJobPage,
		document.QueueChunkEmbedding: console.ChunkEmbeddingJobPage,
		embedding.Queue:              console.GraphEmbeddingJobPage,
		email.Queue:                  console.EmailJobPage,
	}
}
