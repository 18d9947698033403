package superadmin

import (
	"context"
	"net/http"
	"slices"

	"github.com/danielgtaylor/huma/v2"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/graphmill/graphmill/internal/audit"
	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/httpapi"
	"github.com/graphmill/graphmill/internal/postgres"
	"github.com/graphmill/graphmill/internal/tenancy"
)

type auditIn struct {
	PageParams
	ActorID  string `query:"actorId" doc:"Only actions of this user (00000000-0000-0000-0000-000000000000: those of the command line, graphmill admin)."`
	Action   string `query:"action" doc:"Only this action, for example extraction_jobs.cancel or user.delete."`
	FromDate string `query:"fromDate" doc:"RFC 3339; actions at or after this time."`
	ToDate   string `query:"toDate" doc:"RFC 3339; actions at or before this time."`
}

// registerAudit adds the audit log's list.
func registerAudit(api huma.API, h handlers, read auth.Rule) {
	huma.Register(api, httpapi.Op("superadmin-list-audit-events", http.MethodGet, "/api/superadmin/audit",
		"List the superadmin actions that changed something, newest first", read), h.listAuditEvents)
}

func (h handlers) listAuditEvents(ctx context.Context, in *auditIn) (*httpapi.Out[Paged[audit.Event]], error) {
	actor, err := httpapi.ParseOptionalID("actorId", in.ActorID)
	if err != nil {
		return nil, err
	}
	from, to, err := httpapi.ParseTimeRange("fromDate", in.FromDate, "toDate", in.ToDate)
	if err != nil {
		return nil, err
	}
	f := audit.Filter{ActorID: actor, Action: audit.Action(in.Action), From: from, To: to, Limit: in.Limit, Offset: in.offset()}
	list, total, err := h.audit.List(ctx, f)
	return replyPaged(list, total, in.PageParams, err)
}

// audited runs change, a superadmin action on ids, and writes its audit
// row in the same transaction: change returns how many records it
// changed; its error, or the row's, rolls both back. Bulk job actions
// call it with their domain's method that takes the caller's
// transaction.
func (h handlers) audited(ctx context.Context, action audit.Action, ids []uuid.UUID, change func(tx pgx.Tx) (int, error)) (int, error) {
	n := 0
	err := postgres.WithTx(ctx, h.svc.pool, func(tx pgx.Tx) error {
		var err error
		if n, err = change(tx); err != nil {
			return err
		}
		return h.record(action, ids, n)(ctx, tx)
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// recordCreated is the step that writes the audit row of a creation: its
// targets are the records named (the user a token is minted for) and the
// record created, all of them affected.
func (h handlers) recordCreated(action audit.Action, named ...uuid.UUID) tenancy.CreatedStep {
	return func(ctx context.Context, tx pgx.Tx, id uuid.UUID) error {
		ids := append(slices.Clone(named), id)
		return h.record(action, ids, len(ids))(ctx, tx)
	}
}

// record is the step that writes the audit row of action on ids (affected
// of them changed), by the caller of ctx's request, for a change whose
// transaction its domain runs (tenancy's deletions).
func (h handlers) record(action audit.Action, ids []uuid.UUID, affected int) func(ctx context.Context, tx pgx.Tx) error {
	return func(ctx context.Context, tx pgx.Tx) error {
		p := auth.PrincipalFrom(ctx)
		e := audit.Event{
			ActorID: p.UserID, Action: action, TargetIDs: ids,
			Requested: len(ids), Affected: affected, RequestID: httpapi.RequestID(ctx),
		}
		if p.TokenID != uuid.Nil {
			token := p.TokenID
			e.TokenID = &token
		}
		_, err := h.audit.Record(ctx, tx, e)
		return err
	}
}
