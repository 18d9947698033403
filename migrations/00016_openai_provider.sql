-- +goose Up
-- The "openai" provider: any OpenAI-compatible endpoint (OpenAI, Ollama,
-- llama.cpp server, vLLM). Its credentials hold the base URL beside the
-- optional key (sealed together). A catalog model's type is inferred from
-- its name at refresh; type_fixed keeps a type an administrator chose.
ALTER TABLE provider_models DROP CONSTRAINT provider_models_provider_check,
    ADD CONSTRAINT provider_models_provider_check CHECK (provider IN ('key-ai', 'account-ai', 'local', 'openai')),
    ADD COLUMN type_fixed boolean NOT NULL DEFAULT false;
ALTER TABLE org_provider_credentials DROP CONSTRAINT org_provider_credentials_provider_check,
    ADD CONSTRAINT org_provider_credentials_provider_check CHECK (provider IN ('key-ai', 'account-ai', 'openai'));
ALTER TABLE org_provider_models DROP CONSTRAINT org_provider_models_provider_check,
    ADD CONSTRAINT org_provider_models_provider_check CHECK (provider IN ('key-ai', 'account-ai', 'openai'));
ALTER TABLE project_provider_policies DROP CONSTRAINT project_provider_policies_provider_check,
    ADD CONSTRAINT project_provider_policies_provider_check CHECK (provider IN ('key-ai', 'account-ai', 'openai'));

-- OpenAI's list prices (USD per million tokens, standard tier) and tier-1
-- rates when this catalog was seeded. Calls to another endpoint (a local
-- server) cost 0 whatever the model's name.
INSERT INTO provider_models (id, provider, model_name, model_type, display_name, dimension, input_token_limit, output_token_limit,
                             price_text, price_output, rpm, tpm, is_default, last_synced)
VALUES (gen_random_uuid(), 'openai', 'gpt-4o-mini', 'generative', 'GPT-4o mini', NULL, 128000, 16384, 0.15, 0.60, 500, 200000, true, now()),
       (gen_random_uuid(), 'openai', 'gpt-4o', 'generative', 'GPT-4o', NULL, 128000, 16384, 2.50, 10.00, 500, 30000, false, now()),
       (gen_random_uuid(), 'openai', 'gpt-4.1', 'generative', 'GPT-4.1', NULL, 1047576, 32768, 2.00, 8.00, 500, 30000, false, now()),
       (gen_random_uuid(), 'openai', 'gpt-4.1-mini', 'generative', 'GPT-4.1 mini', NULL, 1047576, 32768, 0.40, 1.60, 500, 200000, false, now()),
       (gen_random_uuid(), 'openai', 'gpt-4.1-nano', 'generative', 'GPT-4.1 nano', NULL, 1047576, 32768, 0.10, 0.40, 500, 200000, false, now()),
       (gen_random_uuid(), 'openai', 'text-embedding-3-small', 'embedding', 'Text Embedding 3 Small', 1536, 8191, NULL, 0.02, NULL, 3000, 1000000, true, now()),
       (gen_random_uuid(), 'openai', 'text-embedding-3-large', 'embedding', 'Text Embedding 3 Large', 3072, 8191, NULL, 0.13, NULL, 3000, 1000000, false, now());

-- +goose Down
DELETE FROM project_provider_policies WHERE provider = 'openai';
DELETE FROM org_provider_models WHERE provider = 'openai';
DELETE FROM org_provider_credentials WHERE provider = 'openai';
DELETE FROM provider_models WHERE provider = 'openai';
ALTER TABLE project_provider_policies DROP CONSTRAINT project_provider_policies_provider_check,
    ADD CONSTRAINT project_provider_policies_provider_check CHECK (provider IN ('key-ai', 'account-ai'));
ALTER TABLE org_provider_models DROP CONSTRAINT org_provider_models_provider_check,
    ADD CONSTRAINT org_provider_models_provider_check CHECK (provider IN ('key-ai', 'account-ai'));
ALTER TABLE org_provider_credentials DROP CONSTRAINT org_provider_credentials_provider_check,
    ADD CONSTRAINT org_provider_credentials_provider_check CHECK (provider IN ('key-ai', 'account-ai'));
ALTER TABLE provider_models DROP COLUMN type_fixed, DROP CONSTRAINT provider_models_provider_check,
    ADD CONSTRAINT provider_models_provider_check CHECK (provider IN ('key-ai', 'account-ai', 'local'));
