package main

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/graphmill/graphmill/internal/email"
	"github.com/graphmill/graphmill/internal/tenancy"
)

// invitationMailer gives tenancy the email service (tenancy.Mailer):
// tenancy cannot import email, whose jobqueue import leads back to it.
type invitationMailer struct{ *email.Service }

// EnqueueInvitation implements tenancy.Mailer.
func (m invitationMailer) EnqueueInvitation(ctx context.Context, tx pgx.Tx, in *tenancy.InvitationEmail) error {
	return m.Enqueue(ctx, tx, &email.Job{
		ProjectID: &in.ProjectID, TemplateName: email.TemplateInvitation, ToEmail: in.To, Subject: in.Subject, Data: in.Data, Secrets: in.Secrets,
	})
}
