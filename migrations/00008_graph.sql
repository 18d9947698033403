-- +goose Up
-- The graph and everything extraction writes: template packs (the types),
-- graph objects and relationships with their provenance, graph embeddings
-- under embedding policies, and the extraction job logs and LLM call log.

-- Template packs: object types [{name, description, schema, examples}] and
-- relationship types [{name, sourceType, targetType, description,
-- cardinality}]. project_id NULL: a built-in pack visible to every
-- project; otherwise the pack belongs to the project that made it
-- (discovery) and is visible to that project's organization.
CREATE TABLE template_packs (
    id                  uuid PRIMARY KEY,
    project_id          uuid REFERENCES projects (id),
    name                text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    version             text NOT NULL DEFAULT '1.0.0',
    description         text,
    source              text NOT NULL CHECK (source IN ('builtin', 'discovery', 'manual')),
    object_types        jsonb NOT NULL DEFAULT '[]',
    relationship_types  jsonb NOT NULL DEFAULT '[]',
    created_at          timestamptz NOT NULL,
    updated_at          timestamptz NOT NULL
);
CREATE UNIQUE INDEX template_packs_builtin_name ON template_packs (lower(name)) WHERE project_id IS NULL;
CREATE INDEX template_packs_project ON template_packs (project_id);

CREATE TABLE project_template_packs (
    project_id    uuid NOT NULL REFERENCES projects (id),
    pack_id       uuid NOT NULL REFERENCES template_packs (id) ON DELETE CASCADE,
    installed_by  uuid REFERENCES users (id),
    installed_at  timestamptz NOT NULL,
    PRIMARY KEY (project_id, pack_id)
);

-- The review threshold: objects extracted with a lower confidence are
-- stored as suggestions for review.
ALTER TABLE projects ADD COLUMN review_threshold real NOT NULL DEFAULT 0.7
    CHECK (review_threshold >= 0 AND review_threshold <= 1);

-- Graph objects, unique per (project, type, normalized key) among the
-- live ones (soft delete: deleted_at).
CREATE TABLE graph_objects (
    id                 uuid PRIMARY KEY,
    project_id         uuid NOT NULL REFERENCES projects (id),
    type               text NOT NULL CHECK (length(type) BETWEEN 1 AND 200),
    key                text NOT NULL CHECK (length(key) BETWEEN 1 AND 500),
    normalized_key     text NOT NULL,
    name               text NOT NULL CHECK (length(name) BETWEEN 1 AND 500),
    description        text,
    properties         jsonb NOT NULL DEFAULT '{}',
    labels             text[] NOT NULL DEFAULT '{}',
    status             text NOT NULL CHECK (status IN ('accepted', 'suggested')),
    confidence         real CHECK (confidence >= 0 AND confidence <= 1),
    extraction_job_id  uuid,
    created_by         uuid REFERENCES users (id),
    created_at         timestamptz NOT NULL,
    updated_at         timestamptz NOT NULL,
    deleted_at         timestamptz
);
CREATE UNIQUE INDEX graph_objects_natural_key ON graph_objects (project_id, type, normalized_key) WHERE deleted_at IS NULL;
CREATE INDEX graph_objects_project_type ON graph_objects (project_id, type, created_at) WHERE deleted_at IS NULL;
CREATE INDEX graph_objects_job ON graph_objects (extraction_job_id) WHERE extraction_job_id IS NOT NULL;
CREATE INDEX graph_objects_labels ON graph_objects USING gin (labels);

CREATE TABLE graph_relationships (
    id                 uuid PRIMARY KEY,
    project_id         uuid NOT NULL REFERENCES projects (id),
    type               text NOT NULL CHECK (length(type) BETWEEN 1 AND 200),
    source_id          uuid NOT NULL REFERENCES graph_objects (id) ON DELETE CASCADE,
    target_id          uuid NOT NULL REFERENCES graph_objects (id) ON DELETE CASCADE,
    properties         jsonb NOT NULL DEFAULT '{}',
    confidence         real CHECK (confidence >= 0 AND confidence <= 1),
    extraction_job_id  uuid,
    created_at         timestamptz NOT NULL,
    updated_at         timestamptz NOT NULL,
    UNIQUE (project_id, type, source_id, target_id)
);
CREATE INDEX graph_relationships_source ON graph_relationships (source_id);
CREATE INDEX graph_relationships_target ON graph_relationships (target_id);

-- Provenance: which chunks an object or relationship was extracted from.
CREATE TABLE graph_object_provenance (
    object_id          uuid NOT NULL REFERENCES graph_objects (id) ON DELETE CASCADE,
    chunk_id           uuid NOT NULL REFERENCES document_chunks (id) ON DELETE CASCADE,
    project_id         uuid NOT NULL REFERENCES projects (id),
    extraction_job_id  uuid,
    created_at         timestamptz NOT NULL,
    PRIMARY KEY (object_id, chunk_id)
);
CREATE INDEX graph_object_provenance_chunk ON graph_object_provenance (chunk_id);

CREATE TABLE graph_relationship_provenance (
    relationship_id    uuid NOT NULL REFERENCES graph_relationships (id) ON DELETE CASCADE,
    chunk_id           uuid NOT NULL REFERENCES document_chunks (id) ON DELETE CASCADE,
    project_id         uuid NOT NULL REFERENCES projects (id),
    extraction_job_id  uuid,
    created_at         timestamptz NOT NULL,
    PRIMARY KEY (relationship_id, chunk_id)
);
CREATE INDEX graph_relationship_provenance_chunk ON graph_relationship_provenance (chunk_id);

-- Incremental extraction processes the chunks not extracted yet.
ALTER TABLE document_chunks ADD COLUMN extracted_at timestamptz;

-- Extraction job counters, kept by the worker for the monitoring API.
ALTER TABLE object_extraction_jobs
    ADD COLUMN objects_created int NOT NULL DEFAULT 0,
    ADD COLUMN relationships_created int NOT NULL DEFAULT 0,
    ADD COLUMN suggestions_created int NOT NULL DEFAULT 0,
    ADD COLUMN created_by uuid REFERENCES users (id);

-- Graph embedding jobs: one per object (all of its policies at once); at
-- most one queued job per object.
DELETE FROM graph_embedding_jobs;
ALTER TABLE graph_embedding_jobs ADD CONSTRAINT graph_embedding_jobs_object_fk
    FOREIGN KEY (object_id) REFERENCES graph_objects (id) ON DELETE CASCADE;
CREATE UNIQUE INDEX graph_embedding_jobs_one_queued ON graph_embedding_jobs (object_id) WHERE status = 'queued';

CREATE TABLE embedding_policies (
    id               uuid PRIMARY KEY,
    project_id       uuid NOT NULL REFERENCES projects (id),
    name             text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    description      text,
    object_types     text[] NOT NULL,
    fields           text[] NOT NULL,
    template         text NOT NULL,
    model            text NOT NULL,
    active           boolean NOT NULL DEFAULT true,
    chunking_config  jsonb,
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL
);
CREATE UNIQUE INDEX embedding_policies_name ON embedding_policies (project_id, lower(name));

-- One vector per object and policy; policy_id is the nil UUID for the
-- default text used when no active policy covers the object.
CREATE TABLE graph_object_embeddings (
    object_id    uuid NOT NULL REFERENCES graph_objects (id) ON DELETE CASCADE,
    policy_id    uuid NOT NULL,
    project_id   uuid NOT NULL REFERENCES projects (id),
    provider     text NOT NULL,
    model        text NOT NULL,
    dimension    int NOT NULL,
    embedding    real[] NOT NULL,
    text_sha256  bytea NOT NULL,
    embedded_at  timestamptz NOT NULL,
    PRIMARY KEY (object_id, policy_id)
);
CREATE INDEX graph_object_embeddings_space ON graph_object_embeddings (project_id, model, dimension);

-- Extraction job logs (the spec's log entries; level for monitoring).
CREATE TABLE extraction_job_logs (
    id          uuid PRIMARY KEY,
    job_id      uuid NOT NULL REFERENCES object_extraction_jobs (id) ON DELETE CASCADE,
    project_id  uuid NOT NULL REFERENCES projects (id),
    operation   text NOT NULL CHECK (operation IN ('llm_call', 'chunk_processing', 'object_creation', 'relationship_creation',
                                                   'suggestion_creation', 'validation', 'error')),
    level       text NOT NULL CHECK (level IN ('debug', 'info', 'warn', 'error')),
    message     text NOT NULL,
    metadata    jsonb NOT NULL DEFAULT '{}',
    created_at  timestamptz NOT NULL
);
CREATE INDEX extraction_job_logs_job ON extraction_job_logs (job_id, created_at, id);

-- Every LLM call an extraction job made, with its payloads.
CREATE TABLE extraction_llm_calls (
    id                uuid PRIMARY KEY,
    job_id            uuid NOT NULL REFERENCES object_extraction_jobs (id) ON DELETE CASCADE,
    project_id        uuid NOT NULL REFERENCES projects (id),
    provider          text NOT NULL,
    model_name        text NOT NULL,
    status            text NOT NULL CHECK (status IN ('success', 'error')),
    input_tokens      int NOT NULL DEFAULT 0,
    output_tokens     int NOT NULL DEFAULT 0,
    total_tokens      int NOT NULL DEFAULT 0,
    cost_usd          numeric NOT NULL DEFAULT 0,
    duration_ms       int NOT NULL DEFAULT 0,
    started_at        timestamptz NOT NULL,
    completed_at      timestamptz,
    request_payload   jsonb,
    response_payload  jsonb,
    error_message     text
);
CREATE INDEX extraction_llm_calls_job ON extraction_llm_calls (job_id, started_at, id);

-- +goose Down
DROP TABLE extraction_llm_calls;
DROP TABLE extraction_job_logs;
DROP TABLE graph_object_embeddings;
DROP TABLE embedding_policies;
DROP INDEX graph_embedding_jobs_one_queued;
ALTER TABLE graph_embedding_jobs DROP CONSTRAINT graph_embedding_jobs_object_fk;
ALTER TABLE object_extraction_jobs DROP COLUMN objects_created, DROP COLUMN relationships_created,
    DROP COLUMN suggestions_created, DROP COLUMN created_by;
ALTER TABLE document_chunks DROP COLUMN extracted_at;
DROP TABLE graph_relationship_provenance;
DROP TABLE graph_object_provenance;
DROP TABLE graph_relationships;
DROP TABLE graph_objects;
ALTER TABLE projects DROP COLUMN review_threshold;
DROP TABLE project_template_packs;
DROP TABLE template_packs;
