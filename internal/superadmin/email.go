package superadmin

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/email"
	"github.com/graphmill/graphmill/internal/httpapi"
)

type (
	emailJobsIn struct {
		PageParams
		Status    string `query:"status" doc:"Only jobs in this status: pending, processing, sent, failed or cancelled."`
		Recipient string `query:"recipient" maxLength:"320" doc:"Only jobs to this address (exact, ignoring case)."`
		FromDate  string `query:"fromDate" doc:"Only jobs created at or after this time (RFC 3339)."`
		ToDate    string `query:"toDate" doc:"Only jobs created at or before this time (RFC 3339)."`
	}
	emailJobIn struct {
		JobID string `path:"jobID"`
	}
)

// RegisterEmail adds the superadmin email job list and preview. They work
// with email off too: the jobs that exist are listed and rendered.
func RegisterEmail(api huma.API, emails *email.Service) {
	read := auth.Rule{Scope: auth.AdminRead, Resource: auth.Superadmin}
	h := emailHandlers{emails: emails}
	huma.Register(api, httpapi.Op("superadmin-list-email-jobs", http.MethodGet, "/api/superadmin/email-jobs",
		"List the email queue's jobs", read), h.listEmailJobs)
	huma.Register(api, httpapi.Op("superadmin-preview-email-job", http.MethodGet, "/api/superadmin/email-jobs/{jobID}/preview-json",
		"Render an email job's message: subject, HTML and text parts, recipient, template", read.WithKeys("jobID")), h.previewEmailJob)
}

// emailHandlers are the handlers of the email job routes.
type emailHandlers struct {
	emails *email.Service
}

func (h emailHandlers) listEmailJobs(ctx context.Context, in *emailJobsIn) (*httpapi.Out[Paged[email.AdminEmailJob]], error) {
	from, to, err := httpapi.ParseTimeRange("fromDate", in.FromDate, "toDate", in.ToDate)
	if err != nil {
		return nil, err
	}
	f := email.AdminFilter{Status: in.Status, Recipient: in.Recipient, From: from, To: to, Limit: in.Limit, Offset: in.offset()}
	list, total, counts, err := h.emails.AdminJobs(ctx, f)
	return replyJobs(list, total, in.PageParams, counts, namedCount, err)
}

func (h emailHandlers) previewEmailJob(ctx context.Context, in *emailJobIn) (*httpapi.Out[email.Preview], error) {
	id, err := httpapi.ParseID(in.JobID, email.ErrJobNotFound)
	if err != nil {
		return nil, err
	}
	return httpapi.Reply(h.emails.Preview(ctx, id))
}
