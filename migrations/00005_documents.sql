-- +goose Up
-- Documents, their chunks, and the job tables of the document pipeline.
-- Job tables start with the job engine's common columns
-- (internal/jobqueue.CommonColumns, copied verbatim with project_id NOT NULL
-- and a foreign key, as tenant queues do).
CREATE TABLE documents (
    id           uuid PRIMARY KEY,
    project_id   uuid NOT NULL REFERENCES projects (id),
    filename     text NOT NULL CHECK (length(filename) BETWEEN 1 AND 500),
    mime_type    text NOT NULL,
    size_bytes   bigint NOT NULL,
    sha256       bytea NOT NULL,
    content      bytea NOT NULL,
    status       text NOT NULL CHECK (status IN ('parsing', 'parsed', 'failed')),
    error        text,
    format       text,
    chunk_count  int NOT NULL DEFAULT 0,
    created_by   uuid REFERENCES users (id),
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL,
    CONSTRAINT documents_project_sha256_key UNIQUE (project_id, sha256)
);
CREATE INDEX documents_project_created_idx ON documents (project_id, created_at, id);

CREATE TABLE document_chunks (
    id               uuid PRIMARY KEY,
    project_id       uuid NOT NULL REFERENCES projects (id),
    document_id      uuid NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
    chunk_index      int NOT NULL,
    text             text NOT NULL,
    start_offset     int NOT NULL,
    end_offset       int NOT NULL,
    heading_path     text[] NOT NULL DEFAULT '{}',
    token_count      int NOT NULL,
    tsv              tsvector GENERATED ALWAYS AS (to_tsvector('english', text)) STORED,
    embedding        real[],
    embedding_model  text,
    embedding_dim    int,
    embedded_at      timestamptz,
    created_at       timestamptz NOT NULL,
    CONSTRAINT document_chunks_doc_index_key UNIQUE (document_id, chunk_index)
);
CREATE INDEX document_chunks_project_idx ON document_chunks (project_id, document_id);
CREATE INDEX document_chunks_tsv_idx ON document_chunks USING gin (tsv);

CREATE TABLE document_parsing_jobs (
    id            uuid PRIMARY KEY,
    project_id    uuid NOT NULL REFERENCES projects (id),
    status        text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued','running','completed','failed','cancelled','requires_review')),
    priority      int NOT NULL DEFAULT 0,
    run_at        timestamptz NOT NULL,
    attempt       int NOT NULL DEFAULT 0,
    retry_count   int NOT NULL DEFAULT 0,
    max_retries   int NOT NULL DEFAULT 3,
    locked_by     text,
    locked_until  timestamptz,
    heartbeat_at  timestamptz,
    error_msg     text,
    started_at    timestamptz,
    completed_at  timestamptz,
    created_at    timestamptz NOT NULL,
    updated_at    timestamptz NOT NULL,
    document_id   uuid NOT NULL REFERENCES documents (id) ON DELETE CASCADE
);
CREATE INDEX document_parsing_jobs_queued_idx ON document_parsing_jobs (priority DESC, run_at, id) WHERE status = 'queued';
CREATE INDEX document_parsing_jobs_running_idx ON document_parsing_jobs (locked_until) WHERE status = 'running';
CREATE INDEX document_parsing_jobs_project_idx ON document_parsing_jobs (project_id, status, created_at);

CREATE TABLE chunk_embedding_jobs (
    id            uuid PRIMARY KEY,
    project_id    uuid NOT NULL REFERENCES projects (id),
    status        text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued','running','completed','failed','cancelled','requires_review')),
    priority      int NOT NULL DEFAULT 0,
    run_at        timestamptz NOT NULL,
    attempt       int NOT NULL DEFAULT 0,
    retry_count   int NOT NULL DEFAULT 0,
    max_retries   int NOT NULL DEFAULT 3,
    locked_by     text,
    locked_until  timestamptz,
    heartbeat_at  timestamptz,
    error_msg     text,
    started_at    timestamptz,
    completed_at  timestamptz,
    created_at    timestamptz NOT NULL,
    updated_at    timestamptz NOT NULL,
    chunk_id      uuid NOT NULL REFERENCES document_chunks (id) ON DELETE CASCADE
);
CREATE INDEX chunk_embedding_jobs_queued_idx ON chunk_embedding_jobs (priority DESC, run_at, id) WHERE status = 'queued';
CREATE INDEX chunk_embedding_jobs_running_idx ON chunk_embedding_jobs (locked_until) WHERE status = 'running';
CREATE INDEX chunk_embedding_jobs_project_idx ON chunk_embedding_jobs (project_id, status, created_at);

-- Objects arrive with the extraction issue; object_id gets its foreign key then.
CREATE TABLE graph_embedding_jobs (
    id            uuid PRIMARY KEY,
    project_id    uuid NOT NULL REFERENCES projects (id),
    status        text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued','running','completed','failed','cancelled','requires_review')),
    priority      int NOT NULL DEFAULT 0,
    run_at        timestamptz NOT NULL,
    attempt       int NOT NULL DEFAULT 0,
    retry_count   int NOT NULL DEFAULT 0,
    max_retries   int NOT NULL DEFAULT 3,
    locked_by     text,
    locked_until  timestamptz,
    heartbeat_at  timestamptz,
    error_msg     text,
    started_at    timestamptz,
    completed_at  timestamptz,
    created_at    timestamptz NOT NULL,
    updated_at    timestamptz NOT NULL,
    object_id     uuid NOT NULL
);
CREATE INDEX graph_embedding_jobs_queued_idx ON graph_embedding_jobs (priority DESC, run_at, id) WHERE status = 'queued';
CREATE INDEX graph_embedding_jobs_running_idx ON graph_embedding_jobs (locked_until) WHERE status = 'running';
CREATE INDEX graph_embedding_jobs_project_idx ON graph_embedding_jobs (project_id, status, created_at);

CREATE TABLE object_extraction_jobs (
    id            uuid PRIMARY KEY,
    project_id    uuid NOT NULL REFERENCES projects (id),
    status        text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued','running','completed','failed','cancelled','requires_review')),
    priority      int NOT NULL DEFAULT 0,
    run_at        timestamptz NOT NULL,
    attempt       int NOT NULL DEFAULT 0,
    retry_count   int NOT NULL DEFAULT 0,
    max_retries   int NOT NULL DEFAULT 3,
    locked_by     text,
    locked_until  timestamptz,
    heartbeat_at  timestamptz,
    error_msg     text,
    started_at    timestamptz,
    completed_at  timestamptz,
    created_at    timestamptz NOT NULL,
    updated_at    timestamptz NOT NULL,
    document_id   uuid REFERENCES documents (id) ON DELETE CASCADE,
    datasource_id uuid,
    job_type      text NOT NULL CHECK (job_type IN ('full_extraction', 'reextraction', 'incremental')),
    trigger_type  text NOT NULL CHECK (trigger_type IN ('manual', 'scheduled', 'webhook'))
);
CREATE INDEX object_extraction_jobs_queued_idx ON object_extraction_jobs (priority DESC, run_at, id) WHERE status = 'queued';
CREATE INDEX object_extraction_jobs_running_idx ON object_extraction_jobs (locked_until) WHERE status = 'running';
CREATE INDEX object_extraction_jobs_project_idx ON object_extraction_jobs (project_id, status, created_at);

-- +goose Down
DROP TABLE object_extraction_jobs;
DROP TABLE graph_embedding_jobs;
DROP TABLE chunk_embedding_jobs;
DROP TABLE document_parsing_jobs;
DROP TABLE document_chunks;
DROP TABLE documents;
