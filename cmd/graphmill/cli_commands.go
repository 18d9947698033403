package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/graphmill/graphmill/internal/client"
)

// oneArg accepts exactly one argument, named what in the usage error.
func oneArg(what string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != 1 {
			return usageErr("give one %s", what)
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
		RunE: func(_ *cobra.Command, args []string) error {
			s, err := c.connectProject()
			if err != nil {
				return err
			}
			body := client.SearchJSONRequestBody{Query: args[0], Limit: &limit}
			if mode != "" {
				m := client.SearchRequestMode(mode)
				body.Mode = &m
			}
			res, err := call[client.SearchResponse](s.api.Search(c.ctx, body)) //nolint:bodyclose // call closes it
			if err != nil {
				return err
			}
			return c.emit(res, func() [][]string {
				rows := [][]string{{"SCORE", "TARGET", "ID", "NAME", "SNIPPET"}}
				for _, h := range deref(res.Data) {
					rows = append(rows, []string{fmt.Sprintf("%.3f", h.Score), string(h.Target), h.Id, dash(str(h.Name)), oneLine(str(h.Snippet), 80)})
				}
				return rows
			})
		},
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

// graphCommand is graphmill graph get|neighbors.
func graphCommand(c *cli) *cobra.Command {
	graph := &cobra.Command{Use: "graph", Short: "Graph objects and their relationships"}
	get := &cobra.Command{
		Use: "get OBJECT_ID", Short: "Show a graph object", Args: oneArg("object id"),
		RunE: func(_ *cobra.Command, args []string) error {
			s, err := c.connectProject()
			if err != nil {
				return err
			}
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
		},
	}
	var direction, relType string
	var limit int64
	neighbors := &cobra.Command{
		Use: "neighbors OBJECT_ID", Short: "List a graph object's relationships and the objects at their other end", Args: oneArg("object id"),
		RunE: func(_ *cobra.Command, args []string) error {
			s, err := c.connectProject()
			if err != nil {
				return err
			}
			params := client.ListGraphObjectRelationshipsParams{Limit: &limit}
			if direction != "" {
				d := client.ListGraphObjectRelationshipsParamsDirection(direction)
				params.Direction = &d
			}
			if relType != "" {
				params.Type = &relType
			}
			list, err := call[client.ListRelationship](s.api.ListGraphObjectRelationships(c.ctx, args[0], &params)) //nolint:bodyclose // call closes it
			if err != nil {
				return err
			}
			return c.emit(list, func() [][]string {
				rows := [][]string{{"RELATIONSHIP", "TYPE", "DIRECTION", "OTHER"}}
				for _, r := range deref(list.Data) {
					dir, other := "out", r.TargetId
					if r.TargetId == args[0] {
						dir, other = "in", r.SourceId
					}
					rows = append(rows, []string{r.Id, r.Type, dir, other})
				}
				return rows
			})
		},
	}
	neighbors.Flags().StringVar(&direction, "direction", "", "out, in or both (the server's default when empty)")
	neighbors.Flags().StringVar(&relType, "type", "", "only relationships of this type")
	neighbors.Flags().Int64Var(&limit, "limit", 50, "most relationships")
	graph.AddCommand(get, neighbors)
	return graph
}

// eventsCommand is graphmill events tail.
func eventsCommand(c *cli) *cobra.Command {
	events := &cobra.Command{Use: "events", Short: "The server's event stream"}
	var since string
	tail := &cobra.Command{
		Use: "tail", Short: "Print the events the token may see as they happen (one JSON object per line with --json)", Args: noArgs,
		RunE: func(*cobra.Command, []string) error {
			s, err := c.connect()
			if err != nil {
				return err
			}
			ctx := c.ctx
			stream, err := s.eventStream(ctx, since)
			if err != nil {
				return err
			}
			defer stream.Close()
			// Subscribed: every event from now on is printed.
			fmt.Fprintln(c.stderr, "following the event stream (Ctrl-C ends)")
			err = readSSE(stream, func(ev sseEvent) error {
				if c.json {
					_, err := fmt.Fprintln(c.stdout, ev.Data)
					return err
				}
				var e struct {
					Type      string          `json:"type"`
					ProjectID string          `json:"projectId"`
					Data      json.RawMessage `json:"data"`
					CreatedAt time.Time       `json:"createdAt"`
				}
				if err := json.Unmarshal([]byte(ev.Data), &e); err != nil {
					return fmt.Errorf("event %s: %w", ev.ID, err)
				}
				_, err := fmt.Fprintf(c.stdout, "%s  %-8s %-28s %s\n", e.CreatedAt.Local().Format(time.DateTime), ev.ID, e.Type, e.Data)
				return err
			})
			if ctx.Err() != nil {
				return nil // interrupted: the normal end
			}
			return err
		},
	}
	tail.Flags().StringVar(&since, "since", "", "replay the stored events after this event id first")
	events.AddCommand(tail)
	return events
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
		RunE: func(*cobra.Command, []string) error {
			s, err := c.connect()
			if err != nil {
				return err
			}
			var all []client.TenancyToken
			limit := int64(200)
			for offset := int64(0); ; offset += limit {
				page, err := call[client.ListToken](s.api.ListTokens(c.ctx, &client.ListTokensParams{Limit: &limit, Offset: &offset})) //nolint:bodyclose // call closes it
				if err != nil {
					return err
				}
				all = append(all, deref(page.Data)...)
				if int64(len(deref(page.Data))) < limit {
					break
				}
			}
			return c.emit(all, func() [][]string { return rows(all) })
		},
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
		RunE: func(_ *cobra.Command, args []string) error {
			s, err := c.connect()
			if err != nil {
				return err
			}
			if _, err := call[json.RawMessage](s.api.RevokeToken(c.ctx, args[0])); err != nil { //nolint:bodyclose // call closes it
				return err
			}
			return c.emit(map[string]string{"revoked": args[0]}, func() [][]string { return [][]string{{"revoked " + args[0]}} })
		},
	}
	tokens.AddCommand(ls, create, revoke)
	return tokens
}

// chatCommand is graphmill chat: a conversation in a chat session, each
// answer streamed as it is written; or, given a question (or with --json),
// one question answered.
func chatCommand(c *cli) *cobra.Command {
	var sessionID string
	cmd := &cobra.Command{
		Use:   "chat [QUESTION]",
		Short: "Chat with the project's knowledge (one question per line; the answer is streamed; end with Ctrl-D)",
		Long: "Without a question: a conversation, one question per line, each answer streamed with its citations; Ctrl-D ends it.\n\n" +
			"With a question (or with --json, the question then read from standard input when not given): that one question; " +
			"--json prints the answer as a JSON object (content, citations, model, tokens, cost) with its sessionId.",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usageErr("give the question as one argument (quote it)")
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error {
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
			if sessionID == "" {
				title := "graphmill chat " + time.Now().Format(time.DateTime)
				if question != "" {
					title = oneLine(question, 80)
				}
				cs, err := call[client.ChatSession](s.api.CreateChatSession(c.ctx, client.CreateChatSessionJSONRequestBody{Title: &title})) //nolint:bodyclose // call closes it
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
	msg, err := call[client.ChatMessage](s.api.SendChatMessage(s.ctx, sessionID, &client.SendChatMessageParams{}, //nolint:bodyclose // call closes it
		client.SendChatMessageJSONRequestBody{Content: question}))
	if err != nil {
		return err
	}
	return s.emit(chatAnswer{SessionID: sessionID, ChatMessage: msg}, nil)
}

// chat reads questions line by line and streams each answer.
func (s *session) chat(sessionID string) error {
	in := bufio.NewScanner(s.stdin)
	in.Buffer(make([]byte, 64<<10), 1<<20)
	for {
		fmt.Fprint(s.stderr, "> ")
		if !in.Scan() {
			fmt.Fprintln(s.stderr)
			return in.Err()
		}
		q := strings.TrimSpace(in.Text())
		if q == "" {
			continue
		}
		if err := s.ask(sessionID, q); err != nil {
			if _, code := errors.AsType[*exitCodeError](err); code {
				return err
			}
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
			for i, cit := range deref(e.Message.Citations) {
				raw, _ := json.Marshal(cit)
				fmt.Fprintf(s.stdout, "  [%d] %s\n", i+1, raw)
			}
			return nil
		case "error":
			return fmt.Errorf("%s", dash(str(e.Error.Detail)))
		}
		return nil
	})
}
