package integration_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/connector/web"
	"github.com/graphmill/graphmill/internal/events"
	"github.com/graphmill/graphmill/internal/integration"
	"github.com/graphmill/graphmill/internal/pgtest"
)

// chainSite is a site / -> /p1 -> ... -> /p5 answering conditional GETs
// by ETag; it counts full responses by path and can hold the requests of
// one path until they are cancelled.
type chainSite struct {
	mu          sync.Mutex
	full        map[string]int
	notModified int
	hold        string        // path whose requests wait for their cancellation
	held        chan struct{} // closed when a held request arrived
}

func (s *chainSite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	if r.URL.Path == s.hold {
		held := s.held
		s.held = nil
		s.mu.Unlock()
		if held != nil {
			close(held)
		}
		<-r.Context().Done()
		return
	}
	defer s.mu.Unlock()
	if r.URL.Path == "/robots.txt" {
		http.NotFound(w, r)
		return
	}
	var next string
	switch r.URL.Path {
	case "/":
		next = "/p1"
	case "/p1", "/p2", "/p3", "/p4":
		next = fmt.Sprintf("/p%c", r.URL.Path[2]+1)
	case "/p5":
	default:
		http.NotFound(w, r)
		return
	}
	body := fmt.Sprintf(`<html><head><title>%s</title></head><body><p>page %s</p><a href="%s">next</a></body></html>`, r.URL.Path, r.URL.Path, next)
	sum := sha256.Sum256([]byte(body))
	tag := `"` + hex.EncodeToString(sum[:8]) + `"`
	w.Header().Set("Content-Type", "text/html")
	w.Header().Set("ETag", tag)
	if r.Header.Get("If-None-Match") == tag {
		s.notModified++
		w.WriteHeader(http.StatusNotModified)
		return
	}
	s.full[r.URL.Path]++
	_, _ = w.Write([]byte(body))
}

// TestWebSyncInterruptedResumesWithConditionalGets: a first web sync is
// interrupted midway (its worker stops while /p3 is being fetched); the
// retry of the job, on another worker, answers the pages stored before
// the interruption with 304 from the checkpointed link state and fetches
// only the others in full; every page is one document and the counters
// add up.
func TestWebSyncInterruptedResumesWithConditionalGets(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.New(t)
	site := &chainSite{full: map[string]int{}, hold: "/p3", held: make(chan struct{})}
	srv := httptest.NewServer(site)
	t.Cleanup(srv.Close)
	n := events.NewNotifier(pool, slog.New(slog.DiscardHandler))
	require.NoError(t, n.Start(ctx))
	t.Cleanup(func() { _ = n.Stop(context.Background()) })
	loopback := []string{"127.0.0.0/8"}
	svc, _, jobs, err := build(pool, n, web.New(), &extractions{}, loopback, 2*time.Second, t.TempDir())
	require.NoError(t, err)
	project := newProject(t, pool)
	_, err = svc.Create(ctx, project, nil, integration.CreateParams{
		Name: "site", DisplayName: "Site", ProviderType: web.Name,
		Config: map[string]json.RawMessage{"start_urls": raw([]string{srv.URL + "/"})},
	})
	require.NoError(t, err)
	res, err := svc.Sync(ctx, project, "site", integration.TriggerManual, integration.SyncOptions{})
	require.NoError(t, err)
	require.True(t, res.Success)

	require.NoError(t, jobs.Start(ctx))
	<-site.held
	stopCtx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	_ = jobs.Stop(stopCtx) // cancels the sync in flight
	cancel()
	b := &bundle{pool: pool, project: project}
	require.Equal(t, 3, count(t, pool, `SELECT count(*) FROM documents WHERE datasource_id IS NOT NULL`), "/, /p1 and /p2 stored before the interruption")
	site.mu.Lock()
	require.Equal(t, map[string]int{"/": 1, "/p1": 1, "/p2": 1}, site.full)
	site.full, site.notModified, site.hold = map[string]int{}, 0, ""
	site.mu.Unlock()

	_, _, jobs2, err := build(pool, n, web.New(), &extractions{}, loopback, 2*time.Second, t.TempDir())
	require.NoError(t, err)
	b.jobs = jobs2
	b.startWorkers(t)
	r := b.wait(t, res.JobID)
	require.Equal(t, syncRow{Status: "completed", Phase: "done", Total: 6, Processed: 6, Created: 6}, r)
	site.mu.Lock()
	defer site.mu.Unlock()
	require.Equal(t, map[string]int{"/p3": 1, "/p4": 1, "/p5": 1}, site.full, "only the pages not stored before are fetched in full")
	require.Equal(t, 3, site.notModified)
	require.Equal(t, 6, count(t, pool, `SELECT count(*) FROM documents WHERE datasource_id IS NOT NULL`))
	require.Equal(t, 6, count(t, pool, `SELECT count(DISTINCT external_id) FROM documents`))
}
