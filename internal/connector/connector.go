// Package connector is the contract between the integration domain and the
// sources it syncs (git, web, rss, s3, clickup). A connector knows one kind
// of source: how its config looks, how to test it and how to walk it. The
// integration domain owns everything else: the integration rows, sealed
// config, sync jobs, documents, the deletion guard, schedules and events.
//
// A connector never writes to the database and never opens a network
// connection except through Env (the egress guard).
package connector

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"time"
)

// Field is one config field of an available integration.
type Field struct {
	// Name is the key in the integration's config (snake_case, as the spec
	// lists them: repository_url, start_urls, ...).
	Name string `json:"name"`
	// Type is the JSON type the value must have: string, url, array (of
	// strings), integer or boolean.
	Type string `json:"type" enum:"string,url,array,integer,boolean"`
	// Description says what the field does, for the operator.
	Description string `json:"description"`
	// Secret marks a credential (token, key, password): sealed at rest,
	// masked in the full view, required again when the target changes.
	Secret bool `json:"secret,omitempty"`
	// Target marks a field that names where the credentials are sent (URL,
	// endpoint, bucket, repository): changing it requires the secrets again.
	Target bool `json:"target,omitempty"`
}

// Field types.
const (
	TypeString  = "string"
	TypeURL     = "url"
	TypeArray   = "array"
	TypeInteger = "integer"
	TypeBoolean = "boolean"
)

// Descriptor describes an available integration (GET
// /api/integrations/available).
type Descriptor struct {
	Name             string  `json:"name"`
	DisplayName      string  `json:"display_name"`
	Description      string  `json:"description"`
	Category         string  `json:"category"`
	AuthType         string  `json:"auth_type"`
	RequiredFields   []Field `json:"required_fields"`
	OptionalFields   []Field `json:"optional_fields"`
	DocumentationURL string  `json:"documentation_url"`
	// Append marks a source that lists only its recent items (a feed): an
	// item a walk does not report may still exist, so the integration
	// domain never deletes a document of such an integration for being
	// unlisted. Not part of the API's view.
	Append bool `json:"-"`
	// SourceTypes are the values the sync option source_types may hold
	// (none: the connector has no source types). The integration domain
	// refuses a sync asking for any other. Not part of the API's view.
	SourceTypes []string `json:"-"`
	// Spaces marks a connector that honours the sync option space_ids.
	// The integration domain refuses space_ids for any other: a sync
	// narrowed by it deletes nothing, so on a source without spaces it
	// would list everything and never delete. Not part of the API's view.
	Spaces bool `json:"-"`
}

// Config is an integration's config as stored (decrypted): field name to
// JSON value. The integration domain checks it against the Descriptor
// (required fields present, no unknown field, types) before a connector
// sees it; Connector.Validate checks what only the connector knows.
type Config map[string]json.RawMessage

// Options are the optional body of POST /api/integrations/{name}/sync. A
// connector honours the ones that apply to it and ignores the rest.
type Options struct {
	FullSync        bool
	SourceTypes     []string
	SpaceIDs        []string
	IncludeArchived bool
	BatchSize       int
}

// Item is one item of the source with its content: it becomes (or
// updates) one document of the project.
type Item struct {
	// ExternalID is stable across syncs and unique within the integration
	// (a path in the repository, a page URL, an object key, a task id).
	ExternalID string
	// Version changes whenever the content may have changed (a blob hash,
	// an ETag, a Last-Modified value, an update timestamp); "" when the
	// source has none (the content hash then decides).
	Version string
	// Title, URL: the source metadata shown with the document.
	Title string
	URL   string
	// Filename and MimeType drive the parser, as an upload's do.
	Filename string
	MimeType string
	Content  []byte
	// Modified is the source's modification time, zero when unknown.
	Modified time.Time
}

// Level of a sync log entry.
const (
	LevelDebug = "debug"
	LevelInfo  = "info"
	LevelWarn  = "warn"
	LevelError = "error"
)

// Walker receives what a connector finds. The integration domain
// implements it: it stores items as documents, counts, logs and
// checkpoints. Every method is called from the connector's goroutine.
type Walker interface {
	// Known returns the version stored for an item by an earlier sync (or
	// the version an earlier sync skipped it at: binary, too large), so
	// that a connector can skip fetching it (conditional GET, ETag or
	// commit comparison).
	Known(externalID string) (version string, ok bool)
	// Unchanged reports an item that is still at the source and was not
	// fetched because Known's version is current.
	Unchanged(ctx context.Context, externalID string) error
	// Item reports a new or changed item with its content. An error stops
	// the walk (the sync fails or is cancelled) unless it is ErrSkipItem.
	Item(ctx context.Context, it Item) error
	// Failed reports an item the connector could not fetch; the walk goes
	// on, but the listing is then incomplete (nothing is deleted).
	Failed(ctx context.Context, externalID string, err error)
	// Log writes an entry to the sync job's log.
	Log(ctx context.Context, level, message string, details map[string]any)
	// State is the connector's own state saved by the last successful
	// sync (a commit hash, a cursor), or, on a retry of a sync that broke
	// off, the state that sync last recorded; nil on the first sync.
	State() json.RawMessage
	// SetState records the state to save when this sync succeeds. It is
	// also the sync's checkpoint: a connector may call it during the walk
	// with a state valid for the items reported so far, and a retry of
	// the same sync starts from it. It writes to the database: call it
	// at checkpoints, not per item.
	SetState(state json.RawMessage)
}

// Env is what a connector may use to reach the outside.
type Env struct {
	// HTTP is a client whose every connection goes through the egress
	// guard (a tenant cannot make the server fetch a private address).
	HTTP *http.Client
	// Dial dials through the egress guard, for clients that take a dialer.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// CacheDir is a directory private to this integration that survives
	// restarts (a git clone); it is removed with the integration.
	CacheDir string
}

// Connector is one kind of source.
type Connector interface {
	// Descriptor returns the available integration this connector is.
	Descriptor() Descriptor
	// Validate checks what the generic checks cannot (URL schemes, value
	// ranges, globs); errors are errs.Invalid naming the field.
	Validate(cfg Config) error
	// Test connects, authenticates and lists one item. The error's
	// message is shown to the operator: it never contains a secret.
	Test(ctx context.Context, env Env, cfg Config) error
	// Walk enumerates the whole source, reporting every item to w (Item
	// for new and changed ones, Unchanged for the others). It returns nil
	// only when the listing was complete and successful: only then does
	// the integration domain delete the documents of items not reported.
	Walk(ctx context.Context, env Env, cfg Config, opts Options, w Walker) error
}

// ErrSkipItem is returned by Walker.Item to skip an item the integration
// domain refuses (too large, unsupported type) without stopping the walk.
var ErrSkipItem = errSkipItem{}

type errSkipItem struct{}

func (errSkipItem) Error() string { return "item skipped" }

// String returns a string field ("" when absent or not a string).
func (c Config) String(name string) string {
	var s string
	if raw, ok := c[name]; ok && json.Unmarshal(raw, &s) == nil {
		return s
	}
	return ""
}

// Strings returns an array-of-strings field (nil when absent).
func (c Config) Strings(name string) []string {
	var s []string
	if raw, ok := c[name]; ok && json.Unmarshal(raw, &s) == nil {
		return s
	}
	return nil
}

// Int returns an integer field, or def when absent.
func (c Config) Int(name string, def int) int {
	var n int
	if raw, ok := c[name]; ok && json.Unmarshal(raw, &n) == nil {
		return n
	}
	return def
}

// Bool returns a boolean field, or def when absent.
func (c Config) Bool(name string, def bool) bool {
	var b bool
	if raw, ok := c[name]; ok && json.Unmarshal(raw, &b) == nil {
		return b
	}
	return def
}
