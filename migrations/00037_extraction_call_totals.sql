-- +goose Up
-- Extraction monitoring (GET /api/monitoring/extraction-jobs and the
-- console's monitoring page, issue 18) shows and sorts jobs by their LLM
-- call totals. Summing the call log per request read every call of the
-- project to sort by cost. Each job row keeps its totals instead: calls,
-- tokens and cost (numeric, added exactly, so the sum is the one the call
-- log gives). Triggers on extraction_llm_calls keep them, in the statement
-- that inserts, deletes or changes calls, whichever code or SQL writes
-- them; one update per statement, per job, from its transition table.
ALTER TABLE object_extraction_jobs
    ADD COLUMN llm_calls        int     NOT NULL DEFAULT 0,
    ADD COLUMN llm_total_tokens bigint  NOT NULL DEFAULT 0,
    ADD COLUMN llm_cost_usd     numeric NOT NULL DEFAULT 0;

UPDATE object_extraction_jobs j
SET llm_calls = c.calls, llm_total_tokens = c.tokens, llm_cost_usd = c.cost
FROM (SELECT job_id, count(*) AS calls, sum(total_tokens) AS tokens, sum(cost_usd) AS cost
      FROM extraction_llm_calls GROUP BY job_id) c
WHERE j.id = c.job_id;

-- +goose StatementBegin
CREATE FUNCTION extraction_llm_call_totals() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('DELETE', 'UPDATE') THEN
        UPDATE object_extraction_jobs j
        SET llm_calls = j.llm_calls - c.calls, llm_total_tokens = j.llm_total_tokens - c.tokens, llm_cost_usd = j.llm_cost_usd - c.cost
        FROM (SELECT job_id, count(*) AS calls, sum(total_tokens) AS tokens, sum(cost_usd) AS cost
              FROM old_calls GROUP BY job_id) c
        WHERE j.id = c.job_id;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        UPDATE object_extraction_jobs j
        SET llm_calls = j.llm_calls + c.calls, llm_total_tokens = j.llm_total_tokens + c.tokens, llm_cost_usd = j.llm_cost_usd + c.cost
        FROM (SELECT job_id, count(*) AS calls, sum(total_tokens) AS tokens, sum(cost_usd) AS cost
              FROM new_calls GROUP BY job_id) c
        WHERE j.id = c.job_id;
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER extraction_llm_calls_totals_insert AFTER INSERT ON extraction_llm_calls
    REFERENCING NEW TABLE AS new_calls FOR EACH STATEMENT EXECUTE FUNCTION extraction_llm_call_totals();
CREATE TRIGGER extraction_llm_calls_totals_update AFTER UPDATE ON extraction_llm_calls
    REFERENCING OLD TABLE AS old_calls NEW TABLE AS new_calls FOR EACH STATEMENT EXECUTE FUNCTION extraction_llm_call_totals();
CREATE TRIGGER extraction_llm_calls_totals_delete AFTER DELETE ON extraction_llm_calls
    REFERENCING OLD TABLE AS old_calls FOR EACH STATEMENT EXECUTE FUNCTION extraction_llm_call_totals();

-- The job list sorted by cost (either way) reads a project's jobs in this
-- order from the index, its page at once; the id breaks ties as the list does.
CREATE INDEX object_extraction_jobs_project_cost_idx ON object_extraction_jobs (project_id, llm_cost_usd DESC, id DESC);

-- +goose Down
DROP INDEX object_extraction_jobs_project_cost_idx;
DROP TRIGGER extraction_llm_calls_totals_delete ON extraction_llm_calls;
DROP TRIGGER extraction_llm_calls_totals_update ON extraction_llm_calls;
DROP TRIGGER extraction_llm_calls_totals_insert ON extraction_llm_calls;
DROP FUNCTION extraction_llm_call_totals();
ALTER TABLE object_extraction_jobs DROP COLUMN llm_cost_usd, DROP COLUMN llm_total_tokens, DROP COLUMN llm_calls;
