-- +goose Up
-- Models listed from an organization's own openai endpoint (a base URL in
-- its credentials) belong to that organization: org_id names it. NULL is
-- the shared catalog (Google's lists, the OpenAI API, the operator's
-- environment endpoint, the seeded rows). Only shared rows are defaults.
ALTER TABLE provider_models ADD COLUMN org_id uuid REFERENCES orgs (id) ON DELETE CASCADE,
    DROP CONSTRAINT provider_models_provider_model_name_key,
    ADD CONSTRAINT provider_models_name UNIQUE NULLS NOT DISTINCT (provider, org_id, model_name),
    ADD CONSTRAINT provider_models_default_shared CHECK (org_id IS NULL OR NOT is_default);
CREATE INDEX provider_models_org ON provider_models (org_id) WHERE org_id IS NOT NULL;

-- +goose Down
DELETE FROM provider_models WHERE org_id IS NOT NULL;
DROP INDEX provider_models_org;
ALTER TABLE provider_models DROP CONSTRAINT provider_models_default_shared, DROP CONSTRAINT provider_models_name,
    ADD CONSTRAINT provider_models_provider_model_name_key UNIQUE (provider, model_name),
    DROP COLUMN org_id;
