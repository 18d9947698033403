package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/graphmill/graphmill/internal/connector"
	"github.com/graphmill/graphmill/internal/document"
	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/events"
	"github.com/graphmill/graphmill/internal/jobqueue"
	"github.com/graphmill/graphmill/internal/postgres"
)

// Sync phases, as the job row shows them.
const (
	PhasePending  = "pending"
	PhaseListing  = "listing"
	PhaseDeleting = "deleting"
	PhaseDone     = "done"
)

// Worker defaults.
const (
	// ConcurrencyDefault is the syncs in flight per process.
	ConcurrencyDefault = 2
	// unchangedBatch is how many unchanged items are confirmed per
	// transaction.
	unchangedBatch = 200
)

// AddQueue registers the integration_sync queue and its worker.
func (s *Service) AddQueue(concurrency, projectMax int) error {
	return s.cfg.Jobs.AddQueue(jobqueue.QueueConfig{
		Name: Queue, Table: "integration_sync_jobs", Concurrency: concurrency, BatchSize: 1, ProjectMax: projectMax,
		Handler: jobqueue.EachFunc(s.runSync), BackoffFunc: s.cfg.Backoff, OutcomeFunc: s.syncOutcomes, Lease: s.cfg.Lease,
	})
}

// permanent reports connector errors another attempt cannot fix: a
// refused config or destination.
func permanent(err error) bool {
	c := errs.CodeOf(err)
	return c == errs.Invalid || c == errs.FailedPrecondition
}

// runSync works one sync job: it walks the source through a walker that
// stores each item as a document in its own transaction (with the job's
// counters and log), then, after a complete listing, deletes the documents
// of items no longer at the source (within the deletion guard), and
// completes the job with the connector's new state.
func (s *Service) runSync(ctx context.Context, j jobqueue.Job) error {
	job, err := syncJobGet(ctx, s.cfg.Pool, j.ID)
	if err != nil {
		return jobqueue.Permanent(err)
	}
	r, err := integrationGetByID(ctx, s.cfg.Pool, job.IntegrationID)
	if err != nil {
		return jobqueue.Permanent(err)
	}
	o, err := s.open(r)
	if err != nil {
		return jobqueue.Permanent(err)
	}
	var opts SyncOptions
	if err := json.Unmarshal(job.Options, &opts); err != nil {
		return jobqueue.Permanent(fmt.Errorf("decode sync options: %w", err))
	}
	known, err := s.cfg.Documents.SourceStates(ctx, r.ProjectID, r.ID)
	if err != nil {
		return err
	}
	skipped, err := skippedItemsGet(ctx, s.cfg.Pool, r.ID)
	if err != nil {
		return err
	}
	// A retry of the job resumes from the state its earlier attempt
	// checkpointed; else from the last successful sync's.
	state := r.ConnectorState
	if len(job.Checkpoint) > 0 {
		state = job.Checkpoint
	}
	w := &walker{
		s: s, ctx: ctx, job: j, project: r.ProjectID, integration: r.ID, known: known, skipped: skipped, seen: map[string]bool{}, state: state,
		secrets: secretValues(o.desc, o.cfg),
	}
	if err := syncJobStartAttempt(ctx, s.cfg.Pool, j.ID, s.now()); err != nil {
		return err
	}
	w.Log(ctx, connector.LevelInfo, fmt.Sprintf("sync started (attempt %d)", j.Attempt), map[string]any{
		"provider": r.ProviderType, "trigger": job.Trigger, "known": len(known), "fullSync": opts.FullSync,
		"checkpoint": len(job.Checkpoint) > 0,
	})
	if err := os.MkdirAll(s.cacheDir(r.ID), 0o700); err != nil {
		return fmt.Errorf("create integration cache: %w", err)
	}
	walkErr := s.walk(ctx, o, opts, w)
	// The unchanged items seen are confirmed even when the walk failed:
	// a retry does not count them again.
	if err := w.flush(ctx); walkErr == nil {
		walkErr = err
	}
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	if walkErr != nil {
		msg := w.redact(walkErr.Error())
		w.Log(ctx, connector.LevelError, "the listing failed: nothing is deleted", map[string]any{"error": msg})
		if permanent(walkErr) {
			return jobqueue.Permanent(errors.New(msg))
		}
		return errors.New(msg)
	}
	if err := s.deleteMissing(ctx, w, r, o.desc, opts); err != nil {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		return err
	}
	if n := len(w.skippedUnchanged); n > 0 {
		w.Log(ctx, connector.LevelInfo, fmt.Sprintf("%d items skipped by an earlier sync are unchanged: not read again", n), nil)
	}
	narrowed := len(opts.SpaceIDs) > 0 || len(opts.SourceTypes) > 0
	// Run again when it loses a deadlock (in syncOutcomes, which
	// FinishInTx calls, say): the sync's end commits whole.
	return postgres.WithTxRetryDeadlock(ctx, s.cfg.Pool, func(tx pgx.Tx) error {
		now := s.now()
		if err := syncJobSetPhase(ctx, tx, j.ID, PhaseDone, w.newState, now); err != nil {
			return err
		}
		if err := integrationSynced(ctx, tx, r.ID, w.newState, now); err != nil {
			return err
		}
		if !narrowed {
			// The complete listing did not report the others.
			if err := skippedItemsPrune(ctx, tx, r.ID, j.ID, w.skippedUnchanged); err != nil {
				return err
			}
		}
		if err := syncLogInsert(ctx, tx, j.ID, r.ProjectID, connector.LevelInfo, "sync completed", nil, now); err != nil {
			return err
		}
		return s.cfg.Jobs.FinishInTx(ctx, tx, Queue, j, jobqueue.StatusCompleted)
	})
}

// deleteMissing deletes the documents of items the complete listing did
// not report: never after a sync narrowed by space_ids or source_types, a
// listing with failed items or an empty listing (not even on a full
// sync), and never more than the integration's max_delete_fraction of the
// documents it had before the walk unless the sync is a full sync (a
// source answering with an error page or an empty listing must not wipe a
// project).
func (s *Service) deleteMissing(ctx context.Context, w *walker, r row, desc connector.Descriptor, opts SyncOptions) error {
	if desc.Append {
		// A feed lists only its recent items: one that dropped out of the
		// listing is old, not deleted at the source.
		return nil
	}
	if len(opts.SpaceIDs) > 0 || len(opts.SourceTypes) > 0 {
		// The listing covers only the asked-for spaces or source types: an
		// item it did not report may well still be at the source.
		w.Log(ctx, connector.LevelInfo, "the sync is narrowed (space_ids or source_types): nothing is deleted",
			map[string]any{"spaceIds": len(opts.SpaceIDs), "sourceTypes": opts.SourceTypes})
		return nil
	}
	if w.failedAny {
		w.Log(ctx, connector.LevelWarn, "the listing is incomplete (items failed): nothing is deleted", nil)
		return nil
	}
	if len(w.seen) == 0 {
		// No item and no unchanged one: a source answering with an empty
		// listing must not wipe a project, not even on a full sync.
		w.Log(ctx, connector.LevelWarn, "the listing is empty: nothing is deleted", map[string]any{"documents": len(w.known)})
		return nil
	}
	states, err := s.cfg.Documents.SourceStates(ctx, r.ProjectID, r.ID)
	if err != nil {
		return err
	}
	var gone []document.SourceState
	for ext, st := range states {
		if !w.seen[ext] {
			gone = append(gone, st)
		}
	}
	if len(gone) == 0 {
		return nil
	}
	// The fraction is of the documents the integration had before the
	// walk: the ones this run created do not dilute it.
	limit := r.MaxDeleteFraction * float64(len(w.known))
	if !opts.FullSync && float64(len(gone)) > limit {
		w.Log(ctx, connector.LevelWarn, "deletion guard: too many documents are missing at the source; nothing is deleted (run a full sync to delete them)",
			map[string]any{"missing": len(gone), "documents": len(w.known), "maxDeleteFraction": r.MaxDeleteFraction})
		return nil
	}
	if err := syncJobSetPhase(ctx, s.cfg.Pool, w.job.ID, PhaseDeleting, nil, s.now()); err != nil {
		return err
	}
	for _, st := range gone {
		err := postgres.WithTx(ctx, s.cfg.Pool, func(tx pgx.Tx) error {
			err := s.cfg.Documents.DeleteInTx(ctx, tx, r.ProjectID, st.DocumentID)
			if errs.CodeOf(err) == errs.NotFound {
				return nil // deleted meanwhile
			}
			if err != nil {
				return err
			}
			now := s.now()
			if err := syncJobCount(ctx, tx, w.job.ID, counts{Deleted: 1}, now); err != nil {
				return err
			}
			return syncLogInsert(ctx, tx, w.job.ID, r.ProjectID, connector.LevelInfo, "deleted: no longer at the source",
				map[string]any{"externalId": w.redact(st.ExternalID), "documentId": st.DocumentID}, now)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// syncOutcomes records what became of sync jobs: an integration whose sync
// gave up goes to status error (the notification to its admins comes from
// the job failure observer), and every final sync publishes
// integration.sync.completed with its counts.
func (s *Service) syncOutcomes(ctx context.Context, tx pgx.Tx, outcomes []jobqueue.Outcome) error {
	for _, o := range outcomes {
		if !o.Status.Final() || o.Job.ProjectID == nil {
			continue
		}
		job, err := syncJobGet(ctx, tx, o.Job.ID)
		if err != nil {
			return err
		}
		c, err := syncCounts(ctx, tx, o.Job.ID)
		if err != nil {
			return err
		}
		data := map[string]any{
			"integrationId": job.IntegrationID, "jobId": o.Job.ID, "status": syncVocabulary.Name(o.Status), "trigger": job.Trigger,
			"total": c.Total, "processed": c.Processed, "created": c.Created, "updated": c.Updated,
			"unchanged": c.Unchanged, "deleted": c.Deleted, "failed": c.Failed,
		}
		if o.FinalFailure() {
			if err := integrationFailed(ctx, tx, job.IntegrationID); err != nil {
				return err
			}
			if o.Err != nil {
				data["error"] = o.Err.Error() // redacted by runSync
			}
		}
		if _, err := events.Publish(ctx, tx, events.TypeIntegrationSyncCompleted, o.Job.ProjectID, nil, data, s.now()); err != nil {
			return fmt.Errorf("publish integration.sync.completed: %w", err)
		}
		if l := s.cfg.Listener; l != nil {
			e := SyncEnded{ProjectID: *o.Job.ProjectID, IntegrationID: job.IntegrationID, JobID: o.Job.ID, Status: syncVocabulary.Name(o.Status), Data: data}
			if err := pgx.BeginFunc(ctx, tx, func(sp pgx.Tx) error { return l.SyncEnded(ctx, sp, e) }); err != nil {
				if postgres.IsTxConflict(err) {
					// The whole transaction runs again (jobqueue's callHook):
					// run alone, the listener would wait for the same lock.
					return fmt.Errorf("sync listener: %w", err)
				}
				s.cfg.Logger.ErrorContext(ctx, "sync listener failed: the sync ends without its writes", "job", o.Job.ID, "err", err)
			}
		}
	}
	return nil
}

// walker is the sync's connector.Walker: it stores items as documents and
// counts and logs them, each in its own transaction, so that a sync killed
// midway keeps what it stored. An item a killed attempt already stored
// (its document records this job) is not counted again.
type walker struct {
	s *Service
	// ctx is the sync's, for SetState (which has none): the checkpoint
	// is written when the connector records it.
	ctx         context.Context
	job         jobqueue.Job
	project     uuid.UUID
	integration uuid.UUID
	known       map[string]document.SourceState
	// skipped are the items an earlier sync skipped (binary, too large),
	// with the version it examined; skippedUnchanged, the ones reported
	// unchanged by this walk.
	skipped          map[string]skippedItem
	skippedUnchanged []string
	seen             map[string]bool
	secrets          []string
	state            json.RawMessage
	newState         json.RawMessage
	dirty            bool     // newState not yet checkpointed on the job row (its write failed)
	pending          []string // unchanged items not yet confirmed
	pendingNew       int      // of them, not counted by an earlier attempt
	failedAny        bool
}

var _ connector.Walker = (*walker)(nil)

func (w *walker) redact(s string) string { return redact(s, w.secrets) }

// counted reports whether an earlier attempt of this job already counted
// the item.
func (w *walker) counted(ext string) bool {
	st, ok := w.known[ext]
	return ok && st.SyncJobID != nil && *st.SyncJobID == w.job.ID
}

// Known implements connector.Walker. An item an earlier sync skipped is
// known at the version it skipped (newer than its document's, if it has
// one): unchanged, it is not read again. An earlier attempt of this sync
// does not count: its retry examines the items again.
func (w *walker) Known(externalID string) (string, bool) {
	if sk, ok := w.skippedEarlier(externalID); ok {
		return sk.Version, true
	}
	st, ok := w.known[externalID]
	if !ok {
		return "", false
	}
	return st.Version, true
}

// skippedEarlier returns the skip of an item by an earlier sync.
func (w *walker) skippedEarlier(externalID string) (skippedItem, bool) {
	sk, ok := w.skipped[externalID]
	return sk, ok && sk.Job != w.job.ID
}

// Unchanged implements connector.Walker. An unchanged item an earlier
// sync skipped is neither counted nor logged again (its document, if it
// has an older one, is kept as an unchanged one is).
func (w *walker) Unchanged(ctx context.Context, externalID string) error {
	_, skipped := w.skippedEarlier(externalID)
	_, stored := w.known[externalID]
	if !skipped && !stored {
		return fmt.Errorf("connector reported %q unchanged, but no earlier sync stored it", w.redact(externalID))
	}
	if w.seen[externalID] {
		return nil
	}
	w.seen[externalID] = true
	if skipped {
		w.skippedUnchanged = append(w.skippedUnchanged, externalID)
	}
	if !stored {
		return nil
	}
	w.pending = append(w.pending, externalID)
	if !w.counted(externalID) {
		w.pendingNew++
	}
	if len(w.pending) >= unchangedBatch {
		return w.flush(ctx)
	}
	return nil
}

// checkpoint saves, in tx, the state the connector last recorded on the
// job row, if it changed; the caller clears w.dirty once tx committed (a
// transaction rolled back or run again writes it again). The state is one
// the connector may resume from; the items it covers are committed (or
// their document's version does not match, and Known tells the connector
// so).
func (w *walker) checkpoint(ctx context.Context, tx pgx.Tx) error {
	if !w.dirty {
		return nil
	}
	return syncJobCheckpoint(ctx, tx, w.job.ID, w.newState)
}

// flush confirms the pending unchanged items and counts them, and
// checkpoints the connector's state.
func (w *walker) flush(ctx context.Context) error {
	if len(w.pending) == 0 && !w.dirty {
		return nil
	}
	err := postgres.WithTx(ctx, w.s.cfg.Pool, func(tx pgx.Tx) error {
		if err := w.checkpoint(ctx, tx); err != nil {
			return err
		}
		if len(w.pending) == 0 {
			return nil
		}
		if err := w.s.cfg.Documents.MarkSourced(ctx, tx, w.project, w.integration, w.job.ID, w.pending); err != nil {
			return err
		}
		n := w.pendingNew
		return syncJobCount(ctx, tx, w.job.ID, counts{Total: n, Processed: n, Unchanged: n}, w.s.now())
	})
	if err != nil {
		return err
	}
	w.dirty = false
	w.pending, w.pendingNew = w.pending[:0], 0
	return nil
}

// Item implements connector.Walker.
func (w *walker) Item(ctx context.Context, it connector.Item) error {
	if w.seen[it.ExternalID] {
		return nil // reported twice: the first one counts
	}
	w.seen[it.ExternalID] = true
	already := w.counted(it.ExternalID)
	var skip error
	// An edited item's document is locked, then its parse cancelled; the
	// engine recording that parse's failure holds the parse's job row,
	// then marks the document failed (the other order). This transaction,
	// when chosen as the victim of such a deadlock, runs again.
	err := postgres.WithTxRetryDeadlock(ctx, w.s.cfg.Pool, func(tx pgx.Tx) error {
		skip = nil
		if err := w.checkpoint(ctx, tx); err != nil {
			return err
		}
		now := w.s.now()
		var (
			id  uuid.UUID
			res document.PutResult
			err error
		)
		if limit := w.s.cfg.MaxItemBytes; limit > 0 && int64(len(it.Content)) > limit {
			err = errs.Errorf(errs.PayloadTooLarge, "the item is larger than %d bytes", limit)
		} else {
			id, res, err = w.s.cfg.Documents.PutSourced(ctx, tx, document.Sourced{
				ProjectID: w.project, DatasourceID: w.integration, SyncJobID: w.job.ID, ExternalID: it.ExternalID, Version: it.Version,
				Title: it.Title, URL: it.URL, Filename: it.Filename, MimeType: it.MimeType, Data: it.Content, Modified: it.Modified,
			})
		}
		if code := errs.CodeOf(err); code == errs.Invalid || code == errs.PayloadTooLarge {
			skip = err
			if err := w.rememberSkip(ctx, tx, it, now); err != nil {
				return err
			}
			c := counts{Total: 1, Processed: 1, Failed: 1}
			if already {
				c = counts{} // an earlier attempt stored and counted it
			}
			if err := syncJobCount(ctx, tx, w.job.ID, c, now); err != nil {
				return err
			}
			return syncLogInsert(ctx, tx, w.job.ID, w.project, connector.LevelWarn, "skipped: "+w.redact(err.Error()),
				map[string]any{"externalId": w.redact(it.ExternalID)}, now)
		}
		if err != nil {
			return err
		}
		if _, ok := w.skipped[it.ExternalID]; ok {
			if err := skippedItemDelete(ctx, tx, w.integration, it.ExternalID); err != nil {
				return err
			}
		}
		c := counts{Total: 1, Processed: 1}
		switch res {
		case document.PutCreated:
			c.Created = 1
		case document.PutUpdated:
			c.Updated = 1
		default:
			c.Unchanged = 1
			if already {
				c = counts{}
			}
		}
		if err := syncJobCount(ctx, tx, w.job.ID, c, now); err != nil {
			return err
		}
		if res == document.PutUnchanged {
			return nil
		}
		return syncLogInsert(ctx, tx, w.job.ID, w.project, connector.LevelInfo, string(res),
			map[string]any{"externalId": w.redact(it.ExternalID), "documentId": id, "version": w.redact(it.Version)}, now)
	})
	if err != nil {
		return err
	}
	w.dirty = false
	if skip != nil {
		return connector.ErrSkipItem
	}
	return nil
}

// rememberSkip records, in tx, the version of an item the walk skips,
// so that the next sync does not read it again while it is unchanged;
// one without a version cannot be told unchanged, and its earlier skip
// is forgotten; so is one whose external id or version a text column
// cannot hold (skipped for that very reason, perhaps): it is examined
// again by the next sync, as before there was a record of skips.
func (w *walker) rememberSkip(ctx context.Context, tx pgx.Tx, it connector.Item, now time.Time) error {
	if it.Version != "" && rememberable(it.ExternalID) && rememberable(it.Version) {
		return skippedItemPut(ctx, tx, w.integration, w.job.ID, it.ExternalID, it.Version, now)
	}
	if _, ok := w.skipped[it.ExternalID]; ok {
		return skippedItemDelete(ctx, tx, w.integration, it.ExternalID)
	}
	return nil
}

// skippedTextMax bounds the external id and version of a remembered
// skip: a document's external id's bound (document.PutSourced), within
// what the table's key index holds.
const skippedTextMax = 2000

// rememberable reports whether s can be written to
// integration_skipped_items: valid UTF-8 without NUL, of at most
// skippedTextMax bytes.
func rememberable(s string) bool {
	return len(s) <= skippedTextMax && postgres.ValidText(s)
}

// Failed implements connector.Walker.
func (w *walker) Failed(ctx context.Context, externalID string, err error) {
	w.failedAny = true
	if w.seen[externalID] {
		return
	}
	w.seen[externalID] = true
	c := counts{Total: 1, Processed: 1, Failed: 1}
	if w.counted(externalID) {
		c = counts{} // an earlier attempt stored and counted it
	}
	now := w.s.now()
	werr := postgres.WithTx(ctx, w.s.cfg.Pool, func(tx pgx.Tx) error {
		if err := syncJobCount(ctx, tx, w.job.ID, c, now); err != nil {
			return err
		}
		return syncLogInsert(ctx, tx, w.job.ID, w.project, connector.LevelWarn, "failed: "+w.redact(err.Error()),
			map[string]any{"externalId": w.redact(externalID)}, now)
	})
	if werr != nil && ctx.Err() == nil {
		w.s.cfg.Logger.Warn("recording a failed sync item failed", "job", w.job.ID, "err", werr)
	}
}

// Log implements connector.Walker.
func (w *walker) Log(ctx context.Context, level, message string, details map[string]any) {
	switch level {
	case connector.LevelDebug, connector.LevelInfo, connector.LevelWarn, connector.LevelError:
	default:
		level = connector.LevelInfo
	}
	if details != nil {
		details = redactDetails(details, w.secrets)
	}
	if err := syncLogInsert(ctx, w.s.cfg.Pool, w.job.ID, w.project, level, w.redact(message), details, w.s.now()); err != nil && ctx.Err() == nil {
		w.s.cfg.Logger.Warn("writing a sync log entry failed", "job", w.job.ID, "err", err)
	}
}

// redactDetails returns a connector's log details with every secret
// replaced in their keys and string values. The details are first
// brought to their JSON shape (maps, slices, strings, numbers, booleans)
// so that structs and other types are walked too; the secrets are
// replaced in the decoded strings, which JSON escaping (& < > " \)
// cannot hide. Details that cannot be encoded are dropped, never logged
// unredacted.
func redactDetails(details map[string]any, secrets []string) map[string]any {
	raw, err := json.Marshal(details)
	if err != nil {
		return map[string]any{"error": "the details could not be encoded"}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v map[string]any
	if err := dec.Decode(&v); err != nil {
		return map[string]any{"error": "the details could not be encoded"}
	}
	out, _ := redactValue(v, secrets).(map[string]any)
	return out
}

// redactValue replaces the secrets in v, a decoded JSON value.
func redactValue(v any, secrets []string) any {
	switch x := v.(type) {
	case string:
		return redact(x, secrets)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[redact(k, secrets)] = redactValue(e, secrets)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = redactValue(e, secrets)
		}
		return out
	default:
		return v // json.Number, bool, nil
	}
}

// State implements connector.Walker.
func (w *walker) State() json.RawMessage { return w.state }

// SetState implements connector.Walker. The state is checkpointed on the
// job row at once (if that fails, with the next commit: an item, a batch
// of unchanged ones, the end of the walk), so a retry of the job resumes
// from it; the integration's state is replaced only when the sync
// succeeds.
func (w *walker) SetState(state json.RawMessage) {
	w.newState, w.dirty = state, true
	err := postgres.WithTx(w.ctx, w.s.cfg.Pool, func(tx pgx.Tx) error { return w.checkpoint(w.ctx, tx) })
	if err == nil {
		w.dirty = false
	} else if w.ctx.Err() == nil {
		w.s.cfg.Logger.Warn("checkpointing a sync failed", "job", w.job.ID, "err", err)
	}
}

// Span attributes of a connector's walk.
const (
	AttrConnector   = attribute.Key("graphmill.connector")
	AttrIntegration = attribute.Key("graphmill.integration.id")
)

// walk runs the connector's walk of a sync under its span; the span's
// error is the redacted message the sync log keeps.
func (s *Service) walk(ctx context.Context, o opened, opts SyncOptions, w *walker) error {
	ctx, span := s.tracer.Start(ctx, "connector "+o.ProviderType+" walk", trace.WithSpanKind(trace.SpanKindClient))
	defer span.End()
	err := o.conn.Walk(ctx, s.env(o.ID, FetchTimeout), o.cfg, opts.connector(), w)
	if span.IsRecording() {
		span.SetAttributes(AttrConnector.String(o.ProviderType), AttrIntegration.String(o.ID.String()),
			jobqueue.AttrProject.String(o.ProjectID.String()))
		if err != nil {
			span.SetStatus(codes.Error, w.redact(err.Error()))
		}
	}
	return err
}
