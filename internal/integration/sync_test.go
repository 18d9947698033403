package integration_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/connector"
	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/integration"
	"github.com/graphmill/graphmill/internal/pgtest"
)

// TestSyncIncremental: a first sync stores every item as a document of
// the project (with datasourceId and source metadata) and queues its
// parsing; a second sync of the unchanged source creates, updates and
// deletes nothing; an edited item is stored in place and parsed again,
// its extraction queued with trigger webhook and the datasourceId; a
// removed item's document is deleted; the connector's state is saved.
func TestSyncIncremental(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{start: true})
	ctx := context.Background()
	for _, id := range []string{"a", "b", "c", "d"} {
		b.src.put(id, "# "+id+"\n\nThe text of item "+id+".")
	}
	i := b.create(t, "docs", nil)

	r := b.syncAndWait(t, "docs", integration.SyncOptions{})
	require.Equal(t, syncRow{Status: "completed", Phase: "done", Total: 4, Processed: 4, Created: 4}, r)
	require.Len(t, b.synced(t), 4)
	var title, url, version string
	var ds uuid.UUID
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT datasource_id, source_title, source_url, source_version FROM documents WHERE external_id = 'a'`).
		Scan(&ds, &title, &url, &version))
	require.Equal(t, i.ID, ds)
	require.Equal(t, "Title a", title)
	require.Equal(t, "https://source.test/a", url)
	require.NotEmpty(t, version)
	var firstID uuid.UUID
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT id FROM documents WHERE external_id = 'b'`).Scan(&firstID))
	// Parsed through the pipeline as uploads are, extraction with the
	// datasource and trigger webhook.
	require.Eventually(t, func() bool { return len(b.extract.list()) == 4 }, 30*time.Second, 20*time.Millisecond)
	for _, c := range b.extract.list() {
		require.Equal(t, "webhook", c.Trigger)
		require.NotNil(t, c.Datasource)
		require.Equal(t, i.ID, *c.Datasource)
	}
	require.Eventually(t, func() bool {
		return count(t, b.pool, `SELECT count(*) FROM documents WHERE datasource_id = $1 AND status = 'parsed'`, i.ID) == 4
	}, 30*time.Second, 20*time.Millisecond)
	full, err := b.svc.Get(ctx, b.project, "docs")
	require.NoError(t, err)
	require.NotNil(t, full.LastSyncAt)
	require.Equal(t, "completed", full.LastSyncStatus)

	// Unchanged: nothing moves.
	r = b.syncAndWait(t, "docs", integration.SyncOptions{})
	require.Equal(t, syncRow{Status: "completed", Phase: "done", Total: 4, Processed: 4, Unchanged: 4}, r)
	require.JSONEq(t, `{"items":4}`, string(b.src.state), "the state saved by the last sync is given back")
	require.Equal(t, 4, count(t, b.pool, `SELECT count(*) FROM document_parsing_jobs`), "no parse queued")

	// One edited, one removed.
	b.src.put("b", "# b\n\nThe text of item b, edited.")
	b.src.remove("d")
	r = b.syncAndWait(t, "docs", integration.SyncOptions{})
	require.Equal(t, syncRow{Status: "completed", Phase: "done", Total: 3, Processed: 3, Unchanged: 2, Updated: 1, Deleted: 1}, r)
	got := b.synced(t)
	require.Len(t, got, 3)
	require.Contains(t, got["b"], "edited")
	var nowID uuid.UUID
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT id FROM documents WHERE external_id = 'b'`).Scan(&nowID))
	require.Equal(t, firstID, nowID, "changed in place")
	require.Eventually(t, func() bool { return len(b.extract.list()) == 5 }, 30*time.Second, 20*time.Millisecond)
	last := b.extract.list()[4]
	require.Equal(t, firstID, last.Document)
	require.Equal(t, "webhook", last.Trigger)

	// The log tells what happened.
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM integration_sync_logs WHERE message = 'deleted: no longer at the source'`))
	require.Equal(t, 5, count(t, b.pool, `SELECT count(*) FROM integration_sync_logs WHERE message IN ('created', 'updated')`))
	require.Equal(t, 3, count(t, b.pool, `SELECT count(*) FROM events WHERE type = 'integration.sync.completed' AND project_id = $1`, b.project))
}

// TestDeletionGuard: a listing that fails, a listing with a failed item
// and an empty listing (even on a full sync) delete nothing; a full sync
// with a non-empty listing deletes beyond max_delete_fraction.
func TestDeletionGuard(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{start: true})
	b.firstSync(t, "a", "b", "c", "d")

	// An error after a partial listing: the sync fails, nothing deleted.
	b.src.remove("a")
	b.src.mu.Lock()
	b.src.walkErr = errors.New("the server answered 500")
	b.src.mu.Unlock()
	r := b.syncAndWait(t, "docs", integration.SyncOptions{})
	require.Equal(t, "failed", r.Status)
	require.Contains(t, r.Error, "the server answered 500")
	require.Len(t, b.synced(t), 4)
	b.src.mu.Lock()
	b.src.walkErr = nil
	b.src.failing["b"] = true
	b.src.mu.Unlock()

	// An item that could not be fetched: the listing is incomplete.
	r = b.syncAndWait(t, "docs", integration.SyncOptions{})
	require.Equal(t, "completed", r.Status)
	require.Equal(t, 1, r.Failed)
	require.Zero(t, r.Deleted)
	require.Len(t, b.synced(t), 4)
	b.src.mu.Lock()
	b.src.failing = map[string]bool{}
	b.src.items = map[string]connector.Item{}
	b.src.mu.Unlock()

	// An empty listing: nothing is deleted.
	r = b.syncAndWait(t, "docs", integration.SyncOptions{})
	require.Equal(t, "completed", r.Status)
	require.Zero(t, r.Deleted)
	require.Len(t, b.synced(t), 4)
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM integration_sync_logs WHERE message LIKE 'the listing is empty%'`))

	// A listing of one new item: more than half would go, nothing is deleted.
	b.src.put("e", "# e\n\ntext e")
	r = b.syncAndWait(t, "docs", integration.SyncOptions{})
	require.Equal(t, "completed", r.Status)
	require.Zero(t, r.Deleted)
	require.Len(t, b.synced(t), 5)
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM integration_sync_logs WHERE message LIKE 'deletion guard:%'`))
	b.src.remove("e")

	// An empty listing deletes nothing even on a full sync.
	r = b.syncAndWait(t, "docs", integration.SyncOptions{FullSync: true})
	require.Equal(t, "completed", r.Status)
	require.Zero(t, r.Deleted)
	require.Len(t, b.synced(t), 5)
	require.Equal(t, 2, count(t, b.pool, `SELECT count(*) FROM integration_sync_logs WHERE message LIKE 'the listing is empty%'`))

	// A full sync with a non-empty listing deletes the missing ones.
	b.src.put("f", "# f\n\ntext f")
	r = b.syncAndWait(t, "docs", integration.SyncOptions{FullSync: true})
	require.Equal(t, 5, r.Deleted, "%+v", r)
	require.Equal(t, []string{"f"}, sortedKeys(b.synced(t)))
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM documents`))
}

// TestDeletionGuardCountsDocumentsBeforeTheWalk: a listing that replaced
// every item (4 old gone, 4 new) deletes none of the 4 documents without
// full_sync: the fraction is taken over the documents the integration had
// before the walk, not including the ones this run created.
func TestDeletionGuardCountsDocumentsBeforeTheWalk(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{start: true})
	b.firstSync(t, "a", "b", "c", "d")
	b.src.mu.Lock()
	b.src.items = map[string]connector.Item{}
	b.src.mu.Unlock()
	for _, id := range []string{"e", "f", "g", "h"} {
		b.src.put(id, "# "+id+"\n\njunk "+id)
	}
	r := b.syncAndWait(t, "docs", integration.SyncOptions{})
	require.Equal(t, "completed", r.Status)
	require.Equal(t, 4, r.Created)
	require.Zero(t, r.Deleted, "deleted %d of the 4 documents the integration had (max_delete_fraction 0.5)", r.Deleted)
	require.Len(t, b.synced(t), 8)
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM integration_sync_logs WHERE message LIKE 'deletion guard:%' AND details->>'documents' = '4'`))
}

// TestAppendSourceNeverDeletes: a source that lists only its recent items
// (a feed) drops old ones from its listing; their documents stay, even on a
// full sync.
func TestAppendSourceNeverDeletes(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{start: true})
	b.src.appendOnly.Store(true)
	for _, id := range []string{"a", "b", "c", "d"} {
		b.src.put(id, "# "+id+"\n\ntext "+id)
	}
	b.create(t, "feed", nil)
	require.Equal(t, "completed", b.syncAndWait(t, "feed", integration.SyncOptions{}).Status)
	b.src.remove("a")
	r := b.syncAndWait(t, "feed", integration.SyncOptions{})
	require.Equal(t, "completed", r.Status)
	require.Zero(t, r.Deleted)
	r = b.syncAndWait(t, "feed", integration.SyncOptions{FullSync: true})
	require.Equal(t, "completed", r.Status)
	require.Zero(t, r.Deleted)
	require.Len(t, b.synced(t), 4)
}

// TestOneActiveSync: concurrent sync requests queue one job; the others
// answer success false with that job's id.
func TestOneActiveSync(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	b.create(t, "docs", nil)
	const n = 12
	results := make([]integration.SyncResult, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for k := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			res, err := b.svc.Sync(context.Background(), b.project, "docs", integration.TriggerManual, integration.SyncOptions{})
			if err == nil {
				results[k] = res
			}
		}()
	}
	close(start)
	wg.Wait()
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM integration_sync_jobs`))
	var job uuid.UUID
	require.NoError(t, b.pool.QueryRow(context.Background(), `SELECT id FROM integration_sync_jobs`).Scan(&job))
	queued := 0
	for _, r := range results {
		require.Equal(t, job, r.JobID)
		if r.Success {
			queued++
		} else {
			require.Equal(t, "a sync is already in progress", r.Message)
		}
	}
	require.Equal(t, 1, queued)
}

// TestCancelSync: a running sync is cancelled; its walk stops and the
// documents stored so far stay; a new sync may then be queued.
func TestCancelSync(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{start: true})
	ctx := context.Background()
	for _, id := range []string{"a", "b", "c"} {
		b.src.put(id, "# "+id+"\n\ntext "+id)
	}
	b.src.gate, b.src.started = make(chan struct{}), make(chan struct{})
	b.create(t, "docs", nil)
	res, err := b.svc.Sync(ctx, b.project, "docs", integration.TriggerManual, integration.SyncOptions{})
	require.NoError(t, err)
	<-b.src.started
	b.src.gate <- struct{}{} // one item through
	require.Eventually(t, func() bool { return b.job(t, res.JobID).Created == 1 }, 10*time.Second, 10*time.Millisecond)
	_, err = b.jobs.Cancel(ctx, b.pool, integration.Queue, res.JobID)
	require.NoError(t, err)
	r := b.wait(t, res.JobID)
	require.Equal(t, "cancelled", r.Status)
	require.Eventually(t, func() bool {
		return count(t, b.pool, `SELECT count(*) FROM integration_sync_jobs WHERE id = $1 AND locked_by IS NULL`, res.JobID) == 1
	}, 10*time.Second, 10*time.Millisecond, "the worker let go of the job")
	require.Len(t, b.synced(t), 1)
	b.src.mu.Lock()
	b.src.gate = nil
	b.src.started = nil
	b.src.mu.Unlock()
	r = b.syncAndWait(t, "docs", integration.SyncOptions{})
	require.Equal(t, syncRow{Status: "completed", Phase: "done", Total: 3, Processed: 3, Created: 2, Unchanged: 1}, r)
}

// TestSecretsNeverLoggedOrPublished: a connector that logs its token and
// fails with it in the message leaves no secret in the sync log, the job's
// error or the events.
func TestSecretsNeverLoggedOrPublished(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{start: true})
	b.src.put("a", "# a\n\ntext")
	b.create(t, "docs", nil)
	require.Equal(t, "completed", b.syncAndWait(t, "docs", integration.SyncOptions{}).Status)
	b.src.mu.Lock()
	b.src.walkErr = errors.New("upstream refused tok-SECRET-123456")
	b.src.mu.Unlock()
	r := b.syncAndWait(t, "docs", integration.SyncOptions{})
	require.Equal(t, "failed", r.Status)
	require.Equal(t, "upstream refused ***", r.Error)
	require.Positive(t, count(t, b.pool, `SELECT count(*) FROM integration_sync_logs WHERE message LIKE 'listing with token%'`))
	require.Zero(t, count(t, b.pool, `SELECT count(*) FROM integration_sync_logs WHERE message LIKE '%SECRET%' OR details::text LIKE '%SECRET%'`))
	require.Zero(t, count(t, b.pool, `SELECT count(*) FROM events WHERE payload::text LIKE '%SECRET%'`))
	require.Zero(t, count(t, b.pool, `SELECT count(*) FROM integration_sync_jobs WHERE error_msg LIKE '%SECRET%'`))
	require.Equal(t, 2, count(t, b.pool, `SELECT count(*) FROM events WHERE type = 'integration.sync.completed'`))
	var status string
	require.NoError(t, b.pool.QueryRow(context.Background(), `SELECT status FROM integrations`).Scan(&status))
	require.Equal(t, integration.StatusError, status, "a sync that gave up puts its integration in error")
}

// TestSecretWithJSONEscapedCharsNotLogged: a token holding characters
// JSON escapes (& < >) is redacted in the log's details as well: the
// details are redacted value by value, not as encoded JSON.
func TestSecretWithJSONEscapedCharsNotLogged(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{start: true})
	b.src.put("a", "# a\n\ntext")
	_, err := b.svc.Create(context.Background(), b.project, nil, integration.CreateParams{
		Name: "docs", DisplayName: "d", ProviderType: "mem",
		Config: map[string]json.RawMessage{"url": raw(b.site.URL + "/list"), "token": raw("pa&ss<SECRET>word")},
	})
	require.NoError(t, err)
	require.Equal(t, "completed", b.syncAndWait(t, "docs", integration.SyncOptions{}).Status)
	require.Zero(t, count(t, b.pool, `SELECT count(*) FROM integration_sync_logs WHERE message LIKE '%SECRET%' OR details::text LIKE '%SECRET%'`))
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM integration_sync_logs WHERE message = 'listing with token ***' AND details->>'token' = '***'
		AND details->'request'->'headers'->>0 = 'Bearer ***'`))
}

// TestDeleteKeepsDocuments: deleting an integration removes it, its sync
// jobs and their logs; its documents stay, detached, out of the upload
// deduplication.
func TestDeleteKeepsDocuments(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{start: true})
	ctx := context.Background()
	b.src.put("a", "# a\n\ntext")
	b.create(t, "docs", nil)
	require.Equal(t, "completed", b.syncAndWait(t, "docs", integration.SyncOptions{}).Status)
	require.NoError(t, b.svc.Delete(ctx, b.project, "docs"))
	_, err := b.svc.Get(ctx, b.project, "docs")
	require.Equal(t, errs.NotFound, errs.CodeOf(err))
	require.Zero(t, count(t, b.pool, `SELECT count(*) FROM integration_sync_jobs`))
	require.Zero(t, count(t, b.pool, `SELECT count(*) FROM integration_sync_logs`))
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM documents WHERE datasource_id IS NULL AND external_id = 'a'`))
	require.Equal(t, errs.NotFound, errs.CodeOf(b.svc.Delete(ctx, b.project, "docs")))
}

// TestDeleteDuringSyncCommit: a sync's transaction that holds its job row
// and waits for the integration's (the final one records the sync on
// it) deadlocks with a deletion that holds the integration and cancels
// the job; the deletion, chosen as the victim, runs again once the sync's
// transaction ends, and succeeds (it answered 500 before).
func TestDeleteDuringSyncCommit(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	ctx := context.Background()
	i := b.create(t, "docs", nil)
	res, err := b.svc.Sync(ctx, b.project, "docs", integration.TriggerManual, integration.SyncOptions{})
	require.NoError(t, err)

	// The sync's final transaction: its job row, then the integration's.
	sync := pgtest.Hold(t, b.pool, `UPDATE integration_sync_jobs SET phase = 'done' WHERE id = $1`, res.JobID)
	deleted := make(chan error, 1)
	go func() { deleted <- b.svc.Delete(ctx, b.project, "docs") }()
	require.Eventually(t, func() bool { return pgtest.LockWaits(t, b.pool) == 1 }, 10*time.Second, 10*time.Millisecond, "the deletion waits for the job row")
	_, err = sync.Exec(ctx, `UPDATE integrations SET last_sync_at = now() WHERE id = $1`, i.ID)
	require.NoError(t, err, "the deletion gave way")
	require.NoError(t, sync.Commit(ctx))

	require.NoError(t, <-deleted)
	require.Zero(t, count(t, b.pool, `SELECT count(*) FROM integrations WHERE id = $1`, i.ID))
	require.Zero(t, count(t, b.pool, `SELECT count(*) FROM integration_sync_jobs`))
}

// TestItemDuringParseFailure: an edited item's transaction locks its
// document, then cancels the document's parse; the engine recording that
// parse's failure holds the parse's job row, then marks the document
// failed (parseOutcomes). The item's transaction, chosen as the victim of
// that deadlock, runs again once the engine's commits, and the sync
// completes at its first attempt (the attempt failed before, and the sync
// ran again).
func TestItemDuringParseFailure(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{start: true})
	ctx := context.Background()
	b.firstSync(t, "a")
	var doc uuid.UUID
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT id FROM documents WHERE project_id = $1 AND external_id = 'a'`, b.project).Scan(&doc))
	require.Eventually(t, func() bool {
		return count(t, b.pool, `SELECT count(*) FROM document_parsing_jobs WHERE document_id = $1 AND status IN ('queued', 'running')`, doc) == 0
	}, 30*time.Second, 20*time.Millisecond, "the first parse ended")
	// A parse of the document running elsewhere, whose failure the engine records.
	parse := uuid.Must(uuid.NewV7())
	_, err := b.pool.Exec(ctx, `INSERT INTO document_parsing_jobs (id, project_id, document_id, status, attempt, locked_by, locked_until, run_at, created_at, updated_at)
		VALUES ($1, $2, $3, 'running', 1, 'elsewhere', now() + interval '1 hour', now(), now(), now())`, parse, b.project, doc)
	require.NoError(t, err)
	b.src.put("a", "# a\n\nedited")

	// The engine recording the parse's failure: its job row, then (parseOutcomes) the document.
	engine := pgtest.Hold(t, b.pool, `UPDATE document_parsing_jobs SET status = 'failed', locked_by = NULL, locked_until = NULL WHERE id = $1`, parse)
	res, err := b.svc.Sync(ctx, b.project, "docs", integration.TriggerManual, integration.SyncOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return pgtest.LockWaits(t, b.pool) == 1 }, 10*time.Second, 10*time.Millisecond, "the item's transaction waits for the parse's job row")
	_, err = engine.Exec(ctx, `UPDATE documents SET status = 'failed', error = 'parsing failed' WHERE id = $1`, doc)
	require.NoError(t, err, "the item's transaction gave way")
	require.NoError(t, engine.Commit(ctx))

	j := b.wait(t, res.JobID)
	require.Equal(t, "completed", j.Status, j.Error)
	require.Equal(t, 1, j.Updated)
	require.Zero(t, count(t, b.pool, `SELECT count(*) FROM integration_sync_logs WHERE job_id = $1 AND message LIKE '%deadlock%'`, res.JobID))
	require.Equal(t, 1, count(t, b.pool, `SELECT attempt FROM integration_sync_jobs WHERE id = $1`, res.JobID), "the sync ran once")
	require.Equal(t, "# a\n\nedited", b.synced(t)["a"])
}

// TestRetriedSyncCountsOnce: a walk that fails after reporting items is
// retried; the retries do not count again the items an earlier attempt
// counted, unchanged or stored.
func TestRetriedSyncCountsOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{start: true})
	for _, id := range []string{"a", "b", "c"} {
		b.src.put(id, "# "+id+"\n\ntext "+id)
	}
	b.create(t, "docs", nil)
	require.Equal(t, "completed", b.syncAndWait(t, "docs", integration.SyncOptions{}).Status)
	b.src.put("d", "# d\n\ntext d")
	b.src.mu.Lock()
	b.src.walkErr = errors.New("the listing broke off")
	b.src.mu.Unlock()
	r := b.syncAndWait(t, "docs", integration.SyncOptions{})
	require.Equal(t, syncRow{Status: "failed", Phase: "listing", Error: "the listing broke off", Total: 4, Processed: 4, Created: 1, Unchanged: 3}, r)
	b.src.mu.Lock()
	walks := b.src.walks
	b.src.mu.Unlock()
	require.Equal(t, 5, walks, "the first sync, then four attempts of the failing one (max_retries 3)")
	require.Len(t, b.synced(t), 4)
}

// TestRetriedSyncCountsFailedOnce: the failed and skipped items of a sync
// that is retried are counted once, by the last attempt, not once per
// attempt.
func TestRetriedSyncCountsFailedOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{start: true})
	b.src.put("a", "# a\n\ntext a")
	b.src.put("b", "# b\n\ntext b")
	b.src.put("big", "# big\n\n"+strings.Repeat("x", maxItemBytes))
	b.src.mu.Lock()
	b.src.walkErr = errors.New("the listing broke off")
	b.src.failing["b"] = true
	b.src.mu.Unlock()
	b.create(t, "docs", nil)
	r := b.syncAndWait(t, "docs", integration.SyncOptions{})
	require.Equal(t, syncRow{Status: "failed", Phase: "listing", Error: "the listing broke off", Total: 3, Processed: 3, Created: 1, Failed: 2}, r)
	require.Equal(t, 4, count(t, b.pool, `SELECT count(*) FROM integration_sync_logs WHERE message LIKE 'skipped:%'`), "one skip logged per attempt")
}

// TestRetriedSyncCountsEachItemOnce: an item an earlier attempt stored
// that fails in a later attempt is logged but not counted again.
func TestRetriedSyncCountsEachItemOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{start: true})
	b.src.put("a", "# a\n\ntext a")
	b.src.put("b", "# b\n\ntext b")
	b.src.mu.Lock()
	b.src.walkErr = errors.New("the listing broke off")
	b.src.failing["b"] = true
	b.src.failFrom = 2 // b is stored by the first attempt, fails in the others
	b.src.mu.Unlock()
	b.create(t, "docs", nil)
	r := b.syncAndWait(t, "docs", integration.SyncOptions{})
	require.Equal(t, syncRow{Status: "failed", Phase: "listing", Error: "the listing broke off", Total: 2, Processed: 2, Created: 2}, r)
	require.Equal(t, 3, count(t, b.pool, `SELECT count(*) FROM integration_sync_logs WHERE message LIKE 'failed:%'`), "one failure logged per later attempt")
}

// TestSkippedItems: an item too large or of an unsupported format is
// skipped (counted failed, logged), the walk goes on, and the skip does
// not stop the deletion of items gone from the source.
func TestSkippedItems(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{start: true})
	for _, id := range []string{"a", "b", "c"} {
		b.src.put(id, "# "+id+"\n\ntext "+id)
	}
	b.create(t, "docs", nil)
	require.Equal(t, 3, b.syncAndWait(t, "docs", integration.SyncOptions{}).Created)
	b.src.remove("c")
	b.src.put("big", "# big\n\n"+strings.Repeat("x", maxItemBytes))
	b.src.mu.Lock()
	b.src.items["bin"] = connector.Item{ExternalID: "bin", Filename: "tool.exe", MimeType: "application/x-msdownload", Content: []byte{0x4d, 0x5a, 0, 1}}
	b.src.mu.Unlock()
	r := b.syncAndWait(t, "docs", integration.SyncOptions{})
	require.Equal(t, syncRow{Status: "completed", Phase: "done", Total: 4, Processed: 4, Unchanged: 2, Failed: 2, Deleted: 1}, r)
	require.Equal(t, []string{"a", "b"}, sortedKeys(b.synced(t)))
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM integration_sync_logs WHERE message LIKE 'skipped: the item is larger than%'`))
}

// TestUnchangedSkippedItemNotReadAgain: an item skipped as binary by one
// sync is known at its version to the next: unchanged, the connector
// does not read it and it is not logged or counted again; changed, it is
// examined again; stored at last, its skip is forgotten; gone from a
// complete listing, too. A retry of the sync that skipped it examines it
// again.
func TestUnchangedSkippedItemNotReadAgain(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{start: true})
	b.src.put("a", "# a\n\ntext a")
	binary := func(version string) {
		b.src.mu.Lock()
		defer b.src.mu.Unlock()
		b.src.items["bin"] = connector.Item{ExternalID: "bin", Version: version, Filename: "tool", Content: []byte{0x7f, 'E', 'L', 'F', 0, 1, 2, 0}}
	}
	binary("blob-1")
	i := b.create(t, "docs", nil)
	skips := func() int {
		return count(t, b.pool, `SELECT count(*) FROM integration_sync_logs WHERE message LIKE 'skipped:%' AND details->>'externalId' = 'bin'`)
	}
	reads := func() int {
		b.src.mu.Lock()
		defer b.src.mu.Unlock()
		return b.src.reads["bin"]
	}

	r := b.syncAndWait(t, "docs", integration.SyncOptions{})
	require.Equal(t, syncRow{Status: "completed", Phase: "done", Total: 2, Processed: 2, Created: 1, Failed: 1}, r)
	require.Equal(t, 1, skips())
	require.Equal(t, 1, reads())

	// Unchanged: not read, logged or counted again.
	r = b.syncAndWait(t, "docs", integration.SyncOptions{})
	require.Equal(t, syncRow{Status: "completed", Phase: "done", Total: 1, Processed: 1, Unchanged: 1}, r)
	require.Equal(t, 1, skips())
	require.Equal(t, 1, reads())
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM integration_sync_logs WHERE message = '1 items skipped by an earlier sync are unchanged: not read again'`))

	// Changed: examined (and skipped) again.
	binary("blob-2")
	r = b.syncAndWait(t, "docs", integration.SyncOptions{})
	require.Equal(t, syncRow{Status: "completed", Phase: "done", Total: 2, Processed: 2, Unchanged: 1, Failed: 1}, r)
	require.Equal(t, 2, skips())
	require.Equal(t, 2, reads())

	// Stored as a document at last: the skip is forgotten.
	b.src.put("bin", "# bin\n\nnow text")
	r = b.syncAndWait(t, "docs", integration.SyncOptions{})
	require.Equal(t, syncRow{Status: "completed", Phase: "done", Total: 2, Processed: 2, Unchanged: 1, Created: 1}, r)
	require.Equal(t, 0, count(t, b.pool, `SELECT count(*) FROM integration_skipped_items WHERE integration_id = $1`, i.ID))

	// Skipped again, then gone from the listing: forgotten.
	binary("blob-3")
	require.Equal(t, 1, b.syncAndWait(t, "docs", integration.SyncOptions{}).Failed)
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM integration_skipped_items WHERE integration_id = $1 AND version = 'blob-3'`, i.ID))
	b.src.remove("bin")
	require.Equal(t, "completed", b.syncAndWait(t, "docs", integration.SyncOptions{}).Status)
	require.Equal(t, 0, count(t, b.pool, `SELECT count(*) FROM integration_skipped_items WHERE integration_id = $1`, i.ID))
}

// TestSkippedItemNotStorableAsKnown: an item skipped with an external id
// or version no text column holds (not UTF-8, a NUL, longer than an id
// may be) is skipped as before (counted failed, logged) without failing
// the sync; it is not remembered, so the next sync examines it again.
func TestSkippedItemNotStorableAsKnown(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{start: true})
	b.src.put("a", "# a\n\ntext a")
	long := strings.Repeat("0123456789abcdefghijklmnopqrstuvwxyz", 100) // 3600 bytes
	b.src.mu.Lock()
	for _, it := range []struct{ ext, version string }{
		{"r\xe9sum\xe9.md", "blob-1"}, {long, "blob-2"}, {"nul-version", "blob\x00"}, {"latin1-version", "blob-\xe9"},
	} {
		b.src.items[it.ext] = connector.Item{ExternalID: it.ext, Version: it.version, Filename: "tool", Content: []byte{0x7f, 'E', 'L', 'F', 0, 1, 2, 0}}
	}
	b.src.mu.Unlock()
	i := b.create(t, "docs", nil)
	r := b.syncAndWait(t, "docs", integration.SyncOptions{})
	require.Equal(t, syncRow{Status: "completed", Phase: "done", Total: 5, Processed: 5, Created: 1, Failed: 4}, r)
	r = b.syncAndWait(t, "docs", integration.SyncOptions{})
	require.Equal(t, syncRow{Status: "completed", Phase: "done", Total: 5, Processed: 5, Unchanged: 1, Failed: 4}, r)
	require.Equal(t, 8, count(t, b.pool, `SELECT count(*) FROM integration_sync_logs WHERE message LIKE 'skipped:%'`), "examined by each sync")
	require.Equal(t, 0, count(t, b.pool, `SELECT count(*) FROM integration_skipped_items WHERE integration_id = $1`, i.ID))
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestRetriedSyncResumesFromCheckpoint: the state a connector records
// during a walk is checkpointed on the job; the retry of a sync that
// broke off midway starts from it (not from the integration's state),
// without duplicating documents; the integration's state is replaced only
// when a sync succeeds.
func TestRetriedSyncResumesFromCheckpoint(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{start: true})
	for _, id := range []string{"a", "b", "c", "d", "e", "f"} {
		b.src.put(id, "# "+id+"\n\ntext "+id)
	}
	b.src.mu.Lock()
	b.src.checkpoint, b.src.breakAfter = true, 3
	b.src.mu.Unlock()
	b.create(t, "docs", nil)
	r := b.syncAndWait(t, "docs", integration.SyncOptions{})
	require.Equal(t, syncRow{Status: "completed", Phase: "done", Total: 6, Processed: 6, Created: 6}, r)
	b.src.mu.Lock()
	states := b.src.states
	b.src.mu.Unlock()
	require.Len(t, states, 2)
	require.Nil(t, states[0], "a first sync starts without state")
	require.JSONEq(t, `{"through":"c"}`, string(states[1]), "the retry starts from the checkpoint")
	require.Equal(t, 6, count(t, b.pool, `SELECT count(*) FROM documents WHERE datasource_id IS NOT NULL`))
	require.Equal(t, 6, count(t, b.pool, `SELECT count(*) FROM document_parsing_jobs`), "one parse per document")
	stateOf := func(q string) string {
		t.Helper()
		var st string
		require.NoError(t, b.pool.QueryRow(context.Background(), q).Scan(&st))
		return st
	}
	require.JSONEq(t, `{"items":6}`, stateOf(`SELECT connector_state::text FROM integrations`))

	// A sync that keeps failing checkpoints on its job; the integration
	// keeps the last successful sync's state.
	b.src.put("g", "# g\n\ntext g")
	b.src.mu.Lock()
	b.src.walkErr = errors.New("the listing broke off")
	b.src.mu.Unlock()
	r = b.syncAndWait(t, "docs", integration.SyncOptions{})
	require.Equal(t, "failed", r.Status)
	require.JSONEq(t, `{"items":6}`, stateOf(`SELECT connector_state::text FROM integrations`))
	require.JSONEq(t, `{"items":7}`, stateOf(`SELECT connector_state::text FROM integration_sync_jobs WHERE status = 'failed'`))
	b.src.mu.Lock()
	states = b.src.states
	b.src.mu.Unlock()
	require.JSONEq(t, `{"items":6}`, string(states[2]), "a new sync starts from the integration's state")
	require.JSONEq(t, `{"items":7}`, string(states[3]), "its retry from its checkpoint")
}

// TestSyncSourceTextWithNUL: text a source sends that PostgreSQL cannot
// hold (a NUL, invalid UTF-8) never fails the sync. An item whose external
// id holds a NUL is refused (the id with the NUL dropped would name
// another item), counted failed and logged with the NUL dropped, and the
// sync goes on; a NUL or invalid byte in an item's title, URL or media
// type is dropped or replaced (in its version replaced: NameText) and the
// item stored; a failed item, a
// log entry and a walk error keep their text, the NUL dropped: in the sync
// log, the job's error and the event of its end.
func TestSyncSourceTextWithNUL(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{start: true})
	b.src.put("a", "# a\n\ntext a")
	b.src.put("f\x00g", "# f\n\ntext f")
	b.src.mu.Lock()
	b.src.items["docs/a\x00b.md"] = connector.Item{ExternalID: "docs/a\x00b.md", Version: "v1", Filename: "a\x00b.md", Content: []byte("# ab\n\ntext ab")}
	b.src.items["docs/c\x00d.md"] = connector.Item{ExternalID: "docs/c\x00d.md", Version: "v1", Filename: "cd.md", Content: []byte("# cd\n\ntext cd")}
	b.src.items["e"] = connector.Item{
		ExternalID: "e", Version: "v\x00e", Title: "Title\x00 r\xe9sum\xe9", URL: "https://source.test/e\x00", Filename: "e.md",
		MimeType: "text/markdown; x=\xe9\x00", Content: []byte("# e\n\ntext e"),
	}
	b.src.failing["f\x00g"] = true
	b.src.logDetails = map[string]any{"path\x00": "x\x00y"}
	b.src.mu.Unlock()
	b.create(t, "docs", nil)
	r := b.syncAndWait(t, "docs", integration.SyncOptions{})
	require.Equal(t, syncRow{Status: "completed", Phase: "done", Total: 5, Processed: 5, Created: 2, Failed: 3}, r)

	var title, url, version, mime string
	require.NoError(t, b.pool.QueryRow(context.Background(), `SELECT source_title, source_url, source_version, mime_type FROM documents WHERE external_id = 'e'`).
		Scan(&title, &url, &version, &mime))
	require.Equal(t, []string{"Title r\uFFFDsum\uFFFD", "https://source.test/e", "v\uFFFDe", "text/markdown; x=\uFFFD"}, []string{title, url, version, mime})
	logged := func(q string) []string {
		t.Helper()
		rows, err := b.pool.Query(context.Background(), q)
		require.NoError(t, err)
		out, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		slices.Sort(out)
		return out
	}
	require.Equal(t, []string{"docs/ab.md", "docs/cd.md", "fg"}, logged(`SELECT details->>'externalId' FROM integration_sync_logs
		WHERE message LIKE 'skipped:%' OR message LIKE 'failed:%'`))
	require.Equal(t, []string{
		"skipped: an item needs an external id of valid UTF-8 without NUL of at most 2000 bytes",
		"skipped: an item needs an external id of valid UTF-8 without NUL of at most 2000 bytes",
	}, logged(`SELECT message FROM integration_sync_logs WHERE message LIKE 'skipped:%'`))
	require.Equal(t, []string{"xy"}, logged(`SELECT details->>'path' FROM integration_sync_logs WHERE details ? 'path'`))

	// A walk error with a NUL and an invalid byte: the sync fails with it.
	b.src.mu.Lock()
	b.src.walkErr = errors.New("the listing broke off at \x00\xff")
	b.src.mu.Unlock()
	r = b.syncAndWait(t, "docs", integration.SyncOptions{})
	require.Equal(t, "failed", r.Status)
	require.Equal(t, "the listing broke off at \uFFFD", r.Error)
	require.Equal(t, []string{"the listing broke off at \uFFFD"}, logged(`SELECT DISTINCT payload->>'error' FROM events
		WHERE type = 'integration.sync.completed' AND payload ? 'error'`))
}

// TestSyncVersionWithNULNamesNoOtherVersion: an item's version is compared
// with the next sync's (Known), so one holding a NUL is stored with the
// NUL as U+FFFD, never dropped: an item at version "1\x002" that changes
// to version "12" is read again and updated, not taken as unchanged.
func TestSyncVersionWithNULNamesNoOtherVersion(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{start: true})
	b.src.mu.Lock()
	b.src.items["a"] = connector.Item{ExternalID: "a", Version: "1\x002", Filename: "a.md", Content: []byte("# a\n\nold text")}
	b.src.mu.Unlock()
	b.create(t, "docs", nil)
	r := b.syncAndWait(t, "docs", integration.SyncOptions{})
	require.Equal(t, syncRow{Status: "completed", Phase: "done", Total: 1, Processed: 1, Created: 1}, r)

	b.src.mu.Lock()
	b.src.items["a"] = connector.Item{ExternalID: "a", Version: "12", Filename: "a.md", Content: []byte("# a\n\nnew text")}
	b.src.mu.Unlock()
	r = b.syncAndWait(t, "docs", integration.SyncOptions{})
	require.Equal(t, syncRow{Status: "completed", Phase: "done", Total: 1, Processed: 1, Updated: 1}, r)
	var version string
	require.NoError(t, b.pool.QueryRow(context.Background(), `SELECT source_version FROM documents WHERE external_id = 'a'`).Scan(&version))
	require.Equal(t, "12", version)
}

// TestSecretSplitByNULNeverLogged: a source echoing the token with a NUL
// inside it ("tok-SEC\x00RET-123456") leaves no secret once the NUL is
// dropped: the text is cleaned before it is redacted, in the sync log,
// the job's error and the events.
func TestSecretSplitByNULNeverLogged(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{start: true})
	b.src.put("a", "# a\n\ntext")
	b.create(t, "docs", nil)
	b.src.mu.Lock()
	b.src.walkErr = errors.New("upstream refused tok-SEC\x00RET-123456")
	b.src.logDetails = map[string]any{"echo": "tok-SEC\x00RET-123456"}
	b.src.mu.Unlock()
	r := b.syncAndWait(t, "docs", integration.SyncOptions{})
	require.Equal(t, "failed", r.Status)
	require.Equal(t, "upstream refused ***", r.Error)
	require.Positive(t, count(t, b.pool, `SELECT count(*) FROM integration_sync_logs WHERE details->>'echo' = '***'`))
	require.Zero(t, count(t, b.pool, `SELECT count(*) FROM integration_sync_logs WHERE message LIKE '%SECRET%' OR details::text LIKE '%SECRET%'`))
	require.Zero(t, count(t, b.pool, `SELECT count(*) FROM events WHERE payload::text LIKE '%SECRET%'`))
	require.Zero(t, count(t, b.pool, `SELECT count(*) FROM integration_sync_jobs WHERE error_msg LIKE '%SECRET%'`))
}
