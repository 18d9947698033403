// Package vectorindex answers nearest-neighbour queries over the embeddings
// stored in PostgreSQL (chunk vectors and graph object vectors) from memory.
//
// Vectors are grouped per project and space: a space is a kind (chunks or
// objects), an embedding model and a dimension, so vectors of different
// models never meet. A (project, space) is loaded from the database on its
// first search, L2-normalised so that cosine similarity is a dot product,
// and searched by an exact SIMD scan; above a size threshold an HNSW graph
// is built in the background and used once ready. Writers call Changed or
// Removed in their transaction; the NOTIFY reaches every process, which
// refreshes the project's spaces on their next search. Entries are evicted,
// least recently used first, to stay within a memory budget.
package vectorindex

import (
	"container/list"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/events"
	"github.com/graphmill/graphmill/internal/postgres"
	"github.com/graphmill/graphmill/internal/startstop"
)

// The kinds of vectors a space holds.
const (
	KindChunks  = "chunks"  // document_chunks.embedding
	KindObjects = "objects" // graph_object_embeddings.embedding
)

// Channel is the NOTIFY channel of Changed and Removed.
const Channel = "vectorindex"

// Defaults of Config.
const (
	CacheBytesDefault      = 1 << 30
	HNSWThresholdDefault   = 20_000
	HNSWMDefault           = 16
	HNSWEfConstructDefault = 100
	HNSWEfSearchDefault    = 200
	OversampleDefault      = 4
	OverlapDefault         = 2 * time.Minute
)

// Errors of Search, Spaces, Changed and Removed.
var (
	ErrKind       = errs.New(errs.Invalid, "unknown vector kind")
	ErrDimension  = errs.New(errs.Invalid, "the query vector's dimension does not match the vector space")
	ErrZeroQuery  = errs.New(errs.Invalid, "the query vector has no direction (zero or not finite)")
	ErrNotRunning = errs.New(errs.Unavailable, "the vector index is not running")
)

// Space identifies vectors that can be compared: same kind, same model,
// same dimension.
type Space struct {
	Kind      string
	Model     string
	Dimension int
}

func (s Space) String() string { return fmt.Sprintf("%s/%s/%d", s.Kind, s.Model, s.Dimension) }

// Hit is one search result: a chunk or object ID and its cosine similarity
// to the query.
type Hit struct {
	ID    uuid.UUID
	Score float32
}

// Config tunes an Index; zero fields take their defaults.
type Config struct {
	// CacheBytes is the memory budget (GRAPHMILL_VECTOR_CACHE_BYTES).
	CacheBytes int64
	// HNSWThreshold is the number of vectors in a (project, space) from
	// which an HNSW graph is built; smaller spaces are always scanned.
	HNSWThreshold int
	// HNSWM is the number of links per node (twice that on the base layer).
	HNSWM int
	// HNSWEfConstruction is the candidate list size while building.
	HNSWEfConstruction int
	// HNSWEfSearch is the minimum candidate list size of a search.
	HNSWEfSearch int
	// Oversample multiplies the candidate list of a filtered HNSW search;
	// a filter estimated to pass fewer than 1/Oversample of the vectors
	// is served by the exact scan instead.
	Oversample int
	// Overlap is how far before the newest embedded_at already loaded an
	// incremental refresh reads again, to catch writers whose transaction
	// committed late or whose clock lags.
	Overlap time.Duration
}

func (c Config) withDefaults() Config {
	c.CacheBytes = positiveOr(c.CacheBytes, CacheBytesDefault)
	c.HNSWThreshold = positiveOr(c.HNSWThreshold, HNSWThresholdDefault)
	if c.HNSWM <= 1 { // one link per node is no graph
		c.HNSWM = HNSWMDefault
	}
	c.HNSWEfConstruction = positiveOr(c.HNSWEfConstruction, HNSWEfConstructDefault)
	c.HNSWEfSearch = positiveOr(c.HNSWEfSearch, HNSWEfSearchDefault)
	c.Oversample = positiveOr(c.Oversample, OversampleDefault)
	c.Overlap = positiveOr(c.Overlap, OverlapDefault)
	return c
}

// positiveOr is v, or def when v is not positive.
func positiveOr[T int | int64 | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// Listener delivers notifications of a channel; *events.Notifier is one.
type Listener interface {
	Listen(channel string, fn func(events.Notification)) (unlisten func())
}

type entryKey struct {
	project uuid.UUID
	space   Space
}

type stateKey struct {
	project uuid.UUID
	kind    string
}

// version counts the notifications seen for a (project, kind): changed on
// every one, removed on those that may have removed vectors.
type version struct {
	changed, removed uint64
}

// Index is the in-process vector index. It is safe for concurrent use.
type Index struct {
	db       postgres.DBTX
	listener Listener
	logger   *slog.Logger
	cfg      Config

	// life owns the graph builds.
	life startstop.Base

	mu       sync.Mutex
	running  bool // between Start and Stop
	unlisten func()
	entries  map[entryKey]*list.Element // of *entry
	lru      *list.List                 // front: most recently used
	used     int64
	versions map[stateKey]version
	resyncs  uint64
	spaces   map[stateKey]spacesCache
}

type spacesCache struct {
	at     version
	resync uint64
	spaces []Space
}

// New returns an index reading from db, kept fresh (once started) by the
// notifications listener delivers on Channel.
func New(db postgres.DBTX, listener Listener, logger *slog.Logger, cfg Config) *Index {
	return &Index{
		db:       db,
		listener: listener,
		logger:   logger,
		cfg:      cfg.withDefaults(),
		entries:  map[entryKey]*list.Element{},
		lru:      list.New(),
		versions: map[stateKey]version{},
		spaces:   map[stateKey]spacesCache{},
	}
}

// Start subscribes to the change notifications and opens the index to
// searches (which return ErrNotRunning before Start and after Stop).
func (ix *Index) Start(ctx context.Context) error {
	if err := ix.life.Begin(ctx); err != nil {
		return fmt.Errorf("vector index: %w", err)
	}
	unlisten := ix.listener.Listen(Channel, ix.notified)
	ix.mu.Lock()
	ix.running, ix.unlisten = true, unlisten
	ix.mu.Unlock()
	return nil
}

// Stop closes the index to searches, stops listening, drops every entry
// and stops the graph builds, waiting for them until ctx ends.
func (ix *Index) Stop(ctx context.Context) error {
	ix.mu.Lock()
	unlisten := ix.unlisten
	ix.running, ix.unlisten = false, nil
	ix.entries = map[entryKey]*list.Element{}
	ix.lru.Init()
	ix.used = 0
	ix.mu.Unlock()
	if unlisten != nil {
		unlisten()
	}
	return ix.life.Stop(ctx)
}

// Changed tells every process that vectors of kind were added to project
// or replaced (re-embedded, possibly with another model). Call it in the
// transaction that writes them: the notification is sent on commit.
func Changed(ctx context.Context, db postgres.DBTX, project uuid.UUID, kind string) error {
	return notify(ctx, db, project, kind, opChanged)
}

// Removed tells every process that vectors of kind may have left project,
// or come back without being re-embedded (chunks or documents deleted,
// objects deleted, soft-deleted or restored, embeddings deleted). Each
// process then reconciles the project's loaded spaces of that kind with
// the database on their next search: it reads every key and embedded_at
// of the space (not the vectors), drops what is gone and fetches what it
// lacks. Changed is enough, and cheaper, for additions and replacements.
func Removed(ctx context.Context, db postgres.DBTX, project uuid.UUID, kind string) error {
	return notify(ctx, db, project, kind, opRemoved)
}

const (
	opChanged = "changed"
	opRemoved = "removed"
)

func notify(ctx context.Context, db postgres.DBTX, project uuid.UUID, kind, op string) error {
	if kind != KindChunks && kind != KindObjects {
		return fmt.Errorf("%w: %q", ErrKind, kind)
	}
	if _, err := db.Exec(ctx, `SELECT pg_notify($1, $2)`, Channel, project.String()+":"+kind+":"+op); err != nil {
		return fmt.Errorf("notify vector change: %w", err)
	}
	return nil
}

// notified runs on the notifier's goroutine: it only bumps counters.
func (ix *Index) notified(n events.Notification) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if n.Resync {
		// Notifications may have been lost: every entry reconciles.
		ix.resyncs++
		return
	}
	parts := strings.Split(n.Payload, ":")
	if len(parts) != 3 {
		ix.logger.Warn("vectorindex: ignoring malformed notification", "payload", n.Payload)
		return
	}
	project, err := uuid.Parse(parts[0])
	if err != nil || (parts[1] != KindChunks && parts[1] != KindObjects) {
		ix.logger.Warn("vectorindex: ignoring malformed notification", "payload", n.Payload)
		return
	}
	k := stateKey{project, parts[1]}
	v := ix.versions[k]
	v.changed++
	if parts[2] != opChanged {
		v.removed++
	}
	ix.versions[k] = v
}

// stamp is what an entry was loaded at: the counters of its (project,
// kind) and the resync count.
type stamp struct {
	v      version
	resync uint64
}

func (ix *Index) stampOf(project uuid.UUID, kind string) stamp {
	return stamp{ix.versions[stateKey{project, kind}], ix.resyncs}
}

// Spaces lists the spaces project has vectors in, ordered by kind, model
// and dimension, so that a caller embeds its query with the stored model.
func (ix *Index) Spaces(ctx context.Context, project uuid.UUID) ([]Space, error) {
	var out []Space
	for _, kind := range []string{KindChunks, KindObjects} {
		ss, err := ix.kindSpaces(ctx, project, kind)
		if err != nil {
			return nil, err
		}
		out = append(out, ss...)
	}
	return out, nil
}

func (ix *Index) kindSpaces(ctx context.Context, project uuid.UUID, kind string) ([]Space, error) {
	k := stateKey{project, kind}
	ix.mu.Lock()
	if !ix.running {
		ix.mu.Unlock()
		return nil, ErrNotRunning
	}
	st := ix.stampOf(project, kind)
	if c, ok := ix.spaces[k]; ok && c.at == st.v && c.resync == st.resync {
		ix.mu.Unlock()
		return slices.Clone(c.spaces), nil
	}
	ix.mu.Unlock()
	ss, err := spacesList(ctx, ix.db, project, kind)
	if err != nil {
		return nil, err
	}
	ix.mu.Lock()
	ix.spaces[k] = spacesCache{at: st.v, resync: st.resync, spaces: ss}
	ix.mu.Unlock()
	return slices.Clone(ss), nil
}

// Search returns the k vectors of project in space most similar to query
// (cosine similarity, best first), at most one hit per ID. filter, when not
// nil, says which IDs may be returned; it runs under the space's read lock,
// so it must be quick and must not call the index. A space the project has no vectors
// in gives no hits. Errors: invalid_argument (ErrKind, ErrDimension,
// ErrZeroQuery), unavailable (ErrNotRunning), and database errors while
// loading.
func (ix *Index) Search(ctx context.Context, project uuid.UUID, space Space, query []float32, k int, filter func(id uuid.UUID) bool) ([]Hit, error) {
	if space.Kind != KindChunks && space.Kind != KindObjects {
		return nil, fmt.Errorf("%w: %q", ErrKind, space.Kind)
	}
	if len(query) != space.Dimension {
		return nil, fmt.Errorf("%w: %d, space %s", ErrDimension, len(query), space)
	}
	if k <= 0 {
		return nil, nil
	}
	q := slices.Clone(query)
	if !normalize(q) {
		return nil, ErrZeroQuery
	}
	e, err := ix.acquire(ctx, entryKey{project, space})
	if err != nil {
		return nil, err
	}
	return e.search(q, k, filter, ix.cfg), nil
}

// acquire returns the entry of key, loaded and fresh.
func (ix *Index) acquire(ctx context.Context, key entryKey) (*entry, error) {
	ix.mu.Lock()
	if !ix.running {
		ix.mu.Unlock()
		return nil, ErrNotRunning
	}
	var e *entry
	if el, ok := ix.entries[key]; ok {
		e = el.Value.(*entry)
		ix.lru.MoveToFront(el)
	} else {
		e = &entry{key: key}
		ix.entries[key] = ix.lru.PushFront(e)
	}
	want := ix.stampOf(key.project, key.space.Kind)
	ix.mu.Unlock()

	total, err := e.refresh(ctx, ix, want)
	if err != nil {
		return nil, err
	}
	if total >= 0 {
		ix.charge(e, total)
	}
	ix.maybeBuild(e)
	return e, nil
}

// charge records that e holds total bytes and evicts least recently used
// entries (never e) until the budget holds.
func (ix *Index) charge(e *entry, total int64) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	el, ok := ix.entries[e.key]
	if !ok || el.Value.(*entry) != e {
		return // evicted or stopped meanwhile
	}
	ix.used += total - e.charged
	e.charged = total
	for ix.used > ix.cfg.CacheBytes {
		back := ix.lru.Back()
		if back == nil || back.Value.(*entry) == e {
			break
		}
		victim := back.Value.(*entry)
		ix.lru.Remove(back)
		delete(ix.entries, victim.key)
		ix.used -= victim.charged
		victim.evicted.Store(true)
		ix.logger.Debug("vectorindex: evicted", "project", victim.key.project, "space", victim.key.space.String(), "bytes", victim.charged)
	}
	if ix.used > ix.cfg.CacheBytes {
		ix.logger.Warn("vectorindex: one space exceeds the cache budget", "project", e.key.project, "space", e.key.space.String(),
			"bytes", ix.used, "budget", ix.cfg.CacheBytes)
	}
}

// Stats describes what the index holds.
type Stats struct {
	Entries int
	Bytes   int64
}

// Stats returns the number of loaded (project, space) entries and the
// bytes charged against the budget.
func (ix *Index) Stats() Stats {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return Stats{Entries: ix.lru.Len(), Bytes: ix.used}
}

// EntryStats describes one loaded (project, space).
type EntryStats struct {
	Vectors int  // live vectors
	Graph   bool // searches use the HNSW graph
	Indexed int  // slots (live or dead) in the graph; later ones are scanned
}

// EntryStats reports on a loaded (project, space); ok is false when it is
// not loaded.
func (ix *Index) EntryStats(project uuid.UUID, space Space) (EntryStats, bool) {
	ix.mu.Lock()
	el, ok := ix.entries[entryKey{project, space}]
	ix.mu.Unlock()
	if !ok {
		return EntryStats{}, false
	}
	e := el.Value.(*entry)
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.data == nil {
		return EntryStats{}, false
	}
	return EntryStats{Vectors: e.data.live, Graph: e.data.graph != nil, Indexed: e.data.graphN}, true
}
