-- +goose Up
-- Traces (issue 18): every job table keeps the W3C traceparent of the span
-- that queued the job (jobqueue.TraceParentColumn), so that the worker's
-- span continues the request's trace. NULL when tracing is off or the job
-- was queued outside a trace.
ALTER TABLE document_parsing_jobs ADD COLUMN trace_parent text;
ALTER TABLE chunk_embedding_jobs ADD COLUMN trace_parent text;
ALTER TABLE graph_embedding_jobs ADD COLUMN trace_parent text;
ALTER TABLE object_extraction_jobs ADD COLUMN trace_parent text;
ALTER TABLE email_jobs ADD COLUMN trace_parent text;
ALTER TABLE integration_sync_jobs ADD COLUMN trace_parent text;
ALTER TABLE discovery_jobs ADD COLUMN trace_parent text;
ALTER TABLE agent_runs ADD COLUMN trace_parent text;

-- +goose Down
ALTER TABLE agent_runs DROP COLUMN trace_parent;
ALTER TABLE discovery_jobs DROP COLUMN trace_parent;
ALTER TABLE integration_sync_jobs DROP COLUMN trace_parent;
ALTER TABLE email_jobs DROP COLUMN trace_parent;
ALTER TABLE object_extraction_jobs DROP COLUMN trace_parent;
ALTER TABLE graph_embedding_jobs DROP COLUMN trace_parent;
ALTER TABLE chunk_embedding_jobs DROP COLUMN trace_parent;
ALTER TABLE document_parsing_jobs DROP COLUMN trace_parent;
