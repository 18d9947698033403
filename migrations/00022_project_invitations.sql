-- +goose Up
-- Invitations to join a project (issue 14). Only the SHA-256 of the
-- one-time token is stored; the token itself is in the emailed link. A
-- pending invitation past expires_at is expired (computed, not stored).
-- One pending invitation per project and address: inviting the address
-- again replaces its token, role and expiry.
CREATE TABLE project_invitations (
    id           uuid PRIMARY KEY,
    project_id   uuid NOT NULL REFERENCES projects (id),
    email        text NOT NULL CHECK (length(email) BETWEEN 3 AND 320),
    role         text NOT NULL CHECK (role IN ('admin', 'editor', 'viewer')),
    status       text NOT NULL CHECK (status IN ('pending', 'accepted', 'revoked')),
    token_hash   bytea NOT NULL,
    invited_by   uuid NOT NULL REFERENCES users (id),
    expires_at   timestamptz NOT NULL,
    accepted_by  uuid REFERENCES users (id),
    accepted_at  timestamptz,
    revoked_at   timestamptz,
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL,
    CONSTRAINT project_invitations_token_key UNIQUE (token_hash)
);
CREATE INDEX project_invitations_project_idx ON project_invitations (project_id, created_at, id);
CREATE UNIQUE INDEX project_invitations_pending_key ON project_invitations (project_id, lower(email)) WHERE status = 'pending';
-- A user's pending invitations, by address (GET /api/me/invitations).
CREATE INDEX project_invitations_email_idx ON project_invitations (lower(email)) WHERE status = 'pending';

-- +goose Down
DROP TABLE project_invitations;
