package chat

import (
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humachi"
	"github.com/google/uuid"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/httpapi"
)

// Event types of a streamed reply.
const (
	EventDelta     = "message.delta"
	EventCompleted = "message.completed"
	EventError     = "error"
)

type (
	listIn struct {
		httpapi.PageParams
	}
	idIn struct {
		SessionID string `path:"sessionId"`
	}
	messagesIn struct {
		SessionID string `path:"sessionId"`
		httpapi.PageParams
	}
	createIn struct {
		Body *struct {
			Title   string `json:"title,omitempty" maxLength:"200"`
			AgentID string `json:"agentId,omitempty" format:"uuid" doc:"An agent of the project for the session to talk to (needs the scope agents:read): its instructions are added to the chat's rules and its model answers, as the agent is at each turn."`
		}
	}
	renameIn struct {
		SessionID string `path:"sessionId"`
		Body      struct {
			Title *string `json:"title,omitempty" maxLength:"200"`
		}
	}
	sendIn struct {
		SessionID string `path:"sessionId"`
		Accept    string `header:"Accept" doc:"text/event-stream streams the reply as server-sent events."`
		Body      struct {
			Content string `json:"content" minLength:"1" maxLength:"20000"`
		}
	}
)

// Register adds the chat routes: a user's sessions in the project
// (X-Project-ID or a project-bound token), with scope chat:use and any
// project role. Another user's session answers 404, as an unknown one.
func Register(api huma.API, svc *Service) {
	rule := auth.Rule{Scope: auth.ChatUse, Resource: auth.Project, ProjectRole: auth.ProjectViewer}
	one := rule.WithOwner(&auth.Owner{Param: "sessionId", Kind: "chat-session", Resolve: auth.InProject(svc.SessionProject), NotFound: ErrNotFound})
	h := handlers{svc: svc}
	huma.Register(api, httpapi.Op("create-chat-session", http.MethodPost, "/api/chat/sessions", "Start a chat session", rule), h.create)
	huma.Register(api, httpapi.Op("list-chat-sessions", http.MethodGet, "/api/chat/sessions", "List your chat sessions in the project, newest first", rule), h.list)
	huma.Register(api, httpapi.Op("get-chat-session", http.MethodGet, "/api/chat/sessions/{sessionId}", "Get one of your chat sessions with its messages", one), h.get)
	huma.Register(api, httpapi.Op("list-chat-messages", http.MethodGet, "/api/chat/sessions/{sessionId}/messages",
		"List the messages of one of your chat sessions, oldest first", one), h.messages)
	huma.Register(api, httpapi.Op("update-chat-session", http.MethodPatch, "/api/chat/sessions/{sessionId}", "Rename one of your chat sessions", one), h.rename)
	huma.Register(api, httpapi.Op("delete-chat-session", http.MethodDelete, "/api/chat/sessions/{sessionId}", "Delete one of your chat sessions and its messages", one), h.delete)
	send := httpapi.Op("send-chat-message", http.MethodPost, "/api/chat/sessions/{sessionId}/messages",
		"Ask a question in a chat session; the grounded answer comes back whole (201) or streamed (Accept: text/event-stream)", one)
	send.DefaultStatus = http.StatusCreated
	msg := api.OpenAPI().Components.Schemas.Schema(reflect.TypeFor[Message](), true, "")
	send.Responses = map[string]*huma.Response{
		"201": {Description: "The assistant's message.", Content: map[string]*huma.MediaType{"application/json": {Schema: msg}}},
		"200": {
			Description: "With Accept: text/event-stream, the reply as server-sent events: message.delta events " +
				`(data {"type":"message.delta","delta":"..."}, concatenating to the content), then one message.completed ` +
				`(data {"type":"message.completed","message":{...}}), or an error event (data {"type":"error","error":{problem}}).`,
			Content: map[string]*huma.MediaType{"text/event-stream": {Schema: &huma.Schema{Type: huma.TypeString}}},
		},
	}
	huma.Register(api, send, h.send)
}

// handlers are the chat routes' handlers.
type handlers struct {
	svc *Service
}

func userOf(ctx context.Context) uuid.UUID {
	if p := auth.PrincipalFrom(ctx); p != nil {
		return p.UserID
	}
	return uuid.Nil
}

func (h handlers) create(ctx context.Context, in *createIn) (*httpapi.Created[Session], error) {
	var p CreateParams
	if in.Body != nil {
		p.Title = in.Body.Title
		var err error
		if p.AgentID, err = ParseAgentID(in.Body.AgentID); err != nil {
			return nil, err
		}
	}
	if err := CheckAgentScope(auth.PrincipalFrom(ctx), p); err != nil {
		return nil, err
	}
	return httpapi.ReplyCreated(h.svc.CreateSession(ctx, auth.AccessFrom(ctx).ProjectID, userOf(ctx), p))
}

func (h handlers) list(ctx context.Context, in *listIn) (*httpapi.Out[httpapi.List[Session]], error) {
	list, total, err := h.svc.ListSessions(ctx, auth.AccessFrom(ctx).ProjectID, userOf(ctx), in.Limit, in.Offset)
	return httpapi.ReplyList(list, total, in.PageParams, err)
}

func (h handlers) get(ctx context.Context, _ *idIn) (*httpapi.Out[SessionWithMessages], error) {
	a := auth.AccessFrom(ctx)
	return httpapi.Reply(h.svc.GetSession(ctx, a.ProjectID, userOf(ctx), a.ResourceID))
}

func (h handlers) messages(ctx context.Context, in *messagesIn) (*httpapi.Out[httpapi.List[Message]], error) {
	a := auth.AccessFrom(ctx)
	list, total, err := h.svc.ListMessages(ctx, a.ProjectID, userOf(ctx), a.ResourceID, in.Limit, in.Offset)
	return httpapi.ReplyList(list, total, in.PageParams, err)
}

func (h handlers) rename(ctx context.Context, in *renameIn) (*httpapi.Out[Session], error) {
	a := auth.AccessFrom(ctx)
	if in.Body.Title == nil {
		// Nothing to change: the session as it is.
		s, err := h.svc.GetSession(ctx, a.ProjectID, userOf(ctx), a.ResourceID)
		return httpapi.Reply(s.Session, err)
	}
	return httpapi.Reply(h.svc.RenameSession(ctx, a.ProjectID, userOf(ctx), a.ResourceID, *in.Body.Title))
}

func (h handlers) delete(ctx context.Context, _ *idIn) (*httpapi.NoContent, error) {
	a := auth.AccessFrom(ctx)
	return nil, h.svc.DeleteSession(ctx, a.ProjectID, userOf(ctx), a.ResourceID)
}

// wantsStream reports whether Accept asks for server-sent events:
// text/event-stream with a quality above 0 that JSON's does not exceed,
// each type's quality being that of the most specific range matching it
// (RFC 9110 12.5.1: text/event-stream, then text/*, then */*; for JSON
// application/json, application/*, */*). On a tie the reply streams
// when the stream was asked for by more than */*. A range with a
// malformed quality is left out.
func wantsStream(accept string) bool {
	sse, json := acceptQuality{specificity: -1}, acceptQuality{specificity: -1}
	for part := range strings.SplitSeq(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		q := 1.0
		if v, ok := params["q"]; ok {
			if q, err = strconv.ParseFloat(v, 64); err != nil || !(q >= 0 && q <= 1) {
				continue
			}
		}
		switch mt {
		case "text/event-stream":
			sse.match(2, q)
		case "text/*":
			sse.match(1, q)
		case "application/json":
			json.match(2, q)
		case "application/*":
			json.match(1, q)
		case "*/*":
			sse.match(0, q)
			json.match(0, q)
		}
	}
	return sse.q > 0 && (sse.q > json.q || sse.q == json.q && sse.specificity > 0)
}

// acceptQuality is a media type's quality in an Accept header: that of
// the most specific range matching it seen so far (specificity 0 for
// */*, 1 for type/*, 2 for the type itself; -1 before any), the highest
// among ranges as specific.
type acceptQuality struct {
	specificity int
	q           float64
}

// match takes a range of the given specificity and quality into a.
func (a *acceptQuality) match(specificity int, q float64) {
	switch {
	case specificity > a.specificity:
		a.specificity, a.q = specificity, q
	case specificity == a.specificity:
		a.q = max(a.q, q)
	}
}

// send answers a question: whole (201, errors as every route's), or
// streamed (200 once the first delta is ready; an error before it is an
// ordinary problem answer, one after it an error event).
func (h handlers) send(ctx context.Context, in *sendIn) (*huma.StreamResponse, error) {
	a, user := auth.AccessFrom(ctx), userOf(ctx)
	if !wantsStream(in.Accept) {
		var timing Timing
		msg, err := h.svc.Send(ctx, a.ProjectID, user, a.ResourceID, SendParams{Content: in.Body.Content, Timing: &timing})
		if err != nil {
			return nil, err
		}
		body, err := json.Marshal(msg)
		if err != nil {
			return nil, fmt.Errorf("encode message: %w", err)
		}
		return &huma.StreamResponse{Body: func(hc huma.Context) {
			hc.SetHeader("Content-Type", "application/json")
			hc.SetHeader("Server-Timing", serverTiming(timing))
			hc.SetStatus(http.StatusCreated)
			_, _ = hc.BodyWriter().Write(body)
		}}, nil
	}
	return &huma.StreamResponse{Body: func(hc huma.Context) {
		r, w := humachi.Unwrap(hc)
		s := &stream{r: r}
		s.EventStream = httpapi.NewEventStream(w, func(h http.Header) { h.Set("Server-Timing", serverTiming(s.timing)) })
		msg, err := h.svc.Send(hc.Context(), a.ProjectID, user, a.ResourceID, SendParams{Content: in.Body.Content, OnDelta: s.delta, Timing: &s.timing})
		if err != nil {
			s.fail(w, err)
			return
		}
		s.Event(EventCompleted, map[string]any{"type": EventCompleted, "message": msg})
	}}, nil
}

// serverTiming is the Server-Timing header of a turn: retrieval, its
// search and its choice of keywords, in ms.
func serverTiming(t Timing) string {
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	return fmt.Sprintf("retrieval;dur=%.3f, search;dur=%.3f, keywords;dur=%.3f", ms(t.Retrieval), ms(t.Search), ms(t.Keywords))
}

// stream writes a reply as server-sent events.
type stream struct {
	*httpapi.EventStream
	r      *http.Request
	timing Timing
}

// delta is SendParams.OnDelta: an error ends the turn.
func (s *stream) delta(d string) error {
	s.Event(EventDelta, map[string]string{"type": EventDelta, "delta": d})
	if err := s.Err(); err != nil {
		return fmt.Errorf("chat stream client gone: %w", err)
	}
	return nil
}

func (s *stream) fail(w http.ResponseWriter, err error) {
	if s.Err() != nil {
		return // the client is gone: nobody to tell
	}
	if !s.Started() {
		httpapi.WriteProblem(w, s.r, err)
		return
	}
	p := httpapi.ProblemFor(s.r.Context(), err)
	httpapi.RecordStreamFailure(s.r.Context(), p)
	s.Event(EventError, map[string]any{"type": EventError, "error": p})
}
