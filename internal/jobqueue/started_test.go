package jobqueue_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/jobqueue"
)

// project inserts an organization and a project (events name projects)
// and returns the project's id.
func (b *testBundle) project(t *testing.T) uuid.UUID {
	t.Helper()
	id, now := uuid.New(), time.Now()
	_, err := b.pool.Exec(context.Background(), `INSERT INTO orgs (id, name, created_at, updated_at) VALUES ($1, $2, $3, $3)`, id, id.String(), now)
	require.NoError(t, err)
	_, err = b.pool.Exec(context.Background(), `INSERT INTO projects (id, org_id, name, created_at, updated_at) VALUES ($1, $1, 'p', $2, $2)`, id, now)
	require.NoError(t, err)
	return id
}

// startedEvent is a job.started event as stored.
type startedEvent struct {
	Project uuid.UUID
	Queue   string      `json:"queue"`
	JobIDs  []uuid.UUID `json:"jobIds"`
	Status  string      `json:"status"`
}

func (b *testBundle) startedEvents(t *testing.T) []startedEvent {
	t.Helper()
	rows, err := b.pool.Query(context.Background(), `SELECT project_id, payload FROM events WHERE type = 'job.started' ORDER BY id`)
	require.NoError(t, err)
	defer rows.Close()
	var out []startedEvent
	for rows.Next() {
		var e startedEvent
		var raw []byte
		require.NoError(t, rows.Scan(&e.Project, &raw))
		require.NoError(t, json.Unmarshal(raw, &e))
		out = append(out, e)
	}
	require.NoError(t, rows.Err())
	return out
}

// A claimed batch is announced as job.started, one event per project of
// the batch, committed before the handler runs; jobs without a project
// are not announced.
func TestClaimPublishesStarted(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p1, p2 := b.project(t), b.project(t)
	ids := b.insert(t, jobSpec{project: &p1}, jobSpec{project: &p2}, jobSpec{project: &p1}, jobSpec{})
	var mu sync.Mutex
	var seen []startedEvent
	b.newProcess(t, opts{queue: jobqueue.QueueConfig{BatchSize: 10, Handler: jobqueue.HandlerFunc(
		func(_ context.Context, jobs []jobqueue.Job) []error {
			mu.Lock()
			defer mu.Unlock()
			seen = b.startedEvents(t)
			return make([]error, len(jobs))
		})}})
	require.Eventually(t, func() bool { return b.countStatus(t, jobqueue.StatusCompleted) == len(ids) }, waitFor, 5*time.Millisecond)
	want := []startedEvent{
		{Project: p1, Queue: queueName, JobIDs: []uuid.UUID{ids[0], ids[2]}, Status: "running"},
		{Project: p2, Queue: queueName, JobIDs: []uuid.UUID{ids[1]}, Status: "running"},
	}
	require.Equal(t, want, b.startedEvents(t))
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, want, seen, "the handler ran after the announcement committed")
}
