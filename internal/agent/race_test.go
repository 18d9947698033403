package agent_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/agent"
	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/llm"
	"github.com/graphmill/graphmill/internal/pgtest"
)

// waitingRun starts a run whose model asks the user a question and waits
// until it waits for the answer; it returns the service, the project, the
// user, the run, a count of the database's lock waits, and hold, which
// runs a statement in a transaction left open until the returned func
// commits it.
func waitingRun(t *testing.T) (*agent.Service, uuid.UUID, uuid.UUID, uuid.UUID, func() int, func(string, ...any) func()) {
	t.Helper()
	model := &sameIDModel{calls: []llm.ToolCall{{ID: "c", Name: llm.ToolAskUser, Arguments: json.RawMessage(`{"question":"colour?"}`)}}}
	svc, p, project, pool := newService(t, model, &recBox{}, &recNotifier{})
	ctx := context.Background()
	a, err := svc.CreateAgent(ctx, p, project, agent.CreateParams{Name: "asker", Instructions: "x", Tools: []string{}})
	require.NoError(t, err)
	run, err := svc.StartRun(ctx, p, project, a.ID, "go")
	require.NoError(t, err)
	r := settled(t, svc, project, p.UserID, run.ID)
	require.Equal(t, agent.StatusWaitingForInput, r.Status, r.Error)
	waits := func() int { return pgtest.LockWaits(t, pool) }
	hold := func(sql string, args ...any) func() {
		tx := pgtest.Hold(t, pool, sql, args...)
		return func() { require.NoError(t, tx.Commit(context.Background())) }
	}
	return svc, project, p.UserID, run.ID, waits, hold
}

// TestAnswerTwiceAtOnceNamesTheRunsStatus: two answers to one question
// sent at once: one is taken, the other is refused (failed_precondition)
// saying the run's status as it is after the first, not "is
// waiting_for_input; only a run waiting for input can be answered" (the
// status read before its lock was waited for).
func TestAnswerTwiceAtOnceNamesTheRunsStatus(t *testing.T) {
	t.Parallel()
	svc, project, user, run, waits, hold := waitingRun(t)
	release := hold(`SELECT id FROM agent_runs WHERE id = $1 FOR NO KEY UPDATE`, run)

	errc := make(chan error, 2)
	for _, ans := range []string{"red", "blue"} {
		go func() {
			_, err := svc.AnswerRun(context.Background(), project, user, run, agent.Answer{Answer: &ans})
			errc <- err
		}()
	}
	require.Eventually(t, func() bool { return waits() == 2 }, 10*time.Second, 5*time.Millisecond, "both answers wait for the run")
	release()

	var refused []error
	for range 2 {
		if err := <-errc; err != nil {
			refused = append(refused, err)
		}
	}
	require.Len(t, refused, 1, "one answer is taken")
	require.Equal(t, errs.FailedPrecondition, errs.CodeOf(refused[0]), refused[0])
	require.NotContains(t, refused[0].Error(), "is waiting_for_input")
	require.Contains(t, refused[0].Error(), "has no open question")
}

// TestCancelWhileFinishingNamesTheEndedStatus: a cancel that waits for a
// run finishing at the same time is refused naming the status the run
// ended with, not the one read before the wait.
func TestCancelWhileFinishingNamesTheEndedStatus(t *testing.T) {
	t.Parallel()
	svc, project, user, run, waits, hold := waitingRun(t)
	release := hold(`UPDATE agent_runs SET status = 'completed', output = 'done', completed_at = now() WHERE id = $1`, run)

	errc := make(chan error, 1)
	go func() {
		_, err := svc.CancelRun(context.Background(), project, user, run)
		errc <- err
	}()
	require.Eventually(t, func() bool { return waits() == 1 }, 10*time.Second, 5*time.Millisecond, "the cancel waits for the run")
	release()

	err := <-errc
	require.Equal(t, errs.FailedPrecondition, errs.CodeOf(err), err)
	require.Contains(t, err.Error(), "is completed; only a run that has not ended can be cancelled")
}

// TestHugeToolNameNotEchoed: a tool name of 100,000 characters, unknown
// or not among the tools, is refused with a detail that quotes its start,
// not the whole of it (it was echoed whole: a 900 kB detail).
func TestHugeToolNameNotEchoed(t *testing.T) {
	t.Parallel()
	svc, p, project, _ := newService(t, &sameIDModel{}, &recBox{}, &recNotifier{})
	huge := strings.Repeat("t", 100_000)
	for _, in := range []agent.CreateParams{
		{Name: "a", Instructions: "x", Tools: []string{huge}},
		{Name: "b", Instructions: "x", Tools: []string{"delete_thing"}, RequireApprovalFor: []string{huge}},
	} {
		_, err := svc.CreateAgent(context.Background(), p, project, in)
		require.Equal(t, errs.Invalid, errs.CodeOf(err), err)
		require.Less(t, len(err.Error()), 500, err.Error()[:min(len(err.Error()), 200)])
		require.Contains(t, err.Error(), `"tttt`)
		require.Contains(t, err.Error(), `…"`)
	}
}
