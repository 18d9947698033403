package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/graphmill/graphmill/internal/connector"
	"github.com/graphmill/graphmill/internal/document"
	"github.com/graphmill/graphmill/internal/egress"
	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/jobqueue"
	"github.com/graphmill/graphmill/internal/postgres"
	"github.com/graphmill/graphmill/internal/secrets"
)

// Timeouts of the calls a connector makes.
const (
	// TestTimeout bounds POST .../test.
	TestTimeout = 30 * time.Second
	// FetchTimeout bounds one HTTP request of a sync.
	FetchTimeout = 2 * time.Minute
)

// Documents is what a sync needs of the document domain
// (document.Service).
type Documents interface {
	SourceStates(ctx context.Context, project, datasource uuid.UUID) (map[string]document.SourceState, error)
	PutSourced(ctx context.Context, tx pgx.Tx, in document.Sourced) (uuid.UUID, document.PutResult, error)
	MarkSourced(ctx context.Context, tx pgx.Tx, project, datasource, job uuid.UUID, externalIDs []string) error
	DeleteInTx(ctx context.Context, tx pgx.Tx, project, id uuid.UUID) error
}

// Config wires the integration domain.
type Config struct {
	Pool      *pgxpool.Pool
	Jobs      *jobqueue.Client
	Box       *secrets.Box
	Registry  *Registry
	Documents Documents
	// Egress is the guard every connection of a connector goes through.
	Egress *egress.Guard
	// CacheDir holds each integration's private directory (a git clone).
	CacheDir string
	Logger   *slog.Logger
	Now      func() time.Time
	// Backoff is the retry delay of failed syncs (nil: jobqueue's).
	Backoff func(retry int) time.Duration
	// MaxItemBytes bounds an item's content, as GRAPHMILL_MAX_UPLOAD_BYTES
	// bounds an upload's (0: no bound beyond the document domain's); a
	// larger item is skipped.
	MaxItemBytes int64
	// Lease is the sync jobs' lease (0: jobqueue.LeaseDefault): a sync
	// whose process died runs again once it has expired.
	Lease time.Duration
	// Listener, when set, is told of every sync that ended (agents
	// triggered by a sync).
	Listener SyncListener
	// Tracer traces the connector's walk of each sync; nil is the no-op
	// provider.
	Tracer trace.TracerProvider
}

// SyncListener is told of every sync that ended, the one its
// integration.sync.completed event reports, in the transaction that
// records the end (the job's final status and the event): what it writes
// commits with them, so once per sync, whichever process ends it. It runs
// in a savepoint: its error is logged and loses only its own writes,
// never the sync's end; but a deadlock or serialization failure
// (postgres.IsTxConflict) runs that whole transaction again, the
// listener's call included, so that it must be safe to run again.
type SyncListener interface {
	SyncEnded(ctx context.Context, tx pgx.Tx, e SyncEnded) error
}

// SyncEnded is a sync that ended.
type SyncEnded struct {
	ProjectID, IntegrationID, JobID uuid.UUID
	// Status is the sync's final status (completed, failed, cancelled).
	Status string
	// Data is the data of its integration.sync.completed event (trigger,
	// counts, error).
	Data map[string]any
}

// Service is the integration domain.
type Service struct {
	cfg    Config
	tracer trace.Tracer
}

// NewService returns the service.
func NewService(c Config) (*Service, error) {
	if c.Pool == nil || c.Jobs == nil || c.Box == nil || c.Registry == nil || c.Documents == nil || c.Egress == nil || c.CacheDir == "" {
		return nil, errors.New("integration: incomplete configuration")
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Tracer == nil {
		c.Tracer = noop.NewTracerProvider()
	}
	return &Service{cfg: c, tracer: c.Tracer.Tracer("github.com/graphmill/graphmill/internal/integration")}, nil
}

func (s *Service) now() time.Time { return s.cfg.Now().UTC() }

// Available lists the available integrations.
func (s *Service) Available() []Available { return s.cfg.Registry.Available() }

func configPlace(id uuid.UUID) []byte { return secrets.Place("integrations", "config", id.String()) }

// opened is an integration row with its config opened and its connector.
type opened struct {
	row
	conn connector.Connector
	desc connector.Descriptor
	cfg  connector.Config
}

func (s *Service) open(r row) (opened, error) {
	o := opened{row: r}
	c, ok := s.cfg.Registry.Get(r.ProviderType)
	if !ok {
		return o, errs.Errorf(errs.FailedPrecondition, "integration %s: the provider type %q is not available on this server", r.Name, r.ProviderType)
	}
	o.conn, o.desc = c, c.Descriptor()
	raw, err := s.cfg.Box.Open(r.ConfigSealed, configPlace(r.ID))
	if err != nil {
		return o, fmt.Errorf("open integration config: %w", err)
	}
	if err := json.Unmarshal(raw, &o.cfg); err != nil {
		return o, fmt.Errorf("decode integration config: %w", err)
	}
	return o, nil
}

func (o opened) settings() settings {
	return settings{SyncInterval: o.SyncInterval, MaxDeleteFraction: o.MaxDeleteFraction}
}

// record is the Integration of r, without config.
func record(r row) Integration {
	i := Integration{
		ID: r.ID, Name: r.Name, DisplayName: r.DisplayName, ProviderType: r.ProviderType, OrgID: r.OrgID, ProjectID: r.ProjectID,
		Status: r.Status, LastSyncAt: r.LastSyncAt, NextSyncAt: r.NextSyncAt, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
	if r.LastJobStatus != nil {
		i.LastSyncStatus = syncVocabulary.Name(jobqueue.Status(*r.LastJobStatus))
	}
	return i
}

// List lists a project's integrations, by name, without their config.
func (s *Service) List(ctx context.Context, project uuid.UUID, limit, offset int) ([]Integration, int, error) {
	return integrationList(ctx, s.cfg.Pool, project, limit, offset)
}

// IntegrationProject is the project of integration id. Errors:
// not_found.
func (s *Service) IntegrationProject(ctx context.Context, id uuid.UUID) (uuid.UUID, error) {
	r, err := integrationGetByID(ctx, s.cfg.Pool, id)
	if err != nil {
		return uuid.Nil, err
	}
	return r.ProjectID, nil
}

// Get returns the full view of an integration: its config with secrets
// masked. Errors: not_found.
func (s *Service) Get(ctx context.Context, project uuid.UUID, name string) (Integration, error) {
	return s.full(ctx, s.cfg.Pool, project, name)
}

// full reads the full view of project's integration called name from db
// (the pool, or the transaction that just wrote it). Errors: not_found.
func (s *Service) full(ctx context.Context, db postgres.DBTX, project uuid.UUID, name string) (Integration, error) {
	r, err := integrationGet(ctx, db, project, name)
	if err != nil {
		return Integration{}, err
	}
	o, err := s.open(r)
	i := record(r)
	if err != nil && errs.CodeOf(err) != errs.FailedPrecondition {
		return Integration{}, err
	}
	if err != nil { // no connector: every value masked, none known to be safe
		i.Config = map[string]any{}
		return i, nil
	}
	i.Config = view(o.desc, o.cfg, o.settings())
	return i, nil
}

// GetPublic returns the public view of an integration. Errors: not_found.
func (s *Service) GetPublic(ctx context.Context, project uuid.UUID, name string) (Public, error) {
	r, err := integrationGet(ctx, s.cfg.Pool, project, name)
	if err != nil {
		return Public{}, err
	}
	return Public{ID: r.ID, Name: r.Name, DisplayName: r.DisplayName, ProviderType: r.ProviderType, Status: r.Status, LastSyncAt: r.LastSyncAt, CreatedAt: r.CreatedAt}, nil
}

// reservedName is the path segment of the catalog route: an integration
// of this name could not be read in full (GET /api/integrations/{name}).
const reservedName = "available"

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,99}$`)

// prepare checks cfg for c and returns it sealed-ready with its settings.
func prepare(c connector.Connector, cfg connector.Config) (settings, error) {
	d := c.Descriptor()
	st, err := checkConfig(d, cfg)
	if err != nil {
		return st, err
	}
	if err := c.Validate(cfg); err != nil {
		if errs.CodeOf(err) == errs.Internal {
			return st, errs.Errorf(errs.Invalid, "config: %v", err)
		}
		return st, err
	}
	return st, nil
}

func (s *Service) seal(id uuid.UUID, cfg connector.Config) (string, error) {
	raw, err := json.Marshal(cfg)
	if err != nil {
		return "", fmt.Errorf("encode integration config: %w", err)
	}
	return s.cfg.Box.Seal(raw, configPlace(id)), nil
}

func (s *Service) nextSync(st settings, now time.Time) *time.Time {
	if st.SyncInterval == nil {
		return nil
	}
	t := now.Add(time.Duration(*st.SyncInterval) * time.Minute)
	return &t
}

// Create configures an integration in project. Errors: invalid_argument
// (name, provider type, config), conflict (name taken).
func (s *Service) Create(ctx context.Context, project uuid.UUID, user *uuid.UUID, p CreateParams) (Integration, error) {
	if !nameRE.MatchString(p.Name) {
		return Integration{}, errs.New(errs.Invalid, "name must be 1 to 100 lowercase letters, digits, - or _, starting with a letter or digit")
	}
	if p.Name == reservedName {
		return Integration{}, errs.Errorf(errs.Invalid, "name %s is taken by GET /api/integrations/available (the catalog): choose another", reservedName)
	}
	p.DisplayName = strings.TrimSpace(p.DisplayName)
	if p.DisplayName == "" || utf8.RuneCountInString(p.DisplayName) > 200 {
		return Integration{}, errs.New(errs.Invalid, "display_name must be 1 to 200 characters")
	}
	c, ok := s.cfg.Registry.Get(p.ProviderType)
	if !ok {
		return Integration{}, errs.Errorf(errs.Invalid, "provider_type %q is not an available integration (GET /api/integrations/available)", p.ProviderType)
	}
	cfg := connector.Config(p.Config)
	if cfg == nil {
		cfg = connector.Config{}
	}
	st, err := prepare(c, cfg)
	if err != nil {
		return Integration{}, err
	}
	now := s.now()
	r := row{
		ID: uuid.Must(uuid.NewV7()), ProjectID: project, Name: p.Name, DisplayName: p.DisplayName, ProviderType: p.ProviderType,
		Status: StatusActive, SyncInterval: st.SyncInterval, MaxDeleteFraction: st.MaxDeleteFraction, NextSyncAt: s.nextSync(st, now),
		CreatedAt: now, UpdatedAt: now,
	}
	if r.ConfigSealed, err = s.seal(r.ID, cfg); err != nil {
		return Integration{}, err
	}
	var out Integration
	err = postgres.WithTx(ctx, s.cfg.Pool, func(tx pgx.Tx) error {
		if err := integrationInsert(ctx, tx, r, user); err != nil {
			return err
		}
		var err error
		out, err = s.full(ctx, tx, project, p.Name)
		return err
	})
	return out, err
}

// Update changes an integration. A given config replaces the stored one;
// secrets sent back masked keep their stored values, and a changed target
// needs its secrets again. Errors: not_found, invalid_argument.
func (s *Service) Update(ctx context.Context, project uuid.UUID, name string, p UpdateParams) (Integration, error) {
	var out Integration
	err := postgres.WithTx(ctx, s.cfg.Pool, func(tx pgx.Tx) error {
		r, err := integrationLock(ctx, tx, project, name)
		if err != nil {
			return err
		}
		now := s.now()
		if p.DisplayName != nil {
			d := strings.TrimSpace(*p.DisplayName)
			if d == "" || len(d) > 200 {
				return errs.New(errs.Invalid, "display_name must be 1 to 200 characters")
			}
			r.DisplayName = d
		}
		if p.Status != nil {
			switch *p.Status {
			case StatusActive, StatusInactive, StatusError:
				r.Status = *p.Status
			default:
				return errs.Errorf(errs.Invalid, "status must be active, inactive or error, not %q", *p.Status)
			}
		}
		if p.Config != nil {
			o, err := s.open(r)
			if err != nil {
				return err
			}
			next := connector.Config(p.Config)
			if err := mergeSecrets(o.desc, o.cfg, next); err != nil {
				return err
			}
			st, err := prepare(o.conn, next)
			if err != nil {
				return err
			}
			if r.ConfigSealed, err = s.seal(r.ID, next); err != nil {
				return err
			}
			if !sameInterval(r.SyncInterval, st.SyncInterval) {
				r.NextSyncAt = s.nextSync(st, now)
			}
			r.SyncInterval, r.MaxDeleteFraction = st.SyncInterval, st.MaxDeleteFraction
		}
		r.UpdatedAt = now
		if err := integrationUpdate(ctx, tx, r); err != nil {
			return err
		}
		out, err = s.full(ctx, tx, project, name)
		return err
	})
	return out, err
}

func sameInterval(a, b *int) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

// Delete removes an integration and its config: its queued or running
// sync is cancelled, its sync jobs and their logs go with it, and its
// documents stay in the project, detached (datasourceId cleared). Errors:
// not_found.
func (s *Service) Delete(ctx context.Context, project uuid.UUID, name string) error {
	var id uuid.UUID
	// A running sync's transactions lock its job row, then the
	// integration's (the final one records the sync on it; a stored item's
	// document references it); this one locks them the other way round.
	// The victim of such a deadlock, when it is this transaction, runs
	// again once the sync's transaction ends.
	err := postgres.WithTxRetryDeadlock(ctx, s.cfg.Pool, func(tx pgx.Tx) error {
		r, err := integrationLock(ctx, tx, project, name)
		if err != nil {
			return err
		}
		id = r.ID
		if _, err := s.cfg.Jobs.CancelWhere(ctx, tx, Queue, jobqueue.Where{ProjectID: &project, Column: "integration_id", Equals: r.ID}); err != nil {
			return err
		}
		return integrationDelete(ctx, tx, r.ID)
	})
	if err != nil {
		return err
	}
	if err := os.RemoveAll(s.cacheDir(id)); err != nil {
		s.cfg.Logger.Warn("removing an integration's cache failed", "integration", id, "err", err)
	}
	return nil
}

func (s *Service) cacheDir(id uuid.UUID) string { return filepath.Join(s.cfg.CacheDir, id.String()) }

// env is what a connector of integration id may use: every connection
// through the egress guard.
func (s *Service) env(id uuid.UUID, timeout time.Duration) connector.Env {
	return connector.Env{HTTP: s.cfg.Egress.Client(timeout), Dial: s.cfg.Egress.DialContext, CacheDir: s.cacheDir(id)}
}

// Test connects to an integration's source (authenticates and lists one
// item) and reports the outcome; the message never holds a secret.
// Errors: not_found, failed_precondition (provider not available).
func (s *Service) Test(ctx context.Context, project uuid.UUID, name string) (TestResult, error) {
	r, err := integrationGet(ctx, s.cfg.Pool, project, name)
	if err != nil {
		return TestResult{}, err
	}
	o, err := s.open(r)
	if err != nil {
		return TestResult{}, err
	}
	tctx, cancel := context.WithTimeout(ctx, TestTimeout)
	defer cancel()
	if err := os.MkdirAll(s.cacheDir(r.ID), 0o700); err != nil {
		return TestResult{}, fmt.Errorf("create integration cache: %w", err)
	}
	if err := o.conn.Test(tctx, s.env(r.ID, TestTimeout), o.cfg); err != nil {
		return TestResult{Success: false, Message: redact(err.Error(), secretValues(o.desc, o.cfg))}, nil
	}
	return TestResult{Success: true, Message: "connected to " + o.desc.DisplayName}, nil
}

// Sync queues a sync of an integration, unless one is queued or running:
// then it answers Success false with that job. Errors: not_found,
// invalid (a source type its connector does not have), failed_precondition
// (inactive, or its provider not available).
func (s *Service) Sync(ctx context.Context, project uuid.UUID, name, trigger string, opts SyncOptions) (SyncResult, error) {
	if opts.BatchSize < 0 || opts.BatchSize > 1000 {
		return SyncResult{}, errs.New(errs.Invalid, "batchSize must be between 1 and 1000")
	}
	var res SyncResult
	err := postgres.WithTx(ctx, s.cfg.Pool, func(tx pgx.Tx) error {
		r, err := integrationGet(ctx, tx, project, name)
		if err != nil {
			return err
		}
		conn, ok := s.cfg.Registry.Get(r.ProviderType)
		if !ok {
			return errs.Errorf(errs.FailedPrecondition, "integration %s: the provider type %q is not available on this server", r.Name, r.ProviderType)
		}
		if err := checkNarrowing(conn.Descriptor(), opts); err != nil {
			return err
		}
		if r.Status == StatusInactive {
			return errs.Errorf(errs.FailedPrecondition, "integration %s is inactive; set its status to active to sync it", r.Name)
		}
		id, queued, err := syncJobInsert(ctx, tx, project, r.ID, trigger, opts, s.now())
		if err != nil {
			return err
		}
		if !queued {
			res = SyncResult{Success: false, Message: "a sync is already in progress", JobID: id}
			return nil
		}
		res = SyncResult{Success: true, Message: "sync queued", JobID: id}
		return jobqueue.Notify(ctx, tx, Queue)
	})
	return res, err
}

// checkNarrowing refuses sync option source_types outside the
// connector's, and space_ids for a connector without spaces: a sync is
// refused at the API, not failed later by its connector nor narrowed
// (deleting nothing) by an option its connector ignores.
func checkNarrowing(d connector.Descriptor, opts SyncOptions) error {
	if len(opts.SpaceIDs) > 0 && !d.Spaces {
		return errs.Errorf(errs.Invalid, "space_ids: this integration has no spaces (provider %s)", d.Name)
	}
	types := opts.SourceTypes
	if len(types) == 0 {
		return nil
	}
	if len(d.SourceTypes) == 0 {
		return errs.Errorf(errs.Invalid, "source_types: this integration has no source types (provider %s)", d.Name)
	}
	for _, t := range types {
		if !slices.Contains(d.SourceTypes, t) {
			return errs.Errorf(errs.Invalid, "source_types: unknown type %q (allowed: %s)", t, strings.Join(d.SourceTypes, ", "))
		}
	}
	return nil
}
