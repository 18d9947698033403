package templatepack

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/postgres"
)

// Projects tells which projects a caller can see (tenancy.Service).
type Projects interface {
	VisibleProjects(ctx context.Context, p *auth.Principal, org *uuid.UUID) ([]uuid.UUID, error)
}

// cacheMax bounds the compiled packs kept; the cache is emptied when it is
// reached.
const cacheMax = 1000

// builtinLockKey is the advisory lock key that serialises the built-in
// pack upsert of processes starting together.
const builtinLockKey = 0x67726170686d70 // "graphmp"

type cacheKey struct {
	id      uuid.UUID
	version string
	updated time.Time
}

// Service holds the template pack rules.
type Service struct {
	pool     *pgxpool.Pool
	projects Projects
	now      func() time.Time

	// defaultTypes are the types of the built-in default pack, compiled
	// once.
	defaultTypes *Types

	mu    sync.Mutex
	cache map[cacheKey]*compiledPack
}

// NewService returns a Service. It fails only if the built-in default
// pack does not compile (a programming error).
func NewService(pool *pgxpool.Pool, projects Projects, now func() time.Time) (*Service, error) {
	def := DefaultPack()
	schemas, err := compilePack(def.ObjectTypes, def.RelationshipTypes, true)
	if err != nil {
		return nil, fmt.Errorf("built-in template pack: %w", err)
	}
	return &Service{
		pool: pool, projects: projects, now: now, cache: map[cacheKey]*compiledPack{},
		defaultTypes: mergeTypes([]*compiledPack{{objects: def.ObjectTypes, rels: def.RelationshipTypes, schemas: schemas}}),
	}, nil
}

// SeedBuiltin writes the built-in packs to the database: inserted when
// missing, updated with a bumped version (and a version row) when their
// definition changed, untouched otherwise. Idempotent, and safe to run from several processes
// at once; the server runs it at start, like the migrations. It is not a
// long-running part (no Start/Stop): it runs nothing in the background.
func (s *Service) SeedBuiltin(ctx context.Context) error {
	return postgres.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(builtinLockKey)); err != nil {
			return fmt.Errorf("lock built-in packs: %w", err)
		}
		def := DefaultPack()
		now := s.now().UTC()
		p := Pack{
			Name: def.Name, Description: def.Description, Source: SourceBuiltin,
			ObjectTypes: def.ObjectTypes, RelationshipTypes: def.RelationshipTypes, CreatedAt: now, UpdatedAt: now,
		}
		old, err := packGetBuiltinForUpdate(ctx, tx, def.Name)
		switch {
		case errs.CodeOf(err) == errs.NotFound:
			p.ID, p.Version = uuid.Must(uuid.NewV7()), VersionInitial
			return insertFirstVersion(ctx, tx, p, nil)
		case err != nil:
			return err
		}
		_, err = s.writeVersion(ctx, tx, old, p, nil)
		return err
	})
}

// BumpVersion returns the next patch version of v ("1.2.3" → "1.2.4"); a
// version not ending in a number gets ".1" appended.
func BumpVersion(v string) string {
	i := strings.LastIndex(v, ".")
	n, err := strconv.Atoi(v[i+1:])
	if err != nil || n < 0 {
		return v + ".1"
	}
	return v[:i+1] + strconv.Itoa(n+1)
}

// DefaultTypes returns the types of the built-in default pack.
func (s *Service) DefaultTypes() *Types { return s.defaultTypes }

// TypesFor returns the effective types of project: the union of its
// installed packs in install order (a later pack's type replaces an
// earlier one of the same name), or the built-in default pack when none
// is installed. The result may be shared between callers: read it, do
// not modify it.
func (s *Service) TypesFor(ctx context.Context, project uuid.UUID) (*Types, error) {
	return s.TypesForTx(ctx, s.pool, project)
}

// TypesForTx is TypesFor reading through db (a transaction or the pool).
func (s *Service) TypesForTx(ctx context.Context, db postgres.DBTX, project uuid.UUID) (*Types, error) {
	packs, err := installedPacks(ctx, db, project)
	if err != nil {
		return nil, err
	}
	if len(packs) == 0 {
		return s.defaultTypes, nil
	}
	compiled := make([]*compiledPack, len(packs))
	for i, p := range packs {
		if compiled[i], err = s.compiled(p); err != nil {
			return nil, fmt.Errorf("template pack %s (%s): %w", p.Name, p.ID, err)
		}
	}
	return mergeTypes(compiled), nil
}

// compiled returns p's compiled types, from the cache when p has not
// changed since it was compiled.
func (s *Service) compiled(p Pack) (*compiledPack, error) {
	key := cacheKey{id: p.ID, version: p.Version, updated: p.UpdatedAt}
	s.mu.Lock()
	c, ok := s.cache[key]
	s.mu.Unlock()
	if ok {
		return c, nil
	}
	schemas, err := compilePack(p.ObjectTypes, p.RelationshipTypes, false)
	if err != nil {
		return nil, err
	}
	c = &compiledPack{objects: p.ObjectTypes, rels: p.RelationshipTypes, schemas: schemas}
	s.mu.Lock()
	if len(s.cache) >= cacheMax {
		s.cache = map[cacheKey]*compiledPack{}
	}
	s.cache[key] = c
	s.mu.Unlock()
	return c, nil
}

// ListPacks pages the packs p can see: the built-in packs and the packs
// of the organizations of the projects p can see.
func (s *Service) ListPacks(ctx context.Context, p *auth.Principal, limit, offset int) ([]Pack, int, error) {
	projects, err := s.projects.VisibleProjects(ctx, p, nil)
	if err != nil {
		return nil, 0, err
	}
	return packList(ctx, s.pool, projects, limit, offset)
}

// GetPack returns a pack p can see. Errors: not_found.
func (s *Service) GetPack(ctx context.Context, p *auth.Principal, id uuid.UUID) (Pack, error) {
	if err := s.checkVisible(ctx, p, id); err != nil {
		return Pack{}, err
	}
	return packGet(ctx, s.pool, id)
}

// checkVisible answers not_found unless p can see pack id.
func (s *Service) checkVisible(ctx context.Context, p *auth.Principal, id uuid.UUID) error {
	projects, err := s.projects.VisibleProjects(ctx, p, nil)
	if err != nil {
		return err
	}
	ok, err := packVisible(ctx, s.pool, projects, id)
	if err != nil {
		return err
	}
	if !ok {
		return ErrNotFound
	}
	return nil
}

// PackOrg returns the organization whose projects share pack id (none for
// a built-in pack), for the routes that name a pack. Errors: not_found.
func (s *Service) PackOrg(ctx context.Context, id uuid.UUID) (uuid.UUID, error) {
	return packOrg(ctx, s.pool, id)
}

// ListInstalled pages the packs installed in project, in install order.
func (s *Service) ListInstalled(ctx context.Context, project uuid.UUID, limit, offset int) ([]InstalledPack, int, error) {
	return installedList(ctx, s.pool, project, limit, offset)
}

// Install installs pack id in project (by user, when not nil) and
// returns it as installed, with true when it was not installed before.
// The pack must be built-in or belong to a project of project's
// organization. Installing an installed pack changes nothing. Errors:
// not_found.
func (s *Service) Install(ctx context.Context, project, id uuid.UUID, by *uuid.UUID) (InstalledPack, bool, error) {
	var out InstalledPack
	var created bool
	err := postgres.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		if created, err = s.InstallInTx(ctx, tx, project, id, by); err != nil {
			return err
		}
		out, err = installedGet(ctx, tx, project, id)
		return err
	})
	return out, created, err
}

// InstallInTx is Install in the caller's transaction (a discovery
// finalize installs the pack it makes), reporting only whether the pack
// was not installed before. Errors: not_found.
func (s *Service) InstallInTx(ctx context.Context, tx pgx.Tx, project, id uuid.UUID, by *uuid.UUID) (bool, error) {
	ok, err := packVisible(ctx, tx, []uuid.UUID{project}, id)
	if err != nil {
		return false, err
	}
	if !ok {
		return false, ErrNotFound
	}
	return install(ctx, tx, project, id, by, s.now().UTC())
}

// Uninstall removes pack id from project. Errors: not_found (not
// installed).
func (s *Service) Uninstall(ctx context.Context, project, id uuid.UUID) error {
	ok, err := uninstall(ctx, s.pool, project, id)
	if err != nil {
		return err
	}
	if !ok {
		return ErrNotInstalled
	}
	return nil
}

func (s *Service) packFrom(in PackInput) (Pack, error) {
	p := Pack{
		Name: strings.TrimSpace(in.Name), Description: in.Description, Source: in.Source,
		ObjectTypes: in.ObjectTypes, RelationshipTypes: in.RelationshipTypes,
	}
	if p.Source == "" {
		p.Source = SourceManual
	}
	switch {
	case p.Name == "":
		return Pack{}, ErrPackNameRequired
	case len([]rune(p.Name)) > NameMax:
		return Pack{}, errs.Errorf(errs.Invalid, "template pack names are at most %d characters", NameMax)
	case len([]rune(p.Description)) > DescriptionMax:
		return Pack{}, errs.Errorf(errs.Invalid, "template pack descriptions are at most %d characters", DescriptionMax)
	case p.Source != SourceDiscovery && p.Source != SourceManual:
		return Pack{}, ErrBadSource
	}
	p.fillLists()
	if _, err := compilePack(p.ObjectTypes, p.RelationshipTypes, true); err != nil {
		return Pack{}, err
	}
	return p, nil
}

// CreatePack stores a new pack owned by project in the caller's
// transaction (version 1.0.0, the first of its history, written by by
// when not nil). It is not installed anywhere; the projects of project's
// organization see it. Errors: invalid_argument (a bad definition or
// schema), conflict (the project has a pack of that name).
func (s *Service) CreatePack(ctx context.Context, tx pgx.Tx, project uuid.UUID, in PackInput, by *uuid.UUID) (Pack, error) {
	if project == uuid.Nil {
		return Pack{}, ErrProjectRequired
	}
	p, err := s.packFrom(in)
	if err != nil {
		return Pack{}, err
	}
	if _, err := projectOrgOf(ctx, tx, project); err != nil {
		return Pack{}, err
	}
	now := s.now().UTC()
	p.ID, p.ProjectID, p.Version, p.CreatedAt, p.UpdatedAt = uuid.Must(uuid.NewV7()), &project, VersionInitial, now, now
	if err := insertFirstVersion(ctx, tx, p, by); err != nil {
		return Pack{}, err
	}
	return packGet(ctx, tx, p.ID)
}

// insertFirstVersion stores the new pack p and its first version row.
func insertFirstVersion(ctx context.Context, tx pgx.Tx, p Pack, by *uuid.UUID) error {
	if err := packInsert(ctx, tx, p); err != nil {
		return err
	}
	return versionInsert(ctx, tx, p, firstChangelog(p), by)
}

// UpdatePack replaces the definition of project's pack id in the caller's
// transaction; when it differs from the stored one the patch version is
// bumped, updatedAt set (projects using it see the new types at once)
// and a version row written (by by, when not nil) with the changelog.
// Errors: invalid_argument, not_found (no such pack of project),
// failed_precondition (a built-in pack), conflict (name taken).
func (s *Service) UpdatePack(ctx context.Context, tx pgx.Tx, project, id uuid.UUID, in PackInput, by *uuid.UUID) (Pack, error) {
	p, err := s.packFrom(in)
	if err != nil {
		return Pack{}, err
	}
	old, err := lockOwnPack(ctx, tx, project, id)
	if err != nil {
		return Pack{}, err
	}
	return s.writeVersion(ctx, tx, old, p, by)
}
