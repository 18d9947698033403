package embeddingpolicy_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/embeddingpolicy"
	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/pgtest"
	"github.com/graphmill/graphmill/internal/provider"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// queue records what the service asks of the embedding domain.
type queue struct {
	mu      sync.Mutex
	types   [][]string
	deleted []uuid.UUID
}

func (q *queue) EnqueueTypes(_ context.Context, _ pgx.Tx, _ uuid.UUID, types []string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(types) > 0 {
		q.types = append(q.types, types)
	}
	return nil
}

func (q *queue) DeletePolicyVectors(_ context.Context, _ pgx.Tx, _, policy uuid.UUID) (int64, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.deleted = append(q.deleted, policy)
	return 0, nil
}

// take returns and clears the recorded type lists.
func (q *queue) take() [][]string {
	q.mu.Lock()
	defer q.mu.Unlock()
	t := q.types
	q.types = nil
	return t
}

type testBundle struct {
	pool    *pgxpool.Pool
	project uuid.UUID
	queue   *queue
	svc     *embeddingpolicy.Service
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	pool := pgtest.New(t)
	b := &testBundle{pool: pool, queue: &queue{}}
	b.project = newProject(t, pool)
	b.svc = embeddingpolicy.NewService(pool, b.queue, provider.NewService(provider.Config{Pool: pool}), nil)
	return b
}

func newProject(t *testing.T, pool *pgxpool.Pool) uuid.UUID {
	t.Helper()
	ctx := context.Background()
	org, project := uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())
	_, err := pool.Exec(ctx, `INSERT INTO orgs (id, name, created_at, updated_at) VALUES ($1, $2, now(), now())`, org, org.String())
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `INSERT INTO projects (id, org_id, name, created_at, updated_at) VALUES ($1, $2, 'p', now(), now())`, project, org)
	require.NoError(t, err)
	return project
}

func ptr[T any](v T) *T { return &v }

func params(name string) embeddingpolicy.CreateParams {
	return embeddingpolicy.CreateParams{
		Name: name, ObjectTypes: []string{"Person"}, Fields: []string{"born"}, Template: "{{.name}} {{.born}}", Model: "local/feature-hash-v1",
	}
}

// TestReembeddingQueued: which changes queue which object types.
func TestReembeddingQueued(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()

	p, err := b.svc.Create(ctx, b.project, params("people"))
	require.NoError(t, err)
	require.Equal(t, [][]string{{"Person"}}, b.queue.take(), "an active policy queues its types")
	in := params("inactive")
	in.Active = ptr(false)
	inactive, err := b.svc.Create(ctx, b.project, in)
	require.NoError(t, err)
	require.False(t, inactive.Active)
	require.Empty(t, b.queue.take(), "an inactive one queues nothing")

	// Name, description, chunking_config: nothing queued.
	cc := json.RawMessage(`{"a":1}`)
	got, err := b.svc.Update(ctx, b.project, p.ID, embeddingpolicy.Update{Name: ptr("persons"), Description: ptr("d"), ChunkingConfig: ptr(cc)})
	require.NoError(t, err)
	require.Equal(t, "persons", got.Name)
	require.JSONEq(t, `{"a":1}`, string(got.ChunkingConfig))
	require.Empty(t, b.queue.take())

	// No change at all: the row and updated_at stay.
	same, err := b.svc.Update(ctx, b.project, p.ID, embeddingpolicy.Update{Template: ptr("{{.name}} {{.born}}"), Fields: ptr([]string{" born ", "born"})})
	require.NoError(t, err)
	require.Equal(t, got.UpdatedAt, same.UpdatedAt)
	require.Empty(t, b.queue.take())

	// New types: the old and the new are queued.
	_, err = b.svc.Update(ctx, b.project, p.ID, embeddingpolicy.Update{ObjectTypes: ptr([]string{"Place", "Person", "Place"})})
	require.NoError(t, err)
	require.Equal(t, [][]string{{"Person", "Place"}}, b.queue.take())

	// Template or model: the covered types.
	_, err = b.svc.Update(ctx, b.project, p.ID, embeddingpolicy.Update{Template: ptr("{{.name}}")})
	require.NoError(t, err)
	require.Equal(t, [][]string{{"Place", "Person"}}, b.queue.take())

	// Deactivated: the types it covered; changed while inactive: nothing.
	_, err = b.svc.Update(ctx, b.project, p.ID, embeddingpolicy.Update{Active: ptr(false)})
	require.NoError(t, err)
	require.Equal(t, [][]string{{"Place", "Person"}}, b.queue.take())
	_, err = b.svc.Update(ctx, b.project, p.ID, embeddingpolicy.Update{Template: ptr("{{.key}}")})
	require.NoError(t, err)
	require.Empty(t, b.queue.take())

	// Activating the other: its types.
	_, err = b.svc.Update(ctx, b.project, inactive.ID, embeddingpolicy.Update{Active: ptr(true)})
	require.NoError(t, err)
	require.Equal(t, [][]string{{"Person"}}, b.queue.take())

	// Deleting: the vectors go; an active policy's types are queued, an
	// inactive one's not.
	require.NoError(t, b.svc.Delete(ctx, b.project, inactive.ID))
	require.Equal(t, [][]string{{"Person"}}, b.queue.take())
	require.NoError(t, b.svc.Delete(ctx, b.project, p.ID))
	require.Empty(t, b.queue.take())
	require.Equal(t, []uuid.UUID{inactive.ID, p.ID}, b.queue.deleted)
	require.ErrorIs(t, b.svc.Delete(ctx, b.project, p.ID), embeddingpolicy.ErrNotFound)
}

func TestActivePolicies(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	other := newProject(t, b.pool)
	third := newProject(t, b.pool)
	a, err := b.svc.Create(ctx, b.project, params("a"))
	require.NoError(t, err)
	off := params("off")
	off.Active = ptr(false)
	_, err = b.svc.Create(ctx, b.project, off)
	require.NoError(t, err)
	o, err := b.svc.Create(ctx, other, params("a"))
	require.NoError(t, err)
	_, err = b.svc.Create(ctx, third, params("a"))
	require.NoError(t, err)

	list, err := b.svc.ActivePolicies(ctx, []uuid.UUID{b.project, other})
	require.NoError(t, err)
	require.Len(t, list, 2)
	require.Equal(t, a.ID, list[0].ID)
	require.Equal(t, o.ID, list[1].ID)
	require.Equal(t, []string{"Person"}, list[0].ObjectTypes)
	require.Equal(t, []string{"born"}, list[0].Fields)
	require.Equal(t, "{{.name}} {{.born}}", list[0].Template)
	require.Equal(t, "local/feature-hash-v1", list[0].Model)
	require.Equal(t, b.project, list[0].ProjectID)
}

func TestValidation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		change func(*embeddingpolicy.CreateParams)
		detail string
	}{
		{"BlankName", func(p *embeddingpolicy.CreateParams) { p.Name = "  " }, "name"},
		{"NoTypes", func(p *embeddingpolicy.CreateParams) { p.ObjectTypes = nil }, "object_types"},
		{"LongType", func(p *embeddingpolicy.CreateParams) { p.ObjectTypes = []string{string(make([]byte, 201))} }, "object_types"},
		{"BlankField", func(p *embeddingpolicy.CreateParams) { p.Fields = []string{""} }, "fields"},
		{"UnknownTemplateField", func(p *embeddingpolicy.CreateParams) { p.Template = "{{.city}}" }, `"city"`},
		{"BlankTemplate", func(p *embeddingpolicy.CreateParams) { p.Template = " " }, "template"},
		{"NoModel", func(p *embeddingpolicy.CreateParams) { p.Model = "" }, "model"},
		{"GenerativeModel", func(p *embeddingpolicy.CreateParams) { p.Model = "gemini-2.5-pro" }, "model"},
		{"ChunkingNotObject", func(p *embeddingpolicy.CreateParams) { p.ChunkingConfig = []byte(`"x"`) }, "chunking_config"},
	} {
		p := params("v-" + tc.name)
		tc.change(&p)
		_, err := b.svc.Create(ctx, b.project, p)
		require.Error(t, err, tc.name)
		require.Equal(t, errs.Invalid, errs.CodeOf(err), tc.name)
		require.Contains(t, err.Error(), tc.detail, tc.name)
	}
	for _, m := range []string{"gemini-embedding-001", "text-embedding-005", "local/feature-hash-v1"} {
		p := params("model " + m)
		p.Model = m
		_, err := b.svc.Create(ctx, b.project, p)
		require.NoError(t, err, m)
	}
	_, err := b.svc.Create(ctx, b.project, params("Model Local/Feature-Hash-V1"))
	require.ErrorIs(t, err, embeddingpolicy.ErrNameTaken, "names are unique case-insensitively")
	_, err = b.svc.Get(ctx, newProject(t, b.pool), uuid.Must(uuid.NewV7()))
	require.ErrorIs(t, err, embeddingpolicy.ErrNotFound)
}
