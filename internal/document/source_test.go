package document

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/activity"
	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/jobqueue"
	"github.com/graphmill/graphmill/internal/pgtest"
	"github.com/graphmill/graphmill/internal/postgres"
)

// noExtraction is an Extraction that queues nothing.
type noExtraction struct{}

func (noExtraction) EnqueueDocument(context.Context, pgx.Tx, uuid.UUID, uuid.UUID, *uuid.UUID, string, bool) error {
	return nil
}

func (noExtraction) CancelDocumentJobs(context.Context, pgx.Tx, uuid.UUID, uuid.UUID) error {
	return nil
}

// TestPutSourced: an integration's item becomes a document keyed by
// (integration, external id): stored with its parse queued, then left
// alone when its bytes are the same (metadata refreshed), replaced in
// place with a new parse when they changed; an upload of the same bytes
// is a document of its own, and items of one integration may share bytes.
func TestPutSourced(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.New(t)
	jobs, err := jobqueue.NewClient(pool, jobqueue.Config{})
	require.NoError(t, err)
	svc, err := NewService(Config{
		Pool: pool, Jobs: jobs, Extraction: noExtraction{}, Activity: activity.ForgetterOf(activity.ResourceDocument), Now: time.Now,
	})
	require.NoError(t, err)
	require.NoError(t, svc.AddQueues(1, 0))
	org, project, integration := uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())
	_, err = pool.Exec(ctx, `INSERT INTO orgs (id, name, created_at, updated_at) VALUES ($1, 'o', now(), now())`, org)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `INSERT INTO projects (id, org_id, name, created_at, updated_at) VALUES ($1, $2, 'p', now(), now())`, project, org)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `INSERT INTO integrations (id, project_id, name, display_name, provider_type, config_sealed, created_at, updated_at)
		VALUES ($1, $2, 'i', 'I', 'mem', 'sealed', now(), now())`, integration, project)
	require.NoError(t, err)
	job := uuid.Must(uuid.NewV7())
	put := func(ext, content, version string) (uuid.UUID, PutResult) {
		t.Helper()
		var id uuid.UUID
		var res PutResult
		require.NoError(t, postgres.WithTx(ctx, pool, func(tx pgx.Tx) error {
			var err error
			id, res, err = svc.PutSourced(ctx, tx, Sourced{
				ProjectID: project, DatasourceID: integration, SyncJobID: job, ExternalID: ext,
				Version: version, Title: "T " + ext, URL: "https://s.test/" + ext, Filename: "dir/" + ext + ".md", MimeType: "text/markdown", Data: []byte(content),
			})
			return err
		}))
		return id, res
	}
	parses := func(id uuid.UUID) int {
		t.Helper()
		var n int
		require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM document_parsing_jobs WHERE document_id = $1 AND status = 'queued'`, id).Scan(&n))
		return n
	}

	a, res := put("a", "# A\n\nalpha", "v1")
	require.Equal(t, PutCreated, res)
	require.Equal(t, 1, parses(a))
	d, err := svc.Get(ctx, project, a)
	require.NoError(t, err)
	require.Equal(t, "a.md", d.Filename)
	require.Equal(t, integration, *d.DatasourceID)
	require.Equal(t, "a", d.ExternalID)
	require.Equal(t, "v1", d.SourceVersion)

	again, res := put("a", "# A\n\nalpha", "v2")
	require.Equal(t, PutUnchanged, res)
	require.Equal(t, a, again)
	require.Equal(t, 1, parses(a), "nothing queued for the same bytes")
	d, err = svc.Get(ctx, project, a)
	require.NoError(t, err)
	require.Equal(t, "v2", d.SourceVersion, "the metadata follows the source")

	changed, res := put("a", "# A\n\nalpha, edited", "v3")
	require.Equal(t, PutUpdated, res)
	require.Equal(t, a, changed, "replaced in place")
	require.Equal(t, 1, parses(a), "the queued parse was replaced by one of the new bytes")
	var cancelled int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM document_parsing_jobs WHERE document_id = $1 AND status = 'cancelled'`, a).Scan(&cancelled))
	require.Equal(t, 1, cancelled)

	b, res := put("b", "# A\n\nalpha, edited", "v1")
	require.Equal(t, PutCreated, res, "two items may hold the same bytes")
	require.NotEqual(t, a, b)
	up, err := svc.Upload(ctx, Upload{ProjectID: project, Filename: "a.md", MimeType: "text/markdown", Data: []byte("# A\n\nalpha, edited")})
	require.NoError(t, err)
	require.False(t, up.Duplicate, "an upload is not deduplicated against synced documents")

	require.NoError(t, postgres.WithTx(ctx, pool, func(tx pgx.Tx) error {
		_, _, err := svc.PutSourced(ctx, tx, Sourced{ProjectID: project, DatasourceID: integration, ExternalID: "e", Filename: "e.md", Data: nil})
		require.ErrorIs(t, err, ErrEmpty)
		_, _, err = svc.PutSourced(ctx, tx, Sourced{ProjectID: project, DatasourceID: integration, ExternalID: "z", Filename: "z.exe", MimeType: "application/x-msdownload", Data: []byte{0x4d, 0x5a, 0, 1}})
		require.Equal(t, errs.Invalid, errs.CodeOf(err), "%v", err)
		return nil
	}))
}
