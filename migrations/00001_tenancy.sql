-- +goose Up
CREATE TABLE orgs (
    id          uuid PRIMARY KEY,
    name        text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    created_at  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL,
    deleted_at  timestamptz
);
CREATE UNIQUE INDEX orgs_name_key ON orgs (lower(name)) WHERE deleted_at IS NULL;

CREATE TABLE projects (
    id          uuid PRIMARY KEY,
    org_id      uuid NOT NULL REFERENCES orgs (id),
    name        text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    created_at  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL,
    deleted_at  timestamptz
);
CREATE UNIQUE INDEX projects_org_name_key ON projects (org_id, lower(name)) WHERE deleted_at IS NULL;

CREATE TABLE users (
    id                uuid PRIMARY KEY,
    oidc_issuer       text,
    oidc_subject      text,
    first_name        text,
    last_name         text,
    display_name      text,
    primary_email     text,
    last_activity_at  timestamptz,
    created_at        timestamptz NOT NULL,
    updated_at        timestamptz NOT NULL,
    deleted_at        timestamptz,
    CHECK ((oidc_issuer IS NULL) = (oidc_subject IS NULL))
);
CREATE UNIQUE INDEX users_oidc_key ON users (oidc_issuer, oidc_subject) WHERE oidc_subject IS NOT NULL;
CREATE UNIQUE INDEX users_email_key ON users (lower(primary_email)) WHERE deleted_at IS NULL AND primary_email IS NOT NULL;

-- Superadmin is a grant, not a role.
CREATE TABLE superadmins (
    user_id     uuid PRIMARY KEY REFERENCES users (id),
    created_at  timestamptz NOT NULL
);

CREATE TABLE org_members (
    org_id      uuid NOT NULL REFERENCES orgs (id),
    user_id     uuid NOT NULL REFERENCES users (id),
    role        text NOT NULL CHECK (role IN ('owner', 'admin', 'member')),
    created_at  timestamptz NOT NULL,
    PRIMARY KEY (org_id, user_id)
);
CREATE INDEX org_members_user_idx ON org_members (user_id);

CREATE TABLE project_members (
    project_id  uuid NOT NULL REFERENCES projects (id),
    user_id     uuid NOT NULL REFERENCES users (id),
    role        text NOT NULL CHECK (role IN ('admin', 'editor', 'viewer')),
    created_at  timestamptz NOT NULL,
    PRIMARY KEY (project_id, user_id)
);
CREATE INDEX project_members_user_idx ON project_members (user_id);

CREATE TABLE api_tokens (
    id          uuid PRIMARY KEY,
    user_id     uuid NOT NULL REFERENCES users (id),
    project_id  uuid REFERENCES projects (id),
    name        text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    prefix      text NOT NULL,
    token_hash  bytea NOT NULL,
    scopes      text[] NOT NULL,
    expires_at  timestamptz,
    revoked_at  timestamptz,
    created_at  timestamptz NOT NULL,
    CONSTRAINT api_tokens_hash_key UNIQUE (token_hash)
);
CREATE INDEX api_tokens_user_idx ON api_tokens (user_id, created_at);
CREATE INDEX api_tokens_project_idx ON api_tokens (project_id, created_at) WHERE project_id IS NOT NULL;

-- +goose Down
DROP TABLE api_tokens;
DROP TABLE project_members;
DROP TABLE org_members;
DROP TABLE superadmins;
DROP TABLE users;
DROP TABLE projects;
DROP TABLE orgs;
