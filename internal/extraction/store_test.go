package extraction

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/pgtest"
	"github.com/graphmill/graphmill/internal/tenancy"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// storeFixture is a project with one parsed document, written in a
// transaction rolled back when the test ends.
type storeFixture struct {
	tx       pgx.Tx
	project  uuid.UUID
	document uuid.UUID
}

func newStoreFixture(t *testing.T) storeFixture {
	t.Helper()
	ctx := context.Background()
	f := storeFixture{tx: pgtest.Tx(t), project: uuid.Must(uuid.NewV7()), document: uuid.Must(uuid.NewV7())}
	org := uuid.Must(uuid.NewV7())
	_, err := f.tx.Exec(ctx, `INSERT INTO orgs (id, name, created_at, updated_at) VALUES ($1, 'o', now(), now())`, org)
	require.NoError(t, err)
	_, err = f.tx.Exec(ctx, `INSERT INTO projects (id, org_id, name, created_at, updated_at) VALUES ($1, $2, 'p', now(), now())`, f.project, org)
	require.NoError(t, err)
	_, err = f.tx.Exec(ctx, `INSERT INTO documents (id, project_id, filename, mime_type, size_bytes, sha256, content, status, created_at, updated_at)
		VALUES ($1, $2, 'a.md', 'text/markdown', 1, $3, 'x', 'parsed', now(), now())`, f.document, f.project, f.document[:])
	require.NoError(t, err)
	return f
}

// priorJob is an extraction job of the fixture's document that exists
// before the call under test.
type priorJob struct {
	jobType, trigger, status string
	created, completed       time.Duration // before now; completed 0: not completed
}

func (f storeFixture) addJobs(t *testing.T, now time.Time, jobs []priorJob) {
	t.Helper()
	for _, j := range jobs {
		trigger := j.trigger
		if trigger == "" {
			trigger = TriggerManual
		}
		var completed *time.Time
		if j.completed > 0 {
			at := now.Add(-j.completed)
			completed = &at
		}
		_, err := f.tx.Exec(context.Background(), `INSERT INTO object_extraction_jobs
			(id, project_id, document_id, job_type, trigger_type, status, run_at, created_at, updated_at, completed_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $7, $7, $8)`,
			uuid.Must(uuid.NewV7()), f.project, f.document, j.jobType, trigger, j.status, now.Add(-j.created), completed)
		require.NoError(t, err)
	}
}

// jobsOf lists the job types of the document's jobs queued at now.
func (f storeFixture) jobsOf(t *testing.T, now time.Time) []string {
	t.Helper()
	rows, err := f.tx.Query(context.Background(), `SELECT job_type || '/' || trigger_type FROM object_extraction_jobs
		WHERE document_id = $1 AND status = 'queued' AND created_at = $2 ORDER BY id`, f.document, now)
	require.NoError(t, err)
	kinds, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return kinds
}

// TestJobInsertForDocument: a parse queues the document's one
// full_extraction when it has no extraction at all, else an incremental
// one when the parse added chunks and no extraction of it is queued.
func TestJobInsertForDocument(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		prior     []priorJob
		newChunks bool
		want      []string // queued by the call
	}{
		{name: "first parse", newChunks: true, want: []string{JobTypeFull + "/" + TriggerWebhook}},
		{name: "first parse without new chunks", want: []string{JobTypeFull + "/" + TriggerWebhook}},
		{name: "re-parse adding chunks", newChunks: true, prior: []priorJob{
			{jobType: JobTypeFull, status: "completed", created: time.Hour, completed: time.Minute},
		}, want: []string{JobTypeIncremental + "/" + TriggerWebhook}},
		{name: "re-parse adding chunks after a failed full extraction", newChunks: true, prior: []priorJob{
			{jobType: JobTypeFull, status: "failed", created: time.Hour, completed: time.Minute},
		}, want: []string{JobTypeIncremental + "/" + TriggerWebhook}},
		{name: "re-parse adding no chunks", prior: []priorJob{
			{jobType: JobTypeFull, status: "completed", created: time.Hour, completed: time.Minute},
		}},
		{name: "re-parse adding chunks while the full extraction is queued", newChunks: true, prior: []priorJob{
			{jobType: JobTypeFull, status: "queued", created: time.Hour},
		}},
		{name: "re-parse adding chunks while an incremental one is queued", newChunks: true, prior: []priorJob{
			{jobType: JobTypeFull, status: "completed", created: time.Hour, completed: time.Minute},
			{jobType: JobTypeIncremental, status: "queued", created: time.Minute},
		}},
		{name: "re-parse adding chunks while one is running", newChunks: true, prior: []priorJob{
			{jobType: JobTypeFull, status: "running", created: time.Hour},
		}, want: []string{JobTypeIncremental + "/" + TriggerWebhook}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newStoreFixture(t)
			now := time.Now().UTC().Truncate(time.Microsecond)
			f.addJobs(t, now, tt.prior)
			datasource := uuid.Must(uuid.NewV7()) // the integration that synced the document
			queued, err := jobInsertForDocument(context.Background(), f.tx, f.project, f.document, &datasource, TriggerWebhook, tt.newChunks, now)
			require.NoError(t, err)
			require.Equal(t, len(tt.want) == 1, queued)
			got := f.jobsOf(t, now)
			if tt.want == nil {
				tt.want = []string{}
			}
			require.Equal(t, tt.want, got)
			var withDatasource int
			require.NoError(t, f.tx.QueryRow(context.Background(), `SELECT count(*) FROM object_extraction_jobs
				WHERE document_id = $1 AND created_at = $2 AND datasource_id = $3`, f.document, now, datasource).Scan(&withDatasource))
			require.Equal(t, len(tt.want), withDatasource, "the queued job carries the datasourceId")
		})
	}
}

// TestJobsInsertScheduled: a scheduled reextraction is queued for a parsed
// document whose newest completed extraction is older than the project's
// interval, unless one is queued or running, or a scheduled one was
// created within the interval.
func TestJobsInsertScheduled(t *testing.T) {
	t.Parallel()
	const interval = 24 * time.Hour
	scheduled := []string{JobTypeReextraction + "/" + TriggerScheduled}
	tests := []struct {
		name     string
		prior    []priorJob
		unparsed bool
		want     []string
	}{
		{name: "completed before the interval", want: scheduled, prior: []priorJob{
			{jobType: JobTypeFull, status: "completed", created: 50 * time.Hour, completed: 49 * time.Hour},
		}},
		{name: "needing review before the interval", want: scheduled, prior: []priorJob{
			{jobType: JobTypeFull, status: "requires_review", created: 50 * time.Hour, completed: 49 * time.Hour},
		}},
		{name: "the newest completion counts", prior: []priorJob{
			{jobType: JobTypeFull, status: "completed", created: 50 * time.Hour, completed: 49 * time.Hour},
			{jobType: JobTypeIncremental, status: "completed", created: 2 * time.Hour, completed: time.Hour},
		}},
		{name: "never completed"},
		{name: "only failed", prior: []priorJob{
			{jobType: JobTypeFull, status: "failed", created: 50 * time.Hour, completed: 49 * time.Hour},
		}},
		{name: "one queued", prior: []priorJob{
			{jobType: JobTypeFull, status: "completed", created: 50 * time.Hour, completed: 49 * time.Hour},
			{jobType: JobTypeIncremental, status: "queued", created: 30 * time.Hour},
		}},
		{name: "one running", prior: []priorJob{
			{jobType: JobTypeFull, status: "completed", created: 50 * time.Hour, completed: 49 * time.Hour},
			{jobType: JobTypeIncremental, status: "running", created: 30 * time.Hour},
		}},
		{name: "a scheduled one failed within the interval", prior: []priorJob{
			{jobType: JobTypeFull, status: "completed", created: 50 * time.Hour, completed: 49 * time.Hour},
			{jobType: JobTypeReextraction, trigger: TriggerScheduled, status: "failed", created: 20 * time.Hour, completed: 19 * time.Hour},
		}},
		{name: "a manual one failed within the interval", want: scheduled, prior: []priorJob{
			{jobType: JobTypeFull, status: "completed", created: 50 * time.Hour, completed: 49 * time.Hour},
			{jobType: JobTypeReextraction, status: "failed", created: 20 * time.Hour, completed: 19 * time.Hour},
		}},
		{name: "a scheduled one failed before the interval", want: scheduled, prior: []priorJob{
			{jobType: JobTypeFull, status: "completed", created: 50 * time.Hour, completed: 49 * time.Hour},
			{jobType: JobTypeReextraction, trigger: TriggerScheduled, status: "cancelled", created: 25 * time.Hour, completed: 25 * time.Hour},
		}},
		{name: "a document not parsed", unparsed: true, prior: []priorJob{
			{jobType: JobTypeFull, status: "completed", created: 50 * time.Hour, completed: 49 * time.Hour},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newStoreFixture(t)
			ctx := context.Background()
			now := time.Now().UTC().Truncate(time.Microsecond)
			f.addJobs(t, now, tt.prior)
			if tt.unparsed {
				_, err := f.tx.Exec(ctx, `UPDATE documents SET status = 'failed' WHERE id = $1`, f.document)
				require.NoError(t, err)
			}
			n, err := jobsInsertScheduled(ctx, f.tx, []tenancy.ReextractionInterval{{ProjectID: f.project, Hours: int(interval.Hours())}}, now)
			require.NoError(t, err)
			require.Equal(t, len(tt.want), n)
			got := f.jobsOf(t, now)
			if tt.want == nil {
				tt.want = []string{}
			}
			require.Equal(t, tt.want, got)
		})
	}
}

// TestLogInsertKeepsOrder: the entries of one write are listed in the
// order given, pageable and filtered by level, with their metadata.
func TestLogInsertKeepsOrder(t *testing.T) {
	t.Parallel()
	f := newStoreFixture(t)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Microsecond)
	f.addJobs(t, now, []priorJob{{jobType: JobTypeFull, status: "running"}})
	var job uuid.UUID
	require.NoError(t, f.tx.QueryRow(ctx, `SELECT id FROM object_extraction_jobs WHERE document_id = $1`, f.document).Scan(&job))
	require.NoError(t, logInsert(ctx, f.tx, job, f.project, now, nil))
	entries := []logRow{
		{operation: OpValidation, level: LevelWarn, message: "first", metadata: map[string]any{"window": 0}},
		{operation: "llm_call", level: LevelInfo, message: "second"},
		{operation: OpValidation, level: LevelWarn, message: "third", metadata: map[string]any{"window": 2}},
		{operation: OpError, level: LevelError, message: "fourth"},
	}
	require.NoError(t, logInsert(ctx, f.tx, job, f.project, now, entries))

	messages := func(list []LogEntry) []string {
		out := make([]string, len(list))
		for i, e := range list {
			out[i] = e.Message
			require.Equal(t, job, e.JobID)
		}
		return out
	}
	all, total, err := logList(ctx, f.tx, job, "", 10, 0)
	require.NoError(t, err)
	require.Equal(t, 4, total)
	require.Equal(t, []string{"first", "second", "third", "fourth"}, messages(all))
	require.JSONEq(t, `{"window": 0}`, string(all[0].Metadata))
	require.JSONEq(t, `{}`, string(all[1].Metadata))

	page, total, err := logList(ctx, f.tx, job, "", 2, 1)
	require.NoError(t, err)
	require.Equal(t, 4, total)
	require.Equal(t, []string{"second", "third"}, messages(page))

	warn, total, err := logList(ctx, f.tx, job, LevelWarn, 10, 0)
	require.NoError(t, err)
	require.Equal(t, 2, total)
	require.Equal(t, []string{"first", "third"}, messages(warn))
	require.Equal(t, OpValidation, warn[1].Operation)
}
