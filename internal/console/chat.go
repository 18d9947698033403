package console

import (
	"bytes"
	"fmt"
	"net/http"
	"regexp"
	"strconv"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/graphmill/graphmill/internal/agent"
	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/chat"
	"github.com/graphmill/graphmill/internal/document"
	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/httpapi"
	"github.com/graphmill/graphmill/internal/tenancy"
)

// Events of a chat turn's stream (the console's own, read by console.js):
// the reply's text as it is written, then the stored answer as HTML, or
// the turn's error.
const (
	ChatDeltaEvent = "delta"
	ChatDoneEvent  = "done"
	ChatErrorEvent = "error"
)

// chatRule is the API's rule of the chat routes (chat.Register): a
// user's own sessions in the project.
//
//nolint:gochecknoglobals // constant rule
var chatRule = auth.Rule{Scope: auth.ChatUse, Resource: auth.Project, ProjectRole: auth.ProjectViewer}

// chatRoutes adds the chat pages.
func (h *Handler) chatRoutes(p pages) {
	p.get("/projects/{project}/chat", h.chatSessions)
	p.post("/projects/{project}/chat", h.chatCreate)
	p.get("/projects/{project}/chat/{sessionId}", h.chatSession)
	p.post("/projects/{project}/chat/{sessionId}/rename", h.chatRename)
	p.post("/projects/{project}/chat/{sessionId}/delete", h.chatDelete)
	p.post(StreamPrefix+"projects/{project}/chat/{sessionId}/messages", h.chatSend)
	p.get("/projects/{project}/documents/{id}/chunks/{chunk}", h.chunk)
}

// chatOwner is the API's owner of a chat session path.
func (h *Handler) chatOwner() *auth.Owner {
	return &auth.Owner{Param: "sessionId", Kind: "chat-session", Resolve: auth.InProject(h.cfg.Chat.SessionProject), NotFound: chat.ErrNotFound}
}

func chatURL(project uuid.UUID) string { return projectURL(project) + "/chat" }

func chatSessionURL(project, id uuid.UUID) string { return chatURL(project) + "/" + id.String() }

// chatSessions lists the caller's sessions in the project, newest first.
func (h *Handler) chatSessions(w http.ResponseWriter, r *http.Request, c caller) {
	h.renderChatSessions(w, r, c, http.StatusOK, chatNewForm{})
}

// chatTitleForm is a form's title (new chat, rename) and, when its action
// was refused, why.
type chatTitleForm struct{ Title, Problem string }

// chatNewForm is the new chat form: its title, the agent chosen (the id
// as posted; "" for a plain chat) and, when it was refused, why.
type chatNewForm struct {
	chatTitleForm
	AgentID string
}

// chatAgentsMax bounds the agents the new chat form offers (by name).
const chatAgentsMax = 500

// chatSessionsView is the sessions page: a page of the caller's sessions
// and the new chat form. A caller who may read the project's agents
// (ReadsAgents) is offered Agents (the first chatAgentsMax by name, of
// AgentsTotal) and sees the listed sessions' agents by name (Names).
type chatSessionsView struct {
	List        []chat.Session
	Pager       pager
	Form        chatNewForm
	ReadsAgents bool
	Agents      []agent.Named
	AgentsTotal int
	Names       map[uuid.UUID]string
}

// renderChatSessions answers the sessions page with status and the new
// chat form f.
func (h *Handler) renderChatSessions(w http.ResponseWriter, r *http.Request, c caller, status int, f chatNewForm) {
	a, p, err := h.projectContext(r, c, chatRule, "")
	if err != nil {
		h.fail(w, r, err)
		return
	}
	v := chatSessionsView{Form: f, ReadsAgents: h.can(r, c, agentsRule)}
	offset := pageOffset(r)
	var total int
	v.List, total, err = h.cfg.Chat.ListSessions(r.Context(), a.ProjectID, c.p.UserID, PageSize, offset)
	if err == nil && v.ReadsAgents {
		v.Agents, v.AgentsTotal, err = h.cfg.Agents.ListNames(r.Context(), a.ProjectID, chatAgentsMax)
		if err == nil {
			v.Names, err = h.sessionAgentNames(r, a.ProjectID, v.List)
		}
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	v.Pager = pager{Offset: offset, Total: total, Base: chatURL(p.ID)}
	h.render(w, r, status, chatSessionsPage(c.sess.CSRF, p, v))
}

// sessionAgentNames are the names of the sessions' agents, in one query.
func (h *Handler) sessionAgentNames(r *http.Request, project uuid.UUID, list []chat.Session) (map[uuid.UUID]string, error) {
	return namesOf(r, project, list, func(s chat.Session) *uuid.UUID { return s.AgentID }, h.cfg.Agents.Names, "the chat sessions' agents")
}

// chatCreate starts a session (form fields title and agentId, both
// optional) and opens it; the agent needs agents:read, as the API's.
func (h *Handler) chatCreate(w http.ResponseWriter, r *http.Request, c caller) {
	a, p, err := h.projectContext(r, c, chatRule, "")
	if err != nil {
		h.fail(w, r, err)
		return
	}
	f := chatNewForm{chatTitleForm: chatTitleForm{Title: r.PostFormValue("title")}, AgentID: r.PostFormValue("agentId")}
	params := chat.CreateParams{Title: f.Title}
	var sess chat.Session
	params.AgentID, err = chat.ParseAgentID(f.AgentID)
	if err == nil {
		err = chat.CheckAgentScope(c.p, params)
	}
	if err == nil {
		sess, err = h.cfg.Chat.CreateSession(r.Context(), a.ProjectID, c.p.UserID, params)
	}
	if err != nil {
		h.formRefused(w, r, err, func(status int, problem string) {
			f.Problem = problem
			h.renderChatSessions(w, r, c, status, f)
		})
		return
	}
	http.Redirect(w, r, chatSessionURL(p.ID, sess.ID), http.StatusSeeOther)
}

// chatContext authorises c for the path's session with the API's rule.
func (h *Handler) chatContext(r *http.Request, c caller) (auth.Access, tenancy.Project, error) {
	return h.ownedContext(r, c, chatRule, h.chatOwner())
}

// chatSession shows one of the caller's sessions with its latest
// messages and the form that asks the next question.
func (h *Handler) chatSession(w http.ResponseWriter, r *http.Request, c caller) {
	h.renderChatSession(w, r, c, http.StatusOK, nil, "")
}

// renderChatSession answers the session's page with status and problem,
// why its rename or delete form was refused; typed, when set, is the
// title the rename form shows (else the session's).
func (h *Handler) renderChatSession(w http.ResponseWriter, r *http.Request, c caller, status int, typed *string, problem string) {
	a, p, err := h.chatContext(r, c)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	sess, err := h.cfg.Chat.GetSession(r.Context(), a.ProjectID, c.p.UserID, a.ResourceID)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	form := chatTitleForm{Title: sess.Title, Problem: problem}
	if typed != nil {
		form.Title = *typed
	}
	ag, err := h.chatAgent(r, c, sess.Session)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.render(w, r, status, chatSessionPage(c.sess.CSRF, p, sess, ag, form))
}

// chatAgent is the agent of session s as its page names it: nil for a
// plain chat (its agent deleted too); only its id for a caller who may not
// read the project's agents.
func (h *Handler) chatAgent(r *http.Request, c caller, s chat.Session) (*agent.Agent, error) {
	if s.AgentID == nil {
		return nil, nil //nolint:nilnil // a plain chat
	}
	if !h.can(r, c, agentsRule) {
		return &agent.Agent{ID: *s.AgentID}, nil
	}
	ag, err := h.cfg.Agents.GetAgent(r.Context(), s.ProjectID, *s.AgentID)
	switch {
	case errs.CodeOf(err) == errs.NotFound:
		return nil, nil //nolint:nilnil // deleted since the session was read
	case err != nil:
		return nil, err
	}
	return &ag, nil
}

// chatRename sets the session's title (form field title).
func (h *Handler) chatRename(w http.ResponseWriter, r *http.Request, c caller) {
	a, p, err := h.chatContext(r, c)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	title := r.PostFormValue("title")
	if _, err := h.cfg.Chat.RenameSession(r.Context(), a.ProjectID, c.p.UserID, a.ResourceID, title); err != nil {
		h.formRefused(w, r, err, func(status int, problem string) {
			h.renderChatSession(w, r, c, status, &title, problem)
		})
		return
	}
	http.Redirect(w, r, chatSessionURL(p.ID, a.ResourceID), http.StatusSeeOther)
}

// chatDelete deletes the session and its messages.
func (h *Handler) chatDelete(w http.ResponseWriter, r *http.Request, c caller) {
	a, p, err := h.chatContext(r, c)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if err := h.cfg.Chat.DeleteSession(r.Context(), a.ProjectID, c.p.UserID, a.ResourceID); err != nil {
		h.formRefused(w, r, err, func(status int, problem string) {
			h.renderChatSession(w, r, c, status, nil, problem)
		})
		return
	}
	http.Redirect(w, r, chatURL(p.ID), http.StatusSeeOther)
}

// chatSend asks the form's question (field content) in the session and
// streams the reply as server-sent events that console.js reads from the
// response: ChatDeltaEvent with the text as the model writes it, then
// ChatDoneEvent with the stored answer rendered (citation links), or
// ChatErrorEvent. An error before the first delta (a turn already
// running, no model, bad input) is an ordinary answer with the message.
func (h *Handler) chatSend(w http.ResponseWriter, r *http.Request, c caller) {
	a, p, err := h.chatContext(r, c)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	s := chatStream{httpapi.NewEventStream(w, nil)}
	msg, err := h.cfg.Chat.Send(r.Context(), a.ProjectID, c.p.UserID, a.ResourceID, chat.SendParams{Content: r.PostFormValue("content"), OnDelta: s.delta})
	if err != nil {
		if !s.Started() {
			h.fail(w, r, err)
			return
		}
		_, text := statusOf(err)
		if s.Err() == nil {
			h.cfg.Logger.WarnContext(r.Context(), "console chat turn failed mid-stream", "session", a.ResourceID, "err", err)
		}
		s.Event(ChatErrorEvent, map[string]string{"message": text})
		return
	}
	var html bytes.Buffer
	if err := chatMessageView(p.ID, msg).Render(r.Context(), &html); err != nil {
		h.logFailure(r, "render chat message", err)
	}
	s.Event(ChatDoneEvent, map[string]string{"html": html.String()})
}

// chatStream writes a turn's events.
type chatStream struct{ *httpapi.EventStream }

// delta is chat.SendParams.OnDelta: a write error ends the turn.
func (s chatStream) delta(text string) error {
	s.Event(ChatDeltaEvent, map[string]string{"text": text})
	if err := s.Err(); err != nil {
		return fmt.Errorf("console chat stream: browser gone: %w", err)
	}
	return nil
}

// chatMarker is a citation marker of an answer.
var chatMarker = regexp.MustCompile(`\[(\d+)\]`)

// contentPart is a run of a message's text, or a marker citing a source.
type contentPart struct {
	Text  string
	Cites int // the marker's n; 0 for text
}

// contentParts splits an answer's content on its [n] markers; a marker
// of no citation stays text.
func contentParts(m chat.Message) []contentPart {
	cited := map[int]bool{}
	for _, c := range m.Citations {
		cited[c.Index] = true
	}
	var out []contentPart
	rest := m.Content
	for {
		loc := chatMarker.FindStringSubmatchIndex(rest)
		if loc == nil {
			break
		}
		n, err := strconv.Atoi(rest[loc[2]:loc[3]])
		if err != nil || !cited[n] {
			out = append(out, contentPart{Text: rest[:loc[1]]})
			rest = rest[loc[1]:]
			continue
		}
		if loc[0] > 0 {
			out = append(out, contentPart{Text: rest[:loc[0]]})
		}
		out = append(out, contentPart{Text: rest[loc[0]:loc[1]], Cites: n})
		rest = rest[loc[1]:]
	}
	if rest != "" {
		out = append(out, contentPart{Text: rest})
	}
	return out
}

// citationID is the id of a citation's item in a message's list.
func citationID(msg uuid.UUID, n int) string { return "cite-" + msg.String() + "-" + strconv.Itoa(n) }

// chunkURL links a citation to its chunk (chunk redirects to it on its
// document's page).
func chunkURL(project uuid.UUID, c chat.Citation) string {
	return documentURL(project, c.DocumentID) + "/chunks/" + c.ChunkID.String()
}

// chunk sends to the page of the document's chunks that holds the path's
// chunk, at the chunk (the document page's rule and owner).
func (h *Handler) chunk(w http.ResponseWriter, r *http.Request, c caller) {
	a, p, err := h.ownedContext(r, c, documentsRule, h.documentOwner())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	id, err := httpapi.ParseID(chi.URLParam(r, "chunk"), document.ErrChunkNotFound)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	n, err := h.cfg.Documents.ChunkIndex(r.Context(), a.ProjectID, a.ResourceID, id)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	page := pager{Base: documentURL(p.ID, a.ResourceID)}
	http.Redirect(w, r, page.url(n/PageSize*PageSize)+"#chunk-"+id.String(), http.StatusSeeOther)
}
