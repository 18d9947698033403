package console

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/google/uuid"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/document"
	"github.com/graphmill/graphmill/internal/events"
	"github.com/graphmill/graphmill/internal/jobqueue"
)

// DocumentsEvent is the SSE event the documents stream sends when one of
// the project's documents changed status: the table (hx-trigger
// "sse:documents") reloads its rows. A reload after the event, rather
// than a row in it, leaves no race with a reload already under way.
const DocumentsEvent = "documents"

// documentStream is the live status of a project's documents: it passes
// on, as DocumentsEvent, the events that change a document of the
// project: parsed (document.converted) or a parsing job that ended
// (job.completed, failures included).
func (h *Handler) documentStream(w http.ResponseWriter, r *http.Request, c caller) {
	h.stream(w, r, c, documentsRule, documentEvents)
}

// stream runs the API's event stream for the caller (the same visibility,
// the same revocation watch) once c is authorised for rule on the path's
// project and for the stream itself, and passes on the events that
// selector (for the project) keeps, as named SSE events.
func (h *Handler) stream(w http.ResponseWriter, r *http.Request, c caller, rule auth.Rule, selector func(uuid.UUID) func(streamEvent) (string, bool)) {
	a, err := h.check(r, c, rule, "")
	if err == nil {
		_, err = h.check(r, c, streamRule, "")
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	req := r.Clone(r.Context())
	req.Header.Set("Authorization", "Bearer "+c.sess.Token)
	req.Header.Del("Cookie")
	h.cfg.Events.ServeHTTP(&frameWriter{ResponseWriter: w, keep: selector(a.ProjectID)}, req)
}

// documentEvents selects the events of project that change a document.
func documentEvents(project uuid.UUID) func(e streamEvent) (string, bool) {
	return func(e streamEvent) (string, bool) {
		if e.ProjectID == nil || *e.ProjectID != project {
			return "", false
		}
		switch {
		case e.Type == events.TypeDocumentConverted:
			return DocumentsEvent, true
		case e.Type == events.TypeJobCompleted && document.IsParsingQueue(e.Data.Queue) && e.Data.Status != string(jobqueue.StatusCompleted):
			return DocumentsEvent, true
		}
		return "", false
	}
}

// streamEvent is what the console reads of an event of the API's stream.
type streamEvent struct {
	Type      string     `json:"type"`
	ProjectID *uuid.UUID `json:"projectId"`
	Data      struct {
		Queue  string `json:"queue"`
		Status string `json:"status"`
		// RunID and AgentID are an agent run's (agent_run.status,
		// agent.question).
		RunID   string `json:"runId"`
		AgentID string `json:"agentId"`
		// JobID is the job of job.completed and discovery.progress.
		JobID *uuid.UUID `json:"jobId"`
	} `json:"data"`
}

// frameWriter receives the API stream's frames and writes, for each event
// keep selects, a named SSE event in its place (no data the page shows);
// comments (connected, heartbeats) pass through.
type frameWriter struct {
	http.ResponseWriter
	keep func(streamEvent) (string, bool)
	buf  []byte
}

// Unwrap lets http.ResponseController reach the connection (flush,
// write deadlines).
func (fw *frameWriter) Unwrap() http.ResponseWriter { return fw.ResponseWriter }

func (fw *frameWriter) Write(p []byte) (int, error) {
	fw.buf = append(fw.buf, p...)
	for {
		i := bytes.Index(fw.buf, []byte("\n\n"))
		if i < 0 {
			return len(p), nil
		}
		frame := string(fw.buf[:i+2])
		fw.buf = fw.buf[i+2:]
		if out := fw.translate(frame); out != "" {
			if _, err := fw.ResponseWriter.Write([]byte(out)); err != nil {
				return 0, err
			}
		}
	}
}

// translate turns one SSE frame of the API's stream into the console's.
// Each event keeps its id, so that the browser's EventSource, reconnecting,
// sends it back as Last-Event-ID and the API's stream replays what the
// page missed; an event the page does not want goes as its id alone (no
// data: the browser dispatches nothing but moves its last event id on),
// so that a replay starts where the stream was, not at the page's last
// event.
func (fw *frameWriter) translate(frame string) string {
	if strings.HasPrefix(frame, ":") {
		return frame
	}
	var id string
	var e streamEvent
	decoded := false
	for line := range strings.SplitSeq(strings.TrimSuffix(frame, "\n\n"), "\n") {
		if v, ok := strings.CutPrefix(line, "id: "); ok {
			id = v
		} else if v, ok := strings.CutPrefix(line, "data: "); ok {
			decoded = json.Unmarshal([]byte(v), &e) == nil
		}
	}
	var out strings.Builder
	if id != "" {
		out.WriteString("id: " + id + "\n")
	}
	if name, ok := fw.keep(e); decoded && ok {
		out.WriteString("event: " + name + "\ndata: " + e.Type + "\n")
	}
	if out.Len() == 0 {
		return ""
	}
	out.WriteString("\n")
	return out.String()
}
