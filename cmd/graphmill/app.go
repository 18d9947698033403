package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/graphmill/graphmill/internal/activity"
	"github.com/graphmill/graphmill/internal/agent"
	"github.com/graphmill/graphmill/internal/audit"
	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/chat"
	"github.com/graphmill/graphmill/internal/config"
	"github.com/graphmill/graphmill/internal/connector"
	"github.com/graphmill/graphmill/internal/connector/clickup"
	"github.com/graphmill/graphmill/internal/connector/gitrepo"
	"github.com/graphmill/graphmill/internal/connector/rss"
	"github.com/graphmill/graphmill/internal/connector/s3"
	"github.com/graphmill/graphmill/internal/connector/web"
	"github.com/graphmill/graphmill/internal/console"
	"github.com/graphmill/graphmill/internal/discovery"
	"github.com/graphmill/graphmill/internal/document"
	"github.com/graphmill/graphmill/internal/egress"
	"github.com/graphmill/graphmill/internal/email"
	"github.com/graphmill/graphmill/internal/embedding"
	"github.com/graphmill/graphmill/internal/embeddingpolicy"
	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/events"
	"github.com/graphmill/graphmill/internal/extraction"
	"github.com/graphmill/graphmill/internal/graph"
	"github.com/graphmill/graphmill/internal/health"
	"github.com/graphmill/graphmill/internal/httpapi"
	"github.com/graphmill/graphmill/internal/integration"
	"github.com/graphmill/graphmill/internal/jobqueue"
	"github.com/graphmill/graphmill/internal/llm"
	"github.com/graphmill/graphmill/internal/mcpregistry"
	"github.com/graphmill/graphmill/internal/mcpserver"
	"github.com/graphmill/graphmill/internal/metrics"
	"github.com/graphmill/graphmill/internal/notification"
	"github.com/graphmill/graphmill/internal/postgres"
	"github.com/graphmill/graphmill/internal/provider"
	"github.com/graphmill/graphmill/internal/scheduler"
	"github.com/graphmill/graphmill/internal/search"
	"github.com/graphmill/graphmill/internal/secrets"
	"github.com/graphmill/graphmill/internal/superadmin"
	"github.com/graphmill/graphmill/internal/task"
	"github.com/graphmill/graphmill/internal/templatepack"
	"github.com/graphmill/graphmill/internal/tenancy"
	"github.com/graphmill/graphmill/internal/tracing"
	"github.com/graphmill/graphmill/internal/vectorindex"
	"github.com/graphmill/graphmill/migrations"
)

// Main is one running Graphmill server: the database (embedded or external),
// the HTTP API, the ops endpoint and everything they need, wired in
// dependency order. End-to-end tests start it on ":0" addresses.
type Main struct {
	Config config.Config
	Logger *slog.Logger
	// Stdout receives the one-time bootstrap token message.
	Stdout io.Writer
	Now    func() time.Time
	// HTTPClient is used for outbound calls (OIDC discovery and keys).
	HTTPClient *http.Client
	// Connectors are offered as integrations beside the built-in ones
	// (git, web, rss, s3, clickup: integrationService): a build embedding
	// Graphmill, or a test, adds its own.
	Connectors []connector.Connector
	// ClickUpBaseURL is the API host of the built-in clickup connector;
	// empty is clickup.DefaultBaseURL (tests point it at a fake).
	ClickUpBaseURL string
	// WorkersOnly runs the job workers and the ops endpoint only (graphmill
	// worker): no public API, no scheduler, no bootstrap.
	WorkersOnly bool

	// AdminToken is the bootstrap token when this start created it.
	AdminToken string

	db       *database
	tracing  *tracing.Provider // OTLP export when configured, no-op otherwise
	notifier *events.Notifier
	hub      *events.Hub
	sched    *scheduler.Scheduler
	jobs     *jobqueue.Client
	guard    *auth.Guard
	watcher  *auth.Watcher // ends streams whose token or membership is gone
	tasks    *task.Service
	extract  *extraction.Service
	mcpReg   *mcpregistry.Service // external MCP servers, tool settings
	vectors  *vectorindex.Index
	notifs   *notification.Service
	emails   *email.Service
	health   *health.Service
	mcp      *mcpserver.Server // built-in MCP server (issue 7)
	api      *httpapi.Server
	ops      *httpapi.Server
	// parts are the long-running parts in start order; Stop stops them in
	// reverse order.
	parts    []part
	stopOnce sync.Once
}

// expiryTask is the scheduler task name: every ten minutes, in the task's
// transaction, del deletes the what that expired, and how many is logged.
func expiryTask(name, what string, log *slog.Logger, del func(ctx context.Context, db postgres.DBTX) (int64, error)) scheduler.Task {
	return scheduler.Task{Name: name, Interval: 10 * time.Minute, RunInTx: func(ctx context.Context, tx pgx.Tx) error {
		n, err := del(ctx, tx)
		if n > 0 {
			log.Info("expired "+what+" deleted", "count", n)
		}
		return err
	}}
}

// part is one long-running part of the server, in the startstop shape:
// Start returns once it runs, Stop waits for its goroutines until its
// context ends and does nothing before Start.
type part interface {
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
}

// database is an open pool and, for the embedded default, the cluster
// behind it and the lock on its data directory.
type database struct {
	pool    *pgxpool.Pool
	cluster *postgres.Cluster
	lock    *os.File
	applied int // migrations withDatabase applied
}

// openDatabase connects to the configured database, starting the embedded
// cluster when no URL is configured. exclusive takes the data directory
// lock, so that two servers cannot share one embedded cluster.
func openDatabase(ctx context.Context, cfg config.Config, logger *slog.Logger, exclusive bool, tracer pgx.QueryTracer) (*database, error) {
	db := &database{}
	url := cfg.DatabaseURL
	if url == "" {
		if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
			return nil, fmt.Errorf("create data directory: %w", err)
		}
		if os.Geteuid() == 0 {
			// PostgreSQL runs as the postgres user, which must be able to
			// pass through (not list) the data directory to reach pg/.
			if err := os.Chmod(cfg.DataDir, 0o711); err != nil { //nolint:gosec // traversal only, no listing; files inside stay 0600
				return nil, fmt.Errorf("chmod data directory: %w", err)
			}
		}
		if exclusive {
			f, err := lockFile(filepath.Join(cfg.DataDir, "graphmill.lock"))
			if err != nil {
				return nil, err
			}
			db.lock = f
		}
		c, err := postgres.NewCluster(filepath.Join(cfg.DataDir, "pg"), postgres.ClusterOptions{Logger: logger})
		if err != nil {
			db.close(ctx, logger)
			return nil, err
		}
		if err := c.Start(ctx); err != nil {
			db.close(ctx, logger)
			return nil, err
		}
		db.cluster = c
		url = c.URL(postgres.ClusterDatabase)
	}
	octx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	pool, err := postgres.OpenTraced(octx, url, cfg.DBMaxConns, tracer)
	if err != nil {
		db.close(ctx, logger)
		return nil, err
	}
	db.pool = pool
	return db, nil
}

func lockFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("another graphmill server is using the data directory %s", filepath.Dir(path))
	}
	return f, nil
}

// close releases everything; a cluster this process adopted rather than
// started is left running only when the lock was not held (an admin
// command next to a running server).
func (db *database) close(ctx context.Context, logger *slog.Logger) {
	if db.pool != nil {
		db.pool.Close()
	}
	if db.cluster != nil && (db.cluster.Started() || db.lock != nil) {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 90*time.Second)
		if err := db.cluster.Stop(sctx); err != nil {
			logger.Error("stop embedded postgres", "err", err)
		}
		cancel()
	}
	if db.lock != nil {
		_ = db.lock.Close()
	}
}

// Start brings the server up; on error everything started is stopped.
func (m *Main) Start(ctx context.Context) (err error) {
	if m.Now == nil {
		m.Now = time.Now
	}
	if m.Stdout == nil {
		m.Stdout = io.Discard
	}
	log := m.Logger
	log.Info("starting graphmill", "version", health.Version(), "config", m.Config)
	defer func() {
		if err != nil {
			m.Stop(context.WithoutCancel(ctx))
		}
	}()

	// Tracing: one tracer provider, passed to every part that traces
	// (no OpenTelemetry globals); shut down, flushing, by Stop.
	if m.tracing, err = tracing.New(ctx, tracing.Config{Endpoint: m.Config.TraceEndpoint(), Version: health.Version()}); err != nil {
		return err
	}
	tp := m.tracing.TracerProvider()
	m.db, err = openDatabase(ctx, m.Config, log, true, tracing.DBTracer(tp))
	if err != nil {
		return err
	}
	pool := m.db.pool
	n, err := postgres.Migrate(ctx, pool, migrations.FS)
	if err != nil {
		return err
	}
	log.Info("migrations applied", "count", n)

	reg := metrics.NewRegistry()
	metrics.RegisterPool(reg, pool)

	var verifier auth.Verifier
	if m.Config.OIDCIssuer != "" {
		verifier = auth.NewOIDCVerifier(m.Config.OIDCIssuer, m.Config.OIDCAudience, m.HTTPClient).WithClock(m.Now)
	}
	m.guard = auth.NewGuard(auth.GuardConfig{
		Directory: tenancy.NewDirectory(pool, m.Now), Verifier: verifier, TTL: m.Config.AuthCacheTTL, Now: m.Now,
	})
	m.notifier = events.NewNotifier(pool, log)
	m.notifier.Listen(auth.InvalidateChannel, func(n events.Notification) {
		if n.Resync {
			m.guard.Invalidate() // changes may have been missed
			return
		}
		m.guard.InvalidateChange(auth.ParseChange(n.Payload))
	})
	m.watcher = auth.NewWatcher(auth.WatcherConfig{Guard: m.guard, Logger: log})
	m.hub = events.NewHub(events.HubConfig{Pool: pool, Guard: m.guard, Watcher: m.watcher, Logger: log, Heartbeat: m.Config.EventHeartbeat})
	m.notifier.Listen(events.Channel, m.hub.HandleNotification)

	ten := tenancy.NewService(pool, m.guard, m.Now)
	if err := ten.SetOIDCTokenMaxLifetime(m.Config.OIDCTokenMaxLifetime); err != nil {
		return err
	}
	m.health = health.NewService(pool, health.Version(), m.Config.Environment, m.Now)

	router := httpapi.NewRouter(httpapi.RouterConfig{
		Logger: log, Metrics: metrics.NewHTTP(reg), Tracer: tp,
		StreamPrefixes: []string{"/api/events/stream", "/api/mcp", console.StreamPrefix},
	})
	api := httpapi.NewAPI(router, m.guard, health.Version())
	router.Method(http.MethodGet, "/api/events/stream", httpapi.Protect(m.guard,
		auth.Rule{Scope: auth.NotificationsRead, Resource: auth.Authenticated}, m.hub))
	m.jobs, err = jobqueue.NewClient(pool, jobqueue.Config{Logger: log, Now: m.Now, Notifier: m.notifier, Metrics: reg, Tracer: tp})
	if err != nil {
		return err
	}
	box, err := m.secretBox()
	if err != nil {
		return err
	}
	// Email: other domains queue messages through it; the queue is worked
	// only when SMTP is configured (declared only otherwise). Secret
	// template values are sealed with the credentials' box.
	m.emails, err = email.NewService(email.Config{Pool: pool, Jobs: m.jobs, SMTPURL: m.Config.SMTPURL, From: m.Config.EmailFrom, Box: box, Now: m.Now})
	if err != nil {
		return err
	}
	if err := m.emails.AddQueue(); err != nil {
		return err
	}
	invitations := tenancy.NewInvitations(ten, invitationMailer{m.emails}, m.Config.PublicBaseURL())
	providers, err := m.providerService(pool, box)
	if err != nil {
		return err
	}
	m.notifs = notification.NewService(pool, ten, m.Now)
	m.notifs.UseEmail(m.emails, m.Config.PublicBaseURL())
	if err := m.jobs.Observe(m.notifs.JobOutcomes); err != nil {
		return err
	}
	m.tasks = task.NewService(pool, ten, m.Now)

	// Template packs give every domain a project's types; the built-in
	// default pack is written at start, like the migrations.
	packs, err := templatepack.NewService(pool, ten, m.Now)
	if err != nil {
		return err
	}
	if err := packs.SeedBuiltin(ctx); err != nil {
		return err
	}

	// The graph and its embeddings need each other: graph writes queue
	// embeddings, and the embedding worker reads objects from the graph.
	objects := &graphObjects{}
	embeddings, err := embedding.NewService(embedding.Config{
		Pool: pool, Jobs: m.jobs, Objects: objects, Models: providers, Logger: log, Now: m.Now,
	})
	if err != nil {
		return err
	}
	graphs := graph.NewService(graph.Config{Pool: pool, Types: packs, Embed: embeddings, Activity: activity.ForgetterOf(activity.ResourceGraphObject), Now: m.Now})
	objects.Service = graphs
	policies := embeddingpolicy.NewService(pool, embeddings, providers, m.Now)
	if err := embeddings.AddQueue(policies, m.Config.QueueProjectMax); err != nil {
		return err
	}

	if err := document.CheckSpoolDir(m.Config.UploadSpoolDir); err != nil {
		return err
	}
	// Documents and extraction need each other: a parse queues the
	// document's extraction, and extraction reads the chunks and records
	// them extracted through documents.
	toExtraction := &documentExtraction{}
	docs, err := document.NewService(document.Config{
		Pool: pool, Jobs: m.jobs, Embedders: providers, Extraction: toExtraction, Activity: activity.ForgetterOf(activity.ResourceDocument),
		Notifier: m.notifs, Logger: log, Now: m.Now,
	})
	if err != nil {
		return err
	}
	if err := docs.AddQueues(m.Config.ParseConcurrency, m.Config.QueueProjectMax); err != nil {
		return err
	}

	// Extraction: the object_extraction worker, job administration and
	// monitoring, and the extraction settings. It resolves the project's
	// generative model per job, writes through the graph, and registers a
	// resolver for its review tasks.
	extractions, err := extraction.NewService(extraction.Config{
		Pool: pool, Jobs: m.jobs, Documents: docs, Projects: ten, Types: packs, Graph: graphs, Tasks: m.tasks, Notifier: m.notifs,
		Logger: log, Now: m.Now, InFlight: providers.InFlight,
		Generators: func(ctx context.Context, project uuid.UUID) (extraction.Generator, error) {
			return providers.Resolve(ctx, project, provider.Generative)
		},
	})
	if err != nil {
		return err
	}
	toExtraction.svc = extractions
	m.extract = extractions
	if err := extractions.AddQueue(extraction.ConcurrencyDefault, m.Config.QueueProjectMax); err != nil {
		return err
	}

	// Schema discovery: the schema_discovery worker proposes types from a
	// project's documents; finalize makes them a template pack.
	discoveries, err := discovery.NewService(discovery.Config{
		Pool: pool, Jobs: m.jobs, Documents: docs, Packs: packs, Extractions: extractions, Logger: log, Now: m.Now,
		Generators: func(ctx context.Context, project uuid.UUID) (provider.Generator, error) {
			return providers.Resolve(ctx, project, provider.Generative)
		},
		Embedders: providers.Embedder,
	})
	if err != nil {
		return err
	}
	if err := discoveries.AddQueue(discovery.ConcurrencyDefault, m.Config.QueueProjectMax); err != nil {
		return err
	}

	// Integrations: sources synced into documents on the integration_sync
	// queue. The registry lists the connectors this server offers.
	// A sync that ends starts the runs of the agents it triggers (the
	// agents are built later, with the MCP server's tool box).
	syncAgents := &agentSyncs{}
	integrations, err := m.integrationService(pool, box, docs, syncAgents)
	if err != nil {
		return err
	}
	if err := integrations.AddQueue(integration.ConcurrencyDefault, m.Config.QueueProjectMax); err != nil {
		return err
	}

	// Search: keyword through PostgreSQL, vectors through the in-process
	// index.
	m.vectors = vectorindex.New(pool, m.notifier, log, vectorindex.Config{CacheBytes: m.Config.VectorCacheBytes})
	searches := search.NewService(search.Config{Pool: pool, Logger: log, Vectors: search.IndexVectors{
		Index: m.vectors, Embedders: queryEmbedders{providers},
	}})

	// Chat: answers grounded on the search and the graph, by the
	// project's generative model or the session's agent's. The agents
	// are built later (they use the MCP server, which uses the chat).
	agentTools := &mcpAgents{}
	chats, err := chat.NewService(chat.Config{
		Pool: pool, Search: searches, Graph: graphs, Agents: agentTools, Activity: activity.ForgetterOf(activity.ResourceChatSession), Logger: log, Now: m.Now,
		ModelFunc: func(ctx context.Context, project uuid.UUID, model string) (chat.Model, error) {
			h, err := providers.ResolveModel(ctx, project, provider.Generative, model)
			if errors.Is(err, provider.ErrNoProvider) {
				return nil, chat.ErrNoProvider
			}
			return h, err
		},
	})
	if err != nil {
		return err
	}

	// The built-in MCP server and the registry of external ones need each
	// other: the server's registry and web search tools call the registry,
	// whose built-in tool catalogue and settings are the server's tools.
	// Its agent tools call the agents, which run with its tool box.
	regTools := &mcpRegistryTools{}
	m.mcp, err = mcpserver.New(mcpserver.Config{
		Graph: graphs, Documents: docs, Search: searches, Registry: regTools, Web: regTools, Settings: regTools, Chat: chats, Agents: agentTools,
		Guard: m.guard, Watcher: m.watcher, Logger: log, AllowedOrigins: m.Config.MCPAllowedOrigins, Stateless: m.Config.MCPStateless,
		PublicHosts: m.Config.PublicHosts, ListenAddr: m.Config.HTTPAddr, Version: health.Version(), TracerProvider: tp,
	})
	if err != nil {
		return err
	}
	if m.mcpReg, err = m.mcpService(pool, box, m.mcp.Catalog()); err != nil {
		return err
	}
	regTools.reg = m.mcpReg
	m.mcp.Mount(router)
	// Agents: runs on the agent_run queue, with the built-in MCP server's
	// tool box and the project's generative model.
	agents, err := agent.NewService(agent.Config{
		Pool: pool, Jobs: m.jobs, Toolbox: tracedToolbox{m.mcp, tp.Tracer("github.com/graphmill/graphmill/internal/mcpserver")}, Integrations: integrations, Principals: tenancy.NewDirectory(pool, m.Now), Notifier: m.notifs,
		Activity: activity.ForgetterOf(activity.ResourceAgent), QuestionTimeout: m.Config.AgentQuestionTimeout, Logger: log, Now: m.Now,
		Models: func(ctx context.Context, project uuid.UUID, model string) (agent.Model, error) {
			h, err := providers.ResolveModel(ctx, project, provider.Generative, model)
			if errors.Is(err, provider.ErrNoProvider) {
				return nil, errs.New(errs.FailedPrecondition, "no generative model is configured for this project")
			}
			return h, err
		},
	})
	if err != nil {
		return err
	}
	if err := agents.AddQueue(agent.ConcurrencyDefault, m.Config.QueueProjectMax); err != nil {
		return err
	}
	agentTools.Service, syncAgents.svc = agents, agents

	// The web console at /: its pages call the services above with the
	// signed-in caller; uploads go through the API's route.
	web, err := console.New(console.Config{
		Guard: m.guard, Projects: ten, Documents: docs, Extraction: extractions, Providers: providers, Tasks: m.tasks, Search: searches, Graph: graphs,
		Jobs: m.jobs, OpsQueues: consoleOpsQueues(), JobPages: consoleJobPages(),
		Chat: chats, Agents: agents, Notifications: m.notifs, MCP: m.mcpReg, Integrations: integrations, Discovery: discoveries,
		Embedding: embeddings, Email: m.emails,
		Events: m.hub, API: router, Box: box, Logger: log, Now: m.Now, Pool: pool,
		OIDC: m.consoleOIDC(), SecureCookie: console.CookieSecurity(m.Config.ConsoleSecureCookie), PublicURL: m.Config.PublicURL,
	})
	if err != nil {
		return err
	}
	web.Mount(router)

	host, _ := os.Hostname()
	workerID := fmt.Sprintf("%s-%d", host, os.Getpid())
	m.sched = scheduler.New(scheduler.Config{Pool: pool, Logger: log, Now: m.Now, WorkerID: workerID, TracerProvider: tp},
		// Network calls: no transaction is held across them (decisions.md).
		scheduler.Task{Name: "provider-models-sync", Interval: m.Config.ModelSyncInterval, Run: providers.SyncCatalog},
		// Database work commits with the task's recorded run.
		scheduler.Task{Name: "scheduled-reextraction", Interval: 10 * time.Minute, RunInTx: extractions.RunScheduledReextraction},
		expiryTask("events-expiry", "events", log, func(ctx context.Context, db postgres.DBTX) (int64, error) {
			return events.DeleteExpired(ctx, db, m.Now())
		}),
		expiryTask("console-sessions-expiry", "console session revocations", log, func(ctx context.Context, db postgres.DBTX) (int64, error) {
			return console.DeleteExpiredRevocations(ctx, db, m.Now())
		}),
		expiryTask("notifications-expiry", "notifications", log, m.notifs.DeleteExpired),
		// Scheduled integration syncs (sync_interval_minutes).
		scheduler.Task{Name: "integration-sync-schedule", Interval: integration.ScheduleInterval, RunInTx: integrations.QueueScheduled},
		// Agents on a schedule (their cron expressions).
		scheduler.Task{Name: "agent-schedule", Interval: agent.ScheduleInterval, RunInTx: agents.QueueScheduled},
		// Daily digests by email: one per user and UTC day (a database rule).
		scheduler.Task{Name: "notifications-digest", Interval: notification.DigestInterval, RunInTx: m.notifs.SendDigests},
	)
	// Every route of the OpenAPI document, registered at once
	// (openAPIDocument registers the same without services).
	registerAPI(api, apiServices{
		health: m.health, production: m.Config.Production(), tenancy: ten, invitations: invitations, providers: providers,
		notifications: m.notifs, tasks: m.tasks, activity: activity.NewService(pool, activity.Resources{Documents: docs, GraphObjects: graphs, Agents: agents, ChatSessions: chats}, m.Now), packs: packs, graph: graphs,
		policies: policies, documents: docs, uploads: document.UploadLimits{
			MaxBytes: m.Config.MaxUploadBytes, MaxJSONBytes: m.Config.MaxJSONUploadBytes,
			MaxConcurrent: m.Config.MaxConcurrentUploads, SpoolDir: m.Config.UploadSpoolDir,
		},
		extraction: extractions, discovery: discoveries, integrations: integrations, search: searches, chat: chats,
		mcpRegistry: m.mcpReg, agents: agents, jobs: m.jobs, embeddings: embeddings, emails: m.emails, scheduler: m.sched,
		superadmin: superadmin.NewService(pool, ten, docs.DocumentCounts), audit: audit.NewService(pool, m.Now),
	})

	if !m.WorkersOnly {
		if err := m.bootstrap(ctx, ten); err != nil {
			return err
		}
	}
	m.ops = httpapi.NewServer("ops", m.Config.OpsAddr, opsHandler(reg, jobqueue.WorkerControl(m.jobs, document.QueueChunkEmbedding, embedding.Queue), log), log)
	m.parts = []part{m.watcher, m.hub, m.notifier, m.vectors, m.mcp, m.ops, m.jobs}
	if !m.WorkersOnly {
		// The API server stops the streams first: they never end by
		// themselves, and its drain would wait for them.
		m.api = httpapi.NewServer("api", m.Config.HTTPAddr, router, log, m.hub, m.mcp)
		m.parts = append(m.parts, m.sched, m.mcpReg, m.api)
	}
	for _, p := range m.parts {
		if err := p.Start(ctx); err != nil {
			return err
		}
	}
	if err := logStages(ctx, log, providers); err != nil {
		return err
	}
	m.health.SetReady(true, "")
	if m.WorkersOnly {
		log.Info("graphmill workers ready", "ops", "http://"+m.ops.Addr())
		return nil
	}
	log.Info("graphmill ready", "api", "http://"+m.api.Addr(), "ops", "http://"+m.ops.Addr())
	return nil
}

// bootstrap sets up an empty database (the first organization, project,
// superadmin and token) and shows the token once.
func (m *Main) bootstrap(ctx context.Context, ten *tenancy.Service) error {
	token, err := ten.Bootstrap(ctx, m.Config.BootstrapToken)
	if err != nil {
		return err
	}
	if token != "" {
		m.AdminToken = token
		if err := m.announceToken(token); err != nil {
			return err
		}
	} else if m.Config.BootstrapToken != "" {
		if known, err := ten.TokenKnown(ctx, m.Config.BootstrapToken); err == nil && !known {
			m.Logger.Warn("GRAPHMILL_BOOTSTRAP_TOKEN is ignored: the database was set up before with another token")
		}
	}
	return nil
}

// graphObjects gives the embedding worker the graph's live objects
// (embedding.ObjectSource); the graph service is set once built.
type graphObjects struct{ *graph.Service }

// documentExtraction gives the document pipeline the extraction service
// (document.Extraction), which is built after it.
type documentExtraction struct{ svc *extraction.Service }

// EnqueueDocument implements document.Extraction.
func (d *documentExtraction) EnqueueDocument(ctx context.Context, tx pgx.Tx, project, doc uuid.UUID, datasource *uuid.UUID, trigger string, newChunks bool) error {
	return d.svc.EnqueueDocument(ctx, tx, project, doc, datasource, trigger, newChunks)
}

// CancelDocumentJobs implements document.Extraction.
func (d *documentExtraction) CancelDocumentJobs(ctx context.Context, tx pgx.Tx, project, doc uuid.UUID) error {
	return d.svc.CancelDocumentJobs(ctx, tx, project, doc)
}

// queryEmbedders embeds search queries with the model of the stored
// vectors, when the project's provider offers it.
type queryEmbedders struct{ providers *provider.Service }

// QueryEmbedder implements search.QueryEmbedders.
func (q queryEmbedders) QueryEmbedder(ctx context.Context, project uuid.UUID, model string) (llm.Embedder, bool, error) {
	h, err := q.providers.ResolveModel(ctx, project, provider.Embedding, model)
	if errors.Is(err, provider.ErrNoProvider) {
		return nil, false, nil // no provider: the stored vectors cannot be searched
	}
	if err != nil {
		return nil, false, err
	}
	return h, h.Model() == model, nil
}

// agentSyncs starts the runs of the agents a sync triggers, in the
// transaction that ends the sync.
type agentSyncs struct{ svc *agent.Service }

// SyncEnded implements integration.SyncListener.
func (a *agentSyncs) SyncEnded(ctx context.Context, tx pgx.Tx, e integration.SyncEnded) error {
	return a.svc.StartForSync(ctx, tx, agent.IntegrationSync(e))
}

// mcpAgents gives the built-in MCP server and the chat the agents, built
// after them.
type mcpAgents struct{ *agent.Service }

// mcpRegistryTools gives the built-in MCP server the registry's external
// tools, web search and built-in tool settings.
type mcpRegistryTools struct{ reg *mcpregistry.Service }

// ListTools implements mcpserver.Registry.
func (r *mcpRegistryTools) ListTools(ctx context.Context, project uuid.UUID) ([]mcpserver.RegistryTool, error) {
	refs, err := r.reg.ListTools(ctx, project)
	if err != nil {
		return nil, err
	}
	out := make([]mcpserver.RegistryTool, len(refs))
	for i, t := range refs {
		out[i] = mcpserver.RegistryTool{
			ServerID: t.ServerID, Server: t.ServerName, Name: t.ToolName, Description: t.Description, InputSchema: t.InputSchema,
			Repeatable: t.Hints.ReadOnly || t.Hints.Idempotent,
		}
	}
	return out, nil
}

// CallTool implements mcpserver.Registry.
func (r *mcpRegistryTools) CallTool(ctx context.Context, project uuid.UUID, server, tool string, args map[string]any) (*mcp.CallToolResult, error) {
	return r.reg.CallTool(ctx, project, server, tool, args)
}

// WebSearch implements mcpserver.WebSearcher.
func (r *mcpRegistryTools) WebSearch(ctx context.Context, project uuid.UUID, query string, count int) ([]mcpserver.WebResult, error) {
	res, err := r.reg.WebSearch(ctx, project, query, count)
	if err != nil {
		return nil, err
	}
	out := make([]mcpserver.WebResult, len(res))
	for i, h := range res {
		out[i] = mcpserver.WebResult{Title: h.Title, URL: h.URL, Description: h.Description}
	}
	return out, nil
}

// WebSearchEnabled implements mcpserver.WebSearcher: enabled, with a key.
func (r *mcpRegistryTools) WebSearchEnabled(ctx context.Context, project uuid.UUID) (bool, error) {
	e, err := r.reg.EffectiveSetting(ctx, project, mcpregistry.WebSearchTool)
	if err != nil {
		return false, err
	}
	return e.Enabled && e.APIKey != "", nil
}

// EnabledTools implements mcpserver.ToolSettings.
func (r *mcpRegistryTools) EnabledTools(ctx context.Context, project uuid.UUID) (map[string]bool, error) {
	return r.reg.EnabledBuiltinTools(ctx, project)
}

// secretBox opens the keys that seal secrets at rest: GRAPHMILL_SECRET_KEY,
// or on the embedded default a key generated into the data directory.
func (m *Main) secretBox() (*secrets.Box, error) {
	key := m.Config.SecretKey
	if key == "" {
		if m.Config.DatabaseURL != "" {
			return nil, fmt.Errorf("GRAPHMILL_SECRET_KEY is required with an external database (base64 of 32 random bytes, e.g. from: openssl rand -base64 32); " +
				"only the embedded default generates its own")
		}
		var err error
		if key, err = secrets.LoadOrCreateKeyFile(filepath.Join(m.Config.DataDir, "secret-key")); err != nil {
			return nil, err
		}
	}
	box, err := secrets.New(key, m.Config.SecretKeysOld...)
	if err != nil {
		return nil, fmt.Errorf("GRAPHMILL_SECRET_KEY: %w", err)
	}
	return box, nil
}

// localWarning is the start-up warning of extraction on the local provider.
const localWarning = "heuristic extractor: expect a rough graph; set GRAPHMILL_OPENAI_BASE_URL=http://localhost:11434/v1 for Ollama " +
	"(GRAPHMILL_OPENAI_MODEL names the model), or a key for OpenAI (GRAPHMILL_OPENAI_API_KEY) or Gemini (GRAPHMILL_KEY_AI_API_KEY)"

// logStages says which provider and model extraction and embedding use
// for projects without credentials of their own or their organization's,
// and warns once when extraction runs on the local heuristic extractor.
func logStages(ctx context.Context, log *slog.Logger, providers *provider.Service) error {
	stages, err := providers.Fallback(ctx)
	if err != nil {
		return fmt.Errorf("provider stages: %w", err)
	}
	for _, st := range stages {
		name := "extraction"
		if st.Purpose == provider.Embedding {
			name = "embedding"
		}
		if st.Provider == "" {
			log.Warn(name+" has no provider: its jobs fail until credentials are stored or set in the environment", "stage", name)
			continue
		}
		log.Info(name+" uses "+st.Provider+" model "+st.Model, "stage", name, "provider", st.Provider, "model", st.Model, "source", st.Source,
			"scope", "projects without their own or their organization's credentials")
		if st.Purpose == provider.Generative && st.Provider == provider.Local {
			log.Warn(localWarning, "stage", name)
		}
	}
	return nil
}

// providerService builds the provider domain with the environment's
// credentials.
func (m *Main) providerService(pool *pgxpool.Pool, box *secrets.Box) (*provider.Service, error) {
	c := m.Config
	env := provider.Environment{
		KeyAIAPIKey: c.KeyAIAPIKey, AccountAIProject: c.AccountAIProject, AccountAILocation: c.AccountAILocation,
		OpenAIBaseURL: c.OpenAIBaseURL, OpenAIAPIKey: c.OpenAIAPIKey, OpenAIModel: c.OpenAIModel, OpenAIEmbeddingModel: c.OpenAIEmbeddingModel,
	}
	guard, err := egress.New(c.EgressAllow)
	if err != nil {
		return nil, fmt.Errorf("GRAPHMILL_EGRESS_ALLOW: %w", err)
	}
	if c.AccountAICredentialsFile != "" {
		b, err := os.ReadFile(c.AccountAICredentialsFile)
		if err != nil {
			return nil, fmt.Errorf("GRAPHMILL_ACCOUNT_AI_CREDENTIALS_FILE: %w", err)
		}
		if err := llm.ValidateServiceAccountJSON(b, guard); err != nil {
			return nil, fmt.Errorf("GRAPHMILL_ACCOUNT_AI_CREDENTIALS_FILE %s: %w", c.AccountAICredentialsFile, err)
		}
		env.AccountAIJSON = b
	}
	return provider.NewService(provider.Config{
		Pool: pool, Box: box, Logger: m.Logger, Now: m.Now, HTTPClient: m.HTTPClient, Egress: guard,
		KeyAIBaseURL: c.KeyAIBaseURL, AccountAIBaseURL: c.AccountAIBaseURL, Environment: env,
		LocalEnabled: c.LocalProviderEnabled(), LocalDimension: c.EmbeddingDimension, RPM: c.ProviderRPM, TPM: c.ProviderTPM,
		Tracer: m.tracing.TracerProvider(),
	}), nil
}

// integrationService builds the integration domain: the registry of
// connectors (one per package under internal/connector), every connection
// of theirs through the egress guard, their caches in the data directory.
func (m *Main) integrationService(pool *pgxpool.Pool, box *secrets.Box, docs *document.Service, listener integration.SyncListener) (*integration.Service, error) {
	guard, err := egress.New(m.Config.EgressAllow)
	if err != nil {
		return nil, fmt.Errorf("GRAPHMILL_EGRESS_ALLOW: %w", err)
	}
	builtin := []connector.Connector{
		gitrepo.New(), web.New(), rss.New(), s3.New(m.Config.MaxUploadBytes), clickup.New(m.ClickUpBaseURL),
	}
	reg, err := integration.NewRegistry(append(builtin, m.Connectors...)...)
	if err != nil {
		return nil, err
	}
	return integration.NewService(integration.Config{
		Pool: pool, Jobs: m.jobs, Box: box, Registry: reg, Documents: docs, Egress: guard,
		CacheDir: filepath.Join(m.Config.DataDir, "integrations"), MaxItemBytes: m.Config.MaxUploadBytes, Logger: m.Logger, Now: m.Now,
		Listener: listener, Tracer: m.tracing.TracerProvider(),
	})
}

// mcpService builds the MCP server registry with the built-in tool
// catalogue, dialling out through the egress guard.
func (m *Main) mcpService(pool *pgxpool.Pool, box *secrets.Box, catalog []mcpserver.CatalogTool) (*mcpregistry.Service, error) {
	c := m.Config
	builtin := make([]mcpregistry.BuiltinTool, 0, len(catalog))
	for _, t := range catalog {
		if t.Name == mcpregistry.WebSearchTool {
			builtin = append(builtin, mcpregistry.WebSearchBuiltin())
			continue
		}
		builtin = append(builtin, mcpregistry.BuiltinTool{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema})
	}
	guard, err := egress.New(c.EgressAllow)
	if err != nil {
		return nil, fmt.Errorf("GRAPHMILL_EGRESS_ALLOW: %w", err)
	}
	return mcpregistry.NewService(mcpregistry.Config{
		Pool: pool, Box: box, Logger: m.Logger, Now: m.Now, Egress: guard,
		Builtin:     builtin,
		StdioPolicy: c.MCPStdio, RegistryURL: c.MCPRegistryURL,
		WebSearchAPIKey: c.WebSearchAPIKey, WebSearchBaseURL: c.WebSearchBaseURL,
		CallTimeout: c.MCPCallTimeout, IdleTimeout: c.MCPIdleTimeout, Version: health.Version(),
		StdioUser: c.MCPStdioUser, MaxResponseBytes: c.MCPMaxResponseBytes, MaxConcurrentCalls: c.MCPMaxConcurrentCalls,
		MaxConcurrentCallsTotal: c.MCPMaxConcurrentCallsTotal, Tracer: m.tracing.TracerProvider(),
	})
}

// announceToken saves the bootstrap token for the operator and shows it
// once (not in production, where it only goes to the file).
// consoleOIDC is the console's client at the OIDC issuer, nil when the
// console signs in with API tokens only.
func (m *Main) consoleOIDC() *console.OIDCClient {
	c := m.Config
	if c.ConsoleOIDCClientID == "" {
		return nil
	}
	redirect := c.ConsoleOIDCRedirectURL
	if redirect == "" {
		redirect = c.PublicBaseURL() + console.OIDCCallbackPath
	}
	return &console.OIDCClient{
		Issuer: c.OIDCIssuer, ClientID: c.ConsoleOIDCClientID, ClientSecret: c.ConsoleOIDCClientSecret,
		RedirectURL: redirect, Scopes: c.ConsoleOIDCScopes, HTTPClient: m.HTTPClient,
	}
}

func (m *Main) announceToken(token string) error {
	if err := os.MkdirAll(m.Config.DataDir, 0o700); err != nil {
		return fmt.Errorf("create data directory: %w", err)
	}
	path, _ := filepath.Abs(filepath.Join(m.Config.DataDir, "admin-token"))
	if m.Config.BootstrapToken == "" {
		if err := os.WriteFile(path, []byte(token+"\n"), 0o600); err != nil {
			return fmt.Errorf("write admin token: %w", err)
		}
	}
	if m.Config.Production() {
		m.Logger.Info("bootstrap admin token created", "file", path)
		return nil
	}
	_, err := fmt.Fprintf(m.Stdout, "\nGraphmill admin token (shown once; saved to %s):\n\n    %s\n\n", path, token)
	return err
}

// opsHandler serves the ops address through the same router middleware as
// the public API (request ids, problem bodies with code and requestId,
// recovery, the NUL check); its requests log at debug level, so metric
// scrapes do not fill the log, and profiles get no route deadline.
func opsHandler(reg *prometheus.Registry, embeddings http.Handler, log *slog.Logger) http.Handler {
	r := httpapi.NewRouter(httpapi.RouterConfig{Logger: log, RequestLevel: slog.LevelDebug, StreamPrefixes: []string{"/debug/pprof/"}})
	r.Mount("/api/embeddings", embeddings)
	r.Method(http.MethodGet, "/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	r.HandleFunc("/debug/pprof/*", pprof.Index)
	r.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	r.HandleFunc("/debug/pprof/profile", pprof.Profile)
	r.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	r.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return refuseCrossSite(r)
}

// refuseCrossSite answers 403 to a request a browser sends on behalf of
// another site's page (Sec-Fetch-Site cross-site or same-site, else an
// Origin other than the address asked): the ops address has no
// authentication, and a page open in a browser on a machine that reaches
// it could otherwise pause the embedding workers with a simple POST, or
// start CPU profiles. curl, Prometheus and an operator opening the
// address in a browser send neither (or Sec-Fetch-Site none).
func refuseCrossSite(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		site := r.Header.Get("Sec-Fetch-Site")
		crossSite := site == "cross-site" || site == "same-site"
		if o := r.Header.Get("Origin"); o != "" && site == "" {
			u, err := url.Parse(o)
			crossSite = err != nil || !strings.EqualFold(u.Host, r.Host)
		}
		if crossSite {
			httpapi.WriteProblem(w, r, errs.New(errs.PermissionDenied,
				"the ops address refuses requests a browser sends for a page of another site"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Stop drains HTTP, stops background work and closes the database,
// stopping the embedded cluster. Only the first call does anything.
func (m *Main) Stop(ctx context.Context) {
	m.stopOnce.Do(func() { m.stop(ctx) })
}

func (m *Main) stop(ctx context.Context) {
	if m.health != nil {
		m.health.SetReady(false, "shutting down")
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.Config.ShutdownTimeout)
	defer cancel()
	for i := len(m.parts) - 1; i >= 0; i-- {
		if err := m.parts[i].Stop(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			m.Logger.Error("stop", "part", fmt.Sprintf("%T", m.parts[i]), "err", err)
		}
	}
	if m.db != nil {
		m.db.close(ctx, m.Logger)
	}
	if m.tracing != nil {
		// The spans of the parts just stopped are flushed.
		tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		if err := m.tracing.Shutdown(tctx); err != nil {
			m.Logger.Error("stop tracing", "err", err)
		}
		cancel()
	}
	m.Logger.Info("graphmill stopped")
}
