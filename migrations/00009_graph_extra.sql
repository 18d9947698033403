-- +goose Up
-- A project's own template packs have distinct names (case-insensitive),
-- as the built-in ones do.
CREATE UNIQUE INDEX template_packs_project_name ON template_packs (project_id, lower(name)) WHERE project_id IS NOT NULL;

-- +goose Down
DROP INDEX template_packs_project_name;
