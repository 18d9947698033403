-- +goose Up
-- LLM providers: the model catalog, organization credentials and default
-- models, project policies, and the usage ledger. Secrets are sealed by
-- internal/secrets (AES-256-GCM) bound to their table, column and row id.

-- The model catalog, seeded with the current models of each provider and
-- refreshed from the providers' model lists. Prices are USD per million
-- tokens by input modality and for output (NULL: unknown, costed as 0);
-- rpm/tpm are the default request and token rates of the rate governor.
CREATE TABLE provider_models (
    id                  uuid PRIMARY KEY,
    provider            text NOT NULL CHECK (provider IN ('key-ai', 'account-ai', 'local')),
    model_name          text NOT NULL,
    model_type          text NOT NULL CHECK (model_type IN ('embedding', 'generative')),
    display_name        text,
    dimension           int,
    input_token_limit   int,
    output_token_limit  int,
    price_text          numeric,
    price_image         numeric,
    price_video         numeric,
    price_audio         numeric,
    price_output        numeric,
    rpm                 int,
    tpm                 int,
    is_default          boolean NOT NULL DEFAULT false,
    last_synced         timestamptz NOT NULL,
    UNIQUE (provider, model_name)
);
CREATE UNIQUE INDEX provider_models_default ON provider_models (provider, model_type) WHERE is_default;

-- Prices as published by the providers when this catalog was seeded
-- (Gemini API paid tier and Vertex AI online prediction, prompts up to
-- 200k tokens); Vertex text-embedding-005 is priced per character, shown
-- here converted at 4 characters a token.
INSERT INTO provider_models (id, provider, model_name, model_type, display_name, dimension, input_token_limit, output_token_limit,
                             price_text, price_image, price_video, price_audio, price_output, rpm, tpm, is_default, last_synced)
SELECT gen_random_uuid(), p.provider, m.model_name, m.model_type, m.display_name, m.dimension, m.input_limit, m.output_limit,
       m.price_text, m.price_image, m.price_video, m.price_audio, m.price_output, m.rpm, m.tpm,
       CASE WHEN p.provider = 'key-ai' THEN m.default_key ELSE m.default_account END, now()
FROM (VALUES ('key-ai'), ('account-ai')) AS p (provider)
CROSS JOIN (VALUES
    ('gemini-2.5-pro',        'generative', 'Gemini 2.5 Pro',        NULL::int, 1048576, 65536, 1.25, 1.25, 1.25, 1.25, 10.00, 150,  2000000, false, false),
    ('gemini-2.5-flash',      'generative', 'Gemini 2.5 Flash',      NULL,      1048576, 65536, 0.30, 0.30, 0.30, 1.00, 2.50,  1000, 1000000, true,  true),
    ('gemini-2.5-flash-lite', 'generative', 'Gemini 2.5 Flash-Lite', NULL,      1048576, 65536, 0.10, 0.10, 0.10, 0.30, 0.40,  4000, 4000000, false, false),
    ('gemini-2.0-flash',      'generative', 'Gemini 2.0 Flash',      NULL,      1048576, 8192,  0.10, 0.10, 0.10, 0.70, 0.40,  2000, 4000000, false, false),
    ('gemini-embedding-001',  'embedding',  'Gemini Embedding 001',  3072,      2048,    NULL,  0.15, NULL, NULL, NULL, NULL,  3000, 1000000, true,  false)
) AS m (model_name, model_type, display_name, dimension, input_limit, output_limit,
        price_text, price_image, price_video, price_audio, price_output, rpm, tpm, default_key, default_account);

INSERT INTO provider_models (id, provider, model_name, model_type, display_name, dimension, input_token_limit,
                             price_text, rpm, tpm, is_default, last_synced)
VALUES (gen_random_uuid(), 'account-ai', 'text-embedding-005', 'embedding', 'Text Embedding 005', 768, 2048, 0.10, 1500, 1000000, true, now()),
       (gen_random_uuid(), 'account-ai', 'text-multilingual-embedding-002', 'embedding', 'Text Multilingual Embedding 002', 768, 2048, 0.10, 1500, 1000000, false, now());

-- The offline provider: free, labelled as such.
INSERT INTO provider_models (id, provider, model_name, model_type, display_name, dimension, price_text, price_output, is_default, last_synced)
VALUES (gen_random_uuid(), 'local', 'local/heuristic-v1', 'generative', 'Local heuristic extractor (offline, no model)', NULL, 0, 0, true, now()),
       (gen_random_uuid(), 'local', 'local/feature-hash-v1', 'embedding', 'Local feature-hashing embedder (offline, no model)', 768, 0, NULL, true, now());

CREATE TABLE org_provider_credentials (
    id           uuid PRIMARY KEY,
    org_id       uuid NOT NULL REFERENCES orgs (id),
    provider     text NOT NULL CHECK (provider IN ('key-ai', 'account-ai')),
    secret       text NOT NULL,
    gcp_project  text,
    location     text,
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL,
    UNIQUE (org_id, provider)
);

CREATE TABLE org_provider_models (
    org_id            uuid NOT NULL REFERENCES orgs (id),
    provider          text NOT NULL CHECK (provider IN ('key-ai', 'account-ai')),
    embedding_model   text,
    generative_model  text,
    created_at        timestamptz NOT NULL,
    updated_at        timestamptz NOT NULL,
    PRIMARY KEY (org_id, provider)
);

CREATE TABLE project_provider_policies (
    id                uuid PRIMARY KEY,
    project_id        uuid NOT NULL REFERENCES projects (id),
    provider          text NOT NULL CHECK (provider IN ('key-ai', 'account-ai')),
    policy            text NOT NULL CHECK (policy IN ('none', 'organization', 'project')),
    secret            text,
    gcp_project       text,
    location          text,
    embedding_model   text,
    generative_model  text,
    created_at        timestamptz NOT NULL,
    updated_at        timestamptz NOT NULL,
    UNIQUE (project_id, provider),
    CHECK (policy <> 'project' OR secret IS NOT NULL)
);

-- One row per provider call, generation or embedding, successful or not.
CREATE TABLE provider_usage (
    id                  uuid PRIMARY KEY,
    org_id              uuid NOT NULL REFERENCES orgs (id),
    project_id          uuid NOT NULL REFERENCES projects (id),
    provider            text NOT NULL,
    model               text NOT NULL,
    operation           text NOT NULL CHECK (operation IN ('generate', 'embed')),
    source              text NOT NULL CHECK (source IN ('project', 'organization', 'environment', 'local')),
    job_id              uuid,
    items               int NOT NULL DEFAULT 1,
    text_tokens         bigint NOT NULL DEFAULT 0,
    image_tokens        bigint NOT NULL DEFAULT 0,
    video_tokens        bigint NOT NULL DEFAULT 0,
    audio_tokens        bigint NOT NULL DEFAULT 0,
    output_tokens       bigint NOT NULL DEFAULT 0,
    duration_ms         int NOT NULL,
    status              text NOT NULL CHECK (status IN ('ok', 'error')),
    error               text,
    estimated_cost_usd  numeric NOT NULL DEFAULT 0,
    created_at          timestamptz NOT NULL
);
CREATE INDEX provider_usage_project ON provider_usage (project_id, created_at);
CREATE INDEX provider_usage_org ON provider_usage (org_id, created_at);

-- +goose Down
DROP TABLE provider_usage;
DROP TABLE project_provider_policies;
DROP TABLE org_provider_models;
DROP TABLE org_provider_credentials;
DROP TABLE provider_models;
