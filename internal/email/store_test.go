package email

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func TestEnqueue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tx := pgtest.Tx(t)
	tpl, err := NewTemplates()
	require.NoError(t, err)
	now := time.Date(2026, 11, 24, 6, 0, 0, 0, time.UTC)
	data := json.RawMessage(`{"inviterName":"Ada","projectName":"Atlas","role":"project_user","link":"https://graphmill.test/x","expiresAt":"2026-12-01"}`)

	j := Job{TemplateName: TemplateInvitation, ToEmail: "bob@example.com", ToName: "Bob", Subject: "Join Atlas", Data: data}
	require.NoError(t, Enqueue(ctx, tx, tpl, nil, &j, now))
	require.NotEqual(t, uuid.Nil, j.ID)

	var status, tmpl, to, name, subject string
	var stored json.RawMessage
	var runAt time.Time
	var project *uuid.UUID
	require.NoError(t, tx.QueryRow(ctx, `SELECT status, template_name, to_email, to_name, subject, data, run_at, project_id
		FROM email_jobs WHERE id = $1`, j.ID).Scan(&status, &tmpl, &to, &name, &subject, &stored, &runAt, &project))
	require.Equal(t, "queued", status)
	require.Equal(t, TemplateInvitation, tmpl)
	require.Equal(t, "bob@example.com", to)
	require.Equal(t, "Bob", name)
	require.Equal(t, "Join Atlas", subject)
	require.JSONEq(t, string(data), string(stored))
	require.True(t, now.Equal(runAt))
	require.Nil(t, project)

	for _, bad := range []Job{
		{TemplateName: TemplateInvitation, ToEmail: "bob@example.com", Subject: "a\r\nBcc: x@example.com", Data: data},
		{TemplateName: TemplateInvitation, ToEmail: "bob@example.com", ToName: "B\nBcc: x@example.com", Subject: "s", Data: data},
		{TemplateName: TemplateInvitation, ToEmail: "Bob <bob@example.com>", Subject: "s", Data: data},
		{TemplateName: TemplateInvitation, ToEmail: "nobody", Subject: "s", Data: data},
		{TemplateName: "nope", ToEmail: "bob@example.com", Subject: "s", Data: data},
		{TemplateName: TemplateInvitation, ToEmail: "bob@example.com", Subject: "s", Data: json.RawMessage(`{}`)},
	} {
		require.Error(t, Enqueue(ctx, tx, tpl, nil, &bad, now), "%+v", bad)
	}
	var n int
	require.NoError(t, tx.QueryRow(ctx, `SELECT count(*) FROM email_jobs`).Scan(&n))
	require.Equal(t, 1, n)
}
