package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"strings"
	"time"
	"unicode"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/graphmill/graphmill/internal/client"
	"github.com/graphmill/graphmill/internal/events"
)

// oneArg accepts exactly one argument, named what in the usage error.
func oneArg(what string) cobra.PositionalArgs {
	return argCount(1, 1, "give one "+what)
}

// argCount accepts from least to most arguments (most < 0: no limit);
// other counts are a usage error saying msg.
func argCount(least, most int, msg string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) < least || (most >= 0 && len(args) > most) {
			return usageErr("%s", msg)
		}
		return nil
	}
}

// noArgs refuses arguments.
func noArgs(_ *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageErr("unexpected argument %q", args[0])
	}
	return nil
}

// searchCommand is graphmill search.
func searchCommand(c *cli) *cobra.Command {
	var limit int64
	var mode string
	cmd := &cobra.Command{
		Use: "search QUERY", Short: "Search the project's documents and graph", Args: oneArg("query (quote it)"),
		RunE: withSession(c.connectProject, func(s *session, args []string) error {
			body := client.SearchJSONRequestBody{Query: args[0], Limit: &limit}
			if mode != "" {
				m := client.SearchRequestMode(mode)
				body.Mode = &m
			}
			res, err := call[client.SearchResponse](s.api.Search(c.ctx, body)) //nolint:bodyclose // call closes it
			if err != nil {
				return err
			}
			if c.json {
				return c.emit(res, nil)
			}
			// A chunk hit is named by its document's file name: the
			// page's documents read in one request.
			var docs []string
			for _, h := range deref(res.Data) {
				if h.Target == client.SearchHitTargetChunk {
					docs = append(docs, str(h.DocumentId))
				}
			}
			names, err := s.documentNames(docs)
			if err != nil {
				return err
			}
			bold := isTerminal(c.stdout)
			return c.emit(res, func() [][]string {
				rows := [][]string{{"SCORE", "TARGET", "ID", "NAME", "SNIPPET"}}
				for _, h := range deref(res.Data) {
					name := str(h.Name)
					if h.Target == client.SearchHitTargetChunk {
						name = cmp.Or(names[str(h.DocumentId)], str(h.DocumentId))
					}
					rows = append(rows, []string{fmt.Sprintf("%.3f", h.Score), string(h.Target), h.Id, dash(name), snippetText(str(h.Snippet), 80, bold)})
				}
				return rows
			})
		}),
	}
	cmd.Flags().Int64Var(&limit, "limit", 10, "most hits")
	cmd.Flags().StringVar(&mode, "mode", "", "keyword, vector or hybrid (the server's default when empty)")
	return cmd
}

// oneLine is s on one line, cut to n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// Terminal bold on and off, around a snippet's matches.
const (
	boldOn  = "\x1b[1m"
	boldOff = "\x1b[22m"
)

// snippetText is a search snippet (HTML: escaped text with <b>...</b>
// around the keyword matches, internal/search) for a terminal: the text
// unescaped, with no control characters (a document's text must not drive
// the terminal), on one line and cut to n runes; the matches in bold when
// bold (at a terminal), else unmarked.
func snippetText(snippet string, n int, bold bool) string {
	// The snippet's characters, each marked when in a match, whitespace
	// and control characters as one space between words.
	type char struct {
		r     rune
		match bool
	}
	var chars []char
	for match := false; snippet != ""; match = !match {
		tag := "<b>"
		if match {
			tag = "</b>"
		}
		var text string
		text, snippet, _ = strings.Cut(snippet, tag)
		for _, r := range html.UnescapeString(text) {
			if unicode.IsSpace(r) || unicode.IsControl(r) {
				if len(chars) > 0 && chars[len(chars)-1].r != ' ' {
					chars = append(chars, char{' ', match})
				}
				continue
			}
			chars = append(chars, char{r, match})
		}
	}
	if len(chars) > 0 && chars[len(chars)-1].r == ' ' {
		chars = chars[:len(chars)-1]
	}
	if len(chars) > n {
		chars = append(chars[:n-1], char{'…', false})
	}
	var b strings.Builder
	in := false
	for _, c := range chars {
		if bold && c.match != in {
			in = c.match
			if in {
				b.WriteString(boldOn)
			} else {
				b.WriteString(boldOff)
			}
		}
		b.WriteRune(c.r)
	}
	if in {
		b.WriteString(boldOff)
	}
	return b.String()
}

// graphCommand is graphmill graph get|neighbors.
func graphCommand(c *cli) *cobra.Command {
	graph := &cobra.Command{Use: "graph", Short: "Graph objects and their relationships"}
	get := &cobra.Command{
		Use: "get OBJECT_ID", Short: "Show a graph object", Args: oneArg("object id"),
		RunE: withSession(c.connectProject, func(s *session, args []string) error {
			o, err := call[client.GraphObject](s.api.GetGraphObject(c.ctx, args[0])) //nolint:bodyclose // call closes it
			if err != nil {
				return err
			}
			return c.emit(o, func() [][]string {
				props, _ := json.Marshal(o.Properties)
				return [][]string{
					{"ID", o.Id},
					{"TYPE", o.Type},
					{"KEY", o.Key},
					{"NAME", o.Name},
					{"STATUS", string(o.Status)},
					{"DESCRIPTION", dash(str(o.Description))},
					{"LABELS", dash(strings.Join(deref(o.Labels), ","))},
					{"PROPERTIES", string(props)},
					{"UPDATED", when(&o.UpdatedAt)},
				}
			})
		}),
	}
	var direction, relType string
	var limit int64
	neighbors := &cobra.Command{
		Use: "neighbors OBJECT_ID", Short: "List a graph object's relationships and the objects at their other end", Args: oneArg("object id"),
		RunE: withSession(c.connectProject, func(s *session, args []string) error {
			params := client.ListGraphObjectRelationshipsParams{Limit: &limit}
			if direction != "" {
				d, ok := neighborDirection(direction)
				if !ok {
					return usageErr("--direction must be out, in or both, not %q", direction)
				}
				params.Direction = &d
			}
			if relType != "" {
				params.Type = &relType
			}
			list, err := call[client.ListRelationship](s.api.ListGraphObjectRelationships(c.ctx, args[0], &params)) //nolint:bodyclose // call closes it
			if err != nil {
				return err
			}
			if c.json {
				return c.emit(list, nil)
			}
			// The objects at the other ends, for their type and name: all
			// read in one request.
			type end struct{ dir, other string }
			ends := make([]end, len(deref(list.Data)))
			ids := make([]string, len(ends))
			// The server spells ids in canonical form; the argument may be
			// spelt otherwise (upper case, urn:uuid:).
			self := args[0]
			if u, err := uuid.Parse(self); err == nil {
				self = u.String()
			}
			for i, r := range deref(list.Data) {
				ends[i] = end{"out", r.TargetId}
				if r.TargetId == self {
					ends[i] = end{"in", r.SourceId}
				}
				ids[i] = ends[i].other
			}
			others, err := s.objectsByID(ids)
			if err != nil {
				return err
			}
			return c.emit(list, func() [][]string {
				rows := [][]string{{"RELATIONSHIP", "TYPE", "DIRECTION", "OTHER", "OTHER TYPE", "OTHER NAME"}}
				for i, r := range deref(list.Data) {
					o := others[ends[i].other]
					rows = append(rows, []string{r.Id, r.Type, ends[i].dir, ends[i].other, dash(o.Type), dash(o.Name)})
				}
				return rows
			})
		}),
	}
	neighbors.Flags().StringVar(&direction, "direction", "", "out, in or both (outgoing and incoming too; the server's default, both, when empty)")
	neighbors.Flags().StringVar(&relType, "type", "", "only relationships of this type")
	neighbors.Flags().Int64Var(&limit, "limit", 50, "most relationships")
	graph.AddCommand(get, neighbors)
	return graph
}

// neighborDirection is the API's direction for graph neighbors
// --direction's value: the table's out and in, or the API's words.
func neighborDirection(v string) (client.ListGraphObjectRelationshipsParamsDirection, bool) {
	switch v {
	case "out", "outgoing":
		return client.ListGraphObjectRelationshipsParamsDirectionOutgoing, true
	case "in", "incoming":
		return client.ListGraphObjectRelationshipsParamsDirectionIncoming, true
	case "both":
		return client.ListGraphObjectRelationshipsParamsDirectionBoth, true
	}
	return "", false
}

// eventsCommand is graphmill events tail.
func eventsCommand(c *cli) *cobra.Command {
	events := &cobra.Command{Use: "events", Short: "The server's event stream"}
	var since string
	tail := &cobra.Command{
		Use: "tail", Short: "Print the events the token may see as they happen (one JSON object per line with --json)", Args: noArgs,
		RunE: withSession(c.connect, func(s *session, _ []string) error {
			return s.tail(since)
		}),
	}
	tail.Flags().StringVar(&since, "since", "", "replay the stored events after this event id first (0: all of them)")
	events.AddCommand(tail)
	return events
}

// tailRetries is how many times in a row events tail opens the stream
// again after the server ended it without an event in between.
const tailRetries = 3

// tail prints the event stream's events from the one after since. When
// the server ends the stream, it is opened again from the last event
// printed: a token refused then ends the tail with exitAuth, a server
// that is gone or keeps ending the stream with an error. Only the
// command's own end (Ctrl-C) ends it without one.
func (s *session) tail(since string) error {
	ctx := s.ctx
	stream, err := s.eventStream(ctx, since)
	if err != nil {
		return err
	}
	// Subscribed: every event from now on is printed.
	fmt.Fprintln(s.stderr, "following the event stream (Ctrl-C ends)")
	for ends := 0; ; {
		seen := false
		err = readSSE(stream, func(ev sseEvent) error {
			seen = true
			if ev.ID != "" {
				since = ev.ID
			}
			return s.printEvent(ev)
		})
		stream.Close()
		if ctx.Err() != nil {
			return nil // interrupted: the normal end
		}
		if err != nil {
			return err
		}
		if seen {
			ends = 0
		}
		if ends++; ends > tailRetries {
			return fmt.Errorf("the server ended the event stream %d times without an event", ends)
		}
		fmt.Fprintln(s.stderr, "the server ended the event stream: opening it again")
		if stream, err = s.eventStream(ctx, since); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("the server ended the event stream: %w", err)
		}
	}
}

// printEvent writes one event: its data (--json) or a line for people.
func (s *session) printEvent(ev sseEvent) error {
	if s.json {
		_, err := fmt.Fprintln(s.stdout, ev.Data)
		return err
	}
	var e events.Event
	if err := json.Unmarshal([]byte(ev.Data), &e); err != nil {
		return fmt.Errorf("event %s: %w", ev.ID, err)
	}
	_, err := fmt.Fprintf(s.stdout, "%s  %-8s %-28s %s\n", e.CreatedAt.Local().Format(time.DateTime), ev.ID, e.Type, e.Data)
	return err
}

// tokensCommand is graphmill tokens ls|create|revoke: the caller's own
// API tokens.
func tokensCommand(c *cli) *cobra.Command {
	tokens := &cobra.Command{Use: "tokens", Short: "Your API tokens: list, create, revoke"}
	rows := func(list []client.TenancyToken) [][]string {
		out := [][]string{{"ID", "NAME", "PREFIX", "PROJECT", "SCOPES", "EXPIRES", "CREATED"}}
		for _, t := range list {
			out = append(out, []string{t.Id, t.Name, t.Prefix, dash(str(t.ProjectId)), strings.Join(deref(t.Scopes), ","), when(t.ExpiresAt), when(&t.CreatedAt)})
		}
		return out
	}
	ls := &cobra.Command{
		Use: "ls", Short: "List your API tokens", Args: noArgs,
		RunE: withSession(c.connect, func(s *session, _ []string) error {
			all, err := listAll(200, func(limit, offset *int64) (*[]client.TenancyToken, error) {
				page, err := call[client.ListToken](s.api.ListTokens(c.ctx, &client.ListTokensParams{Limit: limit, Offset: offset})) //nolint:bodyclose // call closes it
				return page.Data, err
			})
			if err != nil {
				return err
			}
			return c.emit(all, func() [][]string { return rows(all) })
		}),
	}
	var name, scopes string
	var expires time.Duration
	create := &cobra.Command{
		Use: "create", Short: "Create an API token (printed once)", Args: noArgs,
		RunE: func(*cobra.Command, []string) error {
			if name == "" || scopes == "" {
				return usageErr("tokens create needs --name and --scopes")
			}
			s, err := c.connect()
			if err != nil {
				return err
			}
			list := strings.Split(scopes, ",")
			body := client.CreateTokenJSONRequestBody{Name: name, Scopes: &list}
			if expires > 0 {
				at := time.Now().Add(expires)
				body.ExpiresAt = &at
			}
			t, err := call[client.TenancyToken](s.api.CreateToken(c.ctx, body)) //nolint:bodyclose // call closes it
			if err != nil {
				return err
			}
			return c.emit(t, func() [][]string {
				return append(rows([]client.TenancyToken{t}), []string{"TOKEN (shown once): " + str(t.Token)})
			})
		},
	}
	create.Flags().StringVar(&name, "name", "", "the token's name")
	create.Flags().StringVar(&scopes, "scopes", "", "comma-separated scopes, e.g. documents:read,search:read")
	create.Flags().DurationVar(&expires, "expires", 0, "lifetime (no expiry when 0)")
	revoke := &cobra.Command{
		Use: "revoke TOKEN_ID", Short: "Revoke one of your API tokens", Args: oneArg("token id"),
		RunE: withSession(c.connect, func(s *session, args []string) error {
			if _, err := call[json.RawMessage](s.api.RevokeToken(c.ctx, args[0])); err != nil { //nolint:bodyclose // call closes it
				return err
			}
			return c.emit(map[string]string{"revoked": args[0]}, func() [][]string { return [][]string{{"revoked " + args[0]}} })
		}),
	}
	tokens.AddCommand(ls, create, revoke)
	return tokens
}

// chatCommand is graphmill chat: a conversation in a chat session, each
// answer streamed as it is written; or, given a question (or with --json),
// one question answered.
func chatCommand(c *cli) *cobra.Command {
	var sessionID, agentRef string
	cmd := &cobra.Command{
		Use:   "chat [QUESTION]",
		Short: "Chat with the project's knowledge (one question per line; the answer is streamed; end with Ctrl-D)",
		Long: "Without a question: a conversation, one question per line, each answer streamed with its citations; Ctrl-D ends it.\n\n" +
			"With a question (or with --json, the question then read from standard input when not given): that one question; " +
			"--json prints the answer as a JSON object (content, citations, model, tokens, cost) with its sessionId.\n\n" +
			"--agent starts the session with one of the project's agents (by id or name; needs the scope agents:read): " +
			"its instructions and model answer, as the agent is at each turn.",
		Args: argCount(0, 1, "give the question as one argument (quote it)"),
		RunE: func(_ *cobra.Command, args []string) error {
			if agentRef != "" && sessionID != "" {
				return usageErr("--agent starts a new session: leave out --session (a session keeps its agent)")
			}
			question := strings.Join(args, "")
			if c.json && question == "" {
				raw, err := io.ReadAll(c.stdin)
				if err != nil {
					return fmt.Errorf("read the question: %w", err)
				}
				question = string(raw)
			}
			question = strings.TrimSpace(question)
			if (c.json || len(args) > 0) && question == "" {
				return usageErr("no question: give it as an argument or on standard input")
			}
			s, err := c.connectProject()
			if err != nil {
				return err
			}
			if sessionID != "" {
				// A session that cannot be continued fails before any question.
				if _, err := call[client.ChatSession](s.api.GetChatSession(c.ctx, sessionID)); err != nil { //nolint:bodyclose // call closes it
					return err
				}
			} else {
				title := "graphmill chat " + time.Now().Format(time.DateTime)
				if question != "" {
					title = oneLine(question, 80)
				}
				body := client.CreateChatSessionJSONRequestBody{Title: &title}
				if agentRef != "" {
					id, err := s.agentUUID(agentRef)
					if err != nil {
						return err
					}
					body.AgentId = &id
				}
				cs, err := call[client.ChatSession](s.api.CreateChatSession(c.ctx, body)) //nolint:bodyclose // call closes it
				if err != nil {
					return err
				}
				sessionID = cs.Id
			}
			switch {
			case c.json:
				return s.answer(sessionID, question)
			case question != "":
				return s.ask(sessionID, question)
			}
			fmt.Fprintf(c.stderr, "chat session %s (Ctrl-D ends)\n", sessionID)
			return s.chat(sessionID)
		},
	}
	cmd.Flags().StringVar(&sessionID, "session", "", "continue this chat session (a new one when empty)")
	cmd.Flags().StringVar(&agentRef, "agent", "", "start the new session with this agent of the project (id or name)")
	return cmd
}

// chatAnswer is graphmill chat --json's output: the assistant's message
// and the session to continue with --session.
type chatAnswer struct {
	SessionID string `json:"sessionId"`
	client.ChatMessage
}

// answer sends one question and prints the whole answer as JSON.
func (s *session) answer(sessionID, question string) error {
	// As long as the model takes: no request timeout.
	msg, err := call[client.ChatMessage](s.api.SendChatMessage(withLimit(s.ctx, limitNone), sessionID, &client.SendChatMessageParams{}, //nolint:bodyclose // call closes it
		client.SendChatMessageJSONRequestBody{Content: question}))
	if err != nil {
		return err
	}
	return s.emit(chatAnswer{SessionID: sessionID, ChatMessage: msg}, nil)
}

// chat reads questions line by line and streams each answer. A question
// that fails is reported and the conversation goes on; at the end of the
// input, any failed question makes the command fail (a refused token ends
// it at once).
func (s *session) chat(sessionID string) error {
	in := bufio.NewScanner(s.stdin)
	in.Buffer(make([]byte, 64<<10), 1<<20)
	asked, failed := 0, 0
	for {
		fmt.Fprint(s.stderr, "> ")
		if !in.Scan() {
			fmt.Fprintln(s.stderr)
			if err := in.Err(); err != nil {
				return fmt.Errorf("read the questions: %w", err)
			}
			if failed > 0 {
				return fmt.Errorf("%d of %d question(s) failed", failed, asked)
			}
			return nil
		}
		q := strings.TrimSpace(in.Text())
		if q == "" {
			continue
		}
		asked++
		if err := s.ask(sessionID, q); err != nil {
			if _, code := errors.AsType[*exitCodeError](err); code {
				return err
			}
			failed++
			fmt.Fprintln(s.stderr, "error:", err)
		}
	}
}

// ask sends one question and writes the answer's deltas as they come,
// then its citations.
func (s *session) ask(sessionID, question string) error {
	accept := "text/event-stream"
	res, err := s.api.SendChatMessage(s.ctx, sessionID, &client.SendChatMessageParams{Accept: &accept}, client.SendChatMessageJSONRequestBody{Content: question})
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode/100 != 2 {
		body, _ := io.ReadAll(res.Body)
		return problemError(res, body)
	}
	return readSSE(res.Body, func(ev sseEvent) error {
		var e struct {
			Delta   string             `json:"delta"`
			Message client.ChatMessage `json:"message"`
			Error   client.Problem     `json:"error"`
		}
		if err := json.Unmarshal([]byte(ev.Data), &e); err != nil {
			return fmt.Errorf("chat event %s: %w", ev.Name, err)
		}
		switch ev.Name {
		case "message.delta":
			_, err := fmt.Fprint(s.stdout, e.Delta)
			return err
		case "message.completed":
			fmt.Fprintln(s.stdout)
			// Each citation as its marker, document and quote (on one
			// line, without control characters: a document's text must
			// not drive the terminal); --json gives them whole.
			for _, cit := range deref(e.Message.Citations) {
				fmt.Fprintf(s.stdout, "  [%d] %s: %s\n", cit.Index, snippetText(html.EscapeString(cit.DocumentName), 80, false),
					snippetText(html.EscapeString(cit.Quote), 160, false))
			}
			return nil
		case "error":
			return fmt.Errorf("%s", dash(str(e.Error.Detail)))
		}
		return nil
	})
}
