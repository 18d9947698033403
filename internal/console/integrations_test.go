package console

import (
	"encoding/json"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/discovery"
	"github.com/graphmill/graphmill/internal/events"
	"github.com/graphmill/graphmill/internal/integration"
)

// TestIntegrationAndDiscoveryEvents: the streams pass on the project's
// sync ends, discovery progress and discovery job ends, nothing of
// another project or another queue.
func TestIntegrationAndDiscoveryEvents(t *testing.T) {
	t.Parallel()
	project, other := uuid.New(), uuid.New()
	ev := func(typ string, p uuid.UUID, queue string) streamEvent {
		e := streamEvent{Type: typ, ProjectID: &p}
		e.Data.Queue = queue
		return e
	}
	syncs, disc := integrationEvents(project), discoveryEvents(project)
	name, ok := syncs(ev(events.TypeIntegrationSyncCompleted, project, ""))
	require.True(t, ok)
	require.Equal(t, SyncsEvent, name)
	_, ok = syncs(ev(events.TypeIntegrationSyncCompleted, other, ""))
	require.False(t, ok)
	_, ok = syncs(ev(events.TypeJobCompleted, project, integration.Queue))
	require.False(t, ok, "the sync's own event carries its end")

	name, ok = disc(ev(events.TypeDiscoveryProgress, project, ""))
	require.True(t, ok)
	require.Equal(t, DiscoveryEvent, name)
	_, ok = disc(ev(events.TypeJobCompleted, project, discovery.Queue))
	require.True(t, ok)
	_, ok = disc(ev(events.TypeJobCompleted, project, "object_extraction"))
	require.False(t, ok)
	_, ok = disc(ev(events.TypeDiscoveryProgress, other, ""))
	require.False(t, ok)
	_, ok = disc(streamEvent{Type: events.TypeDiscoveryProgress})
	require.False(t, ok, "no project")
}

// TestDiscoveryJobEvents: the job page's stream passes on its job's
// progress and end only.
func TestDiscoveryJobEvents(t *testing.T) {
	t.Parallel()
	project, job, other := uuid.New(), uuid.New(), uuid.New()
	keep := discoveryJobEvents(job)(project)
	ev := func(typ, queue string, id *uuid.UUID) streamEvent {
		e := streamEvent{Type: typ, ProjectID: &project}
		e.Data.Queue, e.Data.JobID = queue, id
		return e
	}
	name, ok := keep(ev(events.TypeDiscoveryProgress, "", &job))
	require.True(t, ok)
	require.Equal(t, DiscoveryEvent, name)
	_, ok = keep(ev(events.TypeJobCompleted, discovery.Queue, &job))
	require.True(t, ok)
	_, ok = keep(ev(events.TypeDiscoveryProgress, "", &other))
	require.False(t, ok, "another job")
	_, ok = keep(ev(events.TypeDiscoveryProgress, "", nil))
	require.False(t, ok)
	_, ok = keep(ev(events.TypeJobCompleted, "object_extraction", &job))
	require.False(t, ok, "another queue's job of the same id")
}

func TestPairsAndLines(t *testing.T) {
	t.Parallel()
	m, err := pairs("A=1\n\n B = two=2 \n", "=", "env")
	require.NoError(t, err)
	require.Equal(t, map[string]string{"A": "1", "B": "two=2"}, m)
	m, err = pairs("", ":", "headers")
	require.NoError(t, err)
	require.Nil(t, m)
	_, err = pairs("Authorization Bearer x", ":", "headers")
	require.ErrorContains(t, err, "headers line 1: write NAME:VALUE")
	require.Equal(t, []string{"a", "b c"}, lines(" a \n\n b c\n"))
}

func TestFormText(t *testing.T) {
	t.Parallel()
	require.Equal(t, "https://x.test", formText(json.RawMessage(`"https://x.test"`)))
	require.Equal(t, "a\nb\n", formText(json.RawMessage(`["a","b"]`)))
	require.Equal(t, "30", formText(30))
	require.Equal(t, "0.5", formText(0.5))
	require.Equal(t, "true", formText(json.RawMessage(`true`)))
}
