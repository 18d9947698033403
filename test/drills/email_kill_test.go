package drills

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/mail"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/email"
	"github.com/graphmill/graphmill/internal/email/smtptest"
)

// killEmails is how many messages the email kill drill queues.
const killEmails = 40

// TestEmailKillNineDrill: graphmill serve sending to a test SMTP server
// (github.com/emersion/go-smtp, which holds its reply to every message for
// a while, so that sends are in flight) is killed with SIGKILL while it
// sends, and restarted on the same data directory. Delivery is at least
// once (decisions.md): once the queue drains, every message arrived, each
// job killed in flight arrived at most twice, every other one exactly
// once, and every job is completed, with no lease left.
func TestEmailKillNineDrill(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	smtpSrv := smtptest.Start(t, smtptest.Options{ReplyDelay: 300 * time.Millisecond})
	dir := dataDir(t)
	srv := newProc(t, dir, "serve", "serve", "GRAPHMILL_DATA_DIR="+dir, "GRAPHMILL_BOOTSTRAP_TOKEN="+newToken(),
		"GRAPHMILL_SMTP_URL=smtp://"+smtpSrv.Addr, "GRAPHMILL_EMAIL_FROM=Graphmill <noreply@graphmill.test>")
	srv.start()
	db := openDB(t, embeddedURL(t, dir))

	// The messages are queued as the domains queue theirs: email.Enqueue
	// in a transaction, which wakes the workers at commit.
	tpl, err := email.NewTemplates()
	require.NoError(t, err)
	subjects := map[string]uuid.UUID{}
	tx, err := db.Begin(ctx)
	require.NoError(t, err)
	for i := range killEmails {
		j := email.Job{
			TemplateName: email.TemplateInvitation, ToEmail: fmt.Sprintf("user%02d@example.com", i), ToName: "Drill",
			Subject: fmt.Sprintf("Drill message %02d", i),
			Data: json.RawMessage(fmt.Sprintf(`{"inviterName":"Ada","projectName":"Drill","role":"project_user",`+
				`"link":"https://graphmill.test/accept?token=t%02d","expiresAt":"2026-12-01"}`, i)),
		}
		require.NoError(t, email.Enqueue(ctx, tx, tpl, nil, &j, time.Now()))
		subjects[j.Subject] = j.ID
	}
	require.NoError(t, tx.Commit(ctx))

	// Kill while messages are being sent: some arrived, others are at the
	// server waiting for its reply.
	require.Eventually(t, func() bool {
		return len(smtpSrv.Messages()) >= killEmails/4 &&
			count(t, db, `SELECT count(*) FROM email_jobs WHERE status = 'running'`) > 0
	}, time.Minute, time.Millisecond)
	srv.kill()
	before := len(smtpSrv.Messages())
	rows, err := db.Query(ctx, `SELECT id FROM email_jobs WHERE status = 'running'`)
	require.NoError(t, err)
	killed, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	require.NoError(t, err)
	require.NotEmpty(t, killed, "the kill found sends in flight")
	inFlight := map[uuid.UUID]bool{}
	for _, id := range killed {
		inFlight[id] = true
	}
	srv.start()

	// The queue drains: the killed jobs run again once their lease ends.
	require.Eventually(t, func() bool {
		return count(t, db, `SELECT count(*) FROM email_jobs WHERE status IN ('queued', 'running')`) == 0
	}, 3*time.Minute, 200*time.Millisecond)
	require.Equal(t, killEmails, count(t, db, `SELECT count(*) FROM email_jobs
		WHERE status = 'completed' AND completed_at IS NOT NULL AND locked_by IS NULL AND locked_until IS NULL`),
		"every job completed, with no lease left")

	received := map[uuid.UUID]int{}
	for _, m := range smtpSrv.Messages() {
		msg, err := mail.ReadMessage(bytes.NewReader(m.Data))
		require.NoError(t, err)
		id, ok := subjects[msg.Header.Get("Subject")]
		require.True(t, ok, "unexpected message %q", msg.Header.Get("Subject"))
		received[id]++
	}
	resent := 0
	for subject, id := range subjects {
		n := received[id]
		require.Positive(t, n, "%s was lost", subject)
		if inFlight[id] {
			require.LessOrEqual(t, n, 2, "%s was killed in flight once: sent at most twice", subject)
		} else {
			require.Equal(t, 1, n, "%s was not in flight at the kill: sent once", subject)
		}
		resent += n - 1
	}
	srv.stop()
	t.Logf("email kill -9 drill: %d messages; killed with %d sends in flight and %d messages received; %d sent again after the restart",
		killEmails, len(killed), before, resent)
}
