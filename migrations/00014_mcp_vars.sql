-- +goose Up
-- Values given at a registry install are sealed, never written into args
-- or url: those keep {name} placeholders, filled from this sealed object
-- (bound to the table, column and row id) when the process starts or the
-- request is made.
ALTER TABLE mcp_servers ADD COLUMN vars_sealed text;

-- +goose Down
ALTER TABLE mcp_servers DROP COLUMN vars_sealed;
