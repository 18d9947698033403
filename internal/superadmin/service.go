package superadmin

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/tenancy"
)

// DocumentCountsFunc returns the number of live documents of each project
// in ids; the documents domain provides it.
type DocumentCountsFunc func(ctx context.Context, ids []uuid.UUID) (map[uuid.UUID]int, error)

// Service answers the superadmin routes. Deletions and creations go through
// the tenancy service, which owns those records.
type Service struct {
	pool           *pgxpool.Pool
	tenancy        *tenancy.Service
	documentCounts DocumentCountsFunc
}

// NewService returns a Service. documentCounts may be nil while no
// documents domain is wired (every count is then 0).
func NewService(pool *pgxpool.Pool, t *tenancy.Service, documentCounts DocumentCountsFunc) *Service {
	return &Service{pool: pool, tenancy: t, documentCounts: documentCounts}
}

// ErrSelfDelete refuses a superadmin deleting their own account.
var ErrSelfDelete = errs.New(errs.FailedPrecondition, "you cannot delete your own account")

// ListUsers lists live users with their organization memberships.
func (s *Service) ListUsers(ctx context.Context, f Filter) ([]User, int, error) {
	return userList(ctx, s.pool, f)
}

// ListOrganizations lists organizations with member and project counts.
func (s *Service) ListOrganizations(ctx context.Context, f Filter) ([]Organization, int, error) {
	return orgList(ctx, s.pool, f)
}

// ListProjects lists projects with their organization and document count.
func (s *Service) ListProjects(ctx context.Context, f Filter) ([]Project, int, error) {
	list, total, err := projectList(ctx, s.pool, f)
	if err != nil || len(list) == 0 || s.documentCounts == nil {
		return list, total, err
	}
	ids := make([]uuid.UUID, len(list))
	for i, p := range list {
		ids[i] = p.ID
	}
	counts, err := s.documentCounts(ctx, ids)
	if err != nil {
		return nil, 0, fmt.Errorf("count documents: %w", err)
	}
	for i := range list {
		list[i].DocumentCount = counts[list[i].ID]
	}
	return list, total, nil
}

// DeleteUser soft-deletes a user other than the caller; also runs in the
// same transaction. Errors: not_found, failed_precondition.
func (s *Service) DeleteUser(ctx context.Context, caller, id uuid.UUID, also tenancy.TxStep) error {
	if caller == id {
		return ErrSelfDelete
	}
	return s.tenancy.DeleteUser(ctx, id, also)
}
