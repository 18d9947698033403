package integration

import (
	"context"

	"github.com/google/uuid"

	"github.com/graphmill/graphmill/internal/connector"
	"github.com/graphmill/graphmill/internal/postgres"
)

// Descriptor returns the connector descriptor of a provider type (its
// fields with their types and which are secret), for forms.
func (s *Service) Descriptor(providerType string) (connector.Descriptor, bool) {
	c, ok := s.cfg.Registry.Get(providerType)
	if !ok {
		return connector.Descriptor{}, false
	}
	return c.Descriptor(), true
}

// SyncHistory lists the sync jobs of a project's integration, newest
// first, with their counters. Errors: not_found (the integration).
func (s *Service) SyncHistory(ctx context.Context, project uuid.UUID, name string, limit, offset int) ([]AdminSyncJob, int, error) {
	r, err := integrationGet(ctx, s.cfg.Pool, project, name)
	if err != nil {
		return nil, 0, err
	}
	// The page's ids first (the integration's index), then their rows
	// with their joins: a far page does not join the rows it skips.
	list, err := syncJobsQuery(ctx, s.cfg.Pool, `WHERE j.id IN (SELECT id FROM integration_sync_jobs WHERE integration_id = $1
		ORDER BY created_at DESC, id DESC LIMIT $2 OFFSET $3) ORDER BY j.created_at DESC, j.id DESC`, r.ID, limit, offset)
	if err != nil {
		return nil, 0, err
	}
	total, err := postgres.One[int](ctx, s.cfg.Pool, nil, `SELECT count(*)::int FROM integration_sync_jobs WHERE integration_id = $1`, r.ID)
	if err != nil {
		return nil, 0, err
	}
	return list, total, nil
}

// SyncJob returns one sync job of a project's integration with its log.
// Errors: not_found (the integration, or a job not of it).
func (s *Service) SyncJob(ctx context.Context, project uuid.UUID, name string, id uuid.UUID) (AdminSyncJob, SyncJobLog, error) {
	r, err := integrationGet(ctx, s.cfg.Pool, project, name)
	if err != nil {
		return AdminSyncJob{}, SyncJobLog{}, err
	}
	list, err := syncJobsQuery(ctx, s.cfg.Pool, `WHERE j.integration_id = $1 AND j.id = $2`, r.ID, id)
	if err != nil {
		return AdminSyncJob{}, SyncJobLog{}, err
	}
	if len(list) == 0 {
		return AdminSyncJob{}, SyncJobLog{}, ErrSyncNotFound
	}
	log, err := s.syncLog(ctx, id)
	return list[0], log, err
}

// SyncJobIntegration returns the name of the integration a sync job of
// the project belongs to (notifications link a job by its id alone).
// Errors: not_found (no such job in the project).
func (s *Service) SyncJobIntegration(ctx context.Context, project, id uuid.UUID) (string, error) {
	return postgres.One[string](ctx, s.cfg.Pool, ErrSyncNotFound, `SELECT i.name FROM integration_sync_jobs j
		JOIN integrations i ON i.id = j.integration_id WHERE j.project_id = $1 AND j.id = $2`, project, id)
}
