package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode"
)

// Names the local planner looks for among the declared tools.
const (
	// ToolAskUser is the tool the local planner calls for an "ASK:" line.
	ToolAskUser = "ask_user"
	// ToolSearch is the search tool the local planner prefers; without it,
	// the first declared tool whose name contains "search".
	ToolSearch = "search"
)

// localSummaryMax bounds the values quoted from one tool result.
const localSummaryMax = 8

// Chat implements Client with a deterministic planner, so that the chat and
// agent loops run, and are tested, with no model. model must be
// LocalGenerateModel or empty. The turn is everything after the last user
// message; the planner reads that message line by line:
//
//  1. A line "ASK: <question>" plans a call of ask_user with the question
//     as its first required string parameter (else its first string
//     parameter by name, else "question").
//  2. A line "CALL: <tool> <json arguments>" plans a call of that tool with
//     those arguments (none: {}). A tool that is not declared, or arguments
//     that are not a JSON object, are not called; the answer says so.
//  3. The other lines are the user's words: when there are any and a search
//     tool is declared ("search", else the first tool whose name contains
//     "search"), the plan starts with a call of it, the words as its first
//     required string parameter (else first string parameter, else
//     "query").
//
// Each step returns the next planned call, one call per step, identified
// "call_<n>" (n counts the conversation's calls), until the turn holds as
// many calls as the plan. Then it answers from the turn's tool results:
// "From <n> tool result(s):" and a line per result, "- <tool>: <values>"
// ("- <tool> failed: ..." for an error), the values being the result's
// strings and numbers in document order (at most 8; "nothing" when none),
// then a line per call not made. With no result and no note it answers "No
// tool was called for: <words>". The answer goes to OnDelta word by word.
// Token counts are estimates (EstimateTokens). A request with the purpose
// PurposeGroundedAnswer or PurposeSummary is answered without the planner
// (see those purposes).
func (c *localClient) Chat(ctx context.Context, model string, req ChatRequest) (*ChatResult, error) {
	if model != "" && model != LocalGenerateModel {
		return nil, &Error{Kind: ErrorInvalid, Message: fmt.Sprintf("local chat: unknown model %q (the local provider chats with %s)", model, LocalGenerateModel)}
	}
	if err := checkTools(req.Tools); err != nil {
		return nil, &Error{Kind: ErrorInvalid, Message: "local chat: " + err.Error()}
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("local chat: %w", err)
	}
	start := c.now()
	user := -1
	for i, m := range req.Messages {
		if m.Role == RoleUser {
			user = i
		}
	}
	if user < 0 {
		return nil, &Error{Kind: ErrorInvalid, Message: "local chat: the request has no user message"}
	}
	switch req.Purpose {
	case PurposeGroundedAnswer, PurposeSummary:
		return c.chatText(start, req, req.Messages[user].Text)
	}
	plan, notes, words := localPlan(req.Messages[user].Text, req.Tools)
	turn := req.Messages[user+1:]
	res := &ChatResult{Model: LocalGenerateModel}
	if made := callCount(turn); made < len(plan) {
		call := plan[made]
		call.ID = fmt.Sprintf("call_%d", callCount(req.Messages)+1)
		res.ToolCalls = []ToolCall{call}
	} else {
		res.Text = localAnswer(turn, notes, words)
		if err := streamWords(req.OnDelta, res.Text); err != nil {
			return nil, err
		}
	}
	res.Usage = Usage{InputText: req.EstimatedInputTokens(), Output: EstimateTokens(res.Text)}
	for _, tc := range res.ToolCalls {
		res.Usage.Output += EstimateTokens(tc.Name + string(tc.Arguments))
	}
	res.Duration = c.now().Sub(start)
	return res, nil
}

// localPlan reads the user's message: the calls to make, notes on the
// lines that cannot be called, and the user's words.
func localPlan(text string, tools []Tool) (plan []ToolCall, notes []string, words string) {
	declared := map[string]Tool{}
	search := ""
	for _, t := range tools {
		declared[t.Name] = t
		if search == "" && strings.Contains(t.Name, ToolSearch) {
			search = t.Name
		}
	}
	if _, ok := declared[ToolSearch]; ok {
		search = ToolSearch
	}
	var rest, lines []ToolCall
	var said []string
	call := func(name string, args map[string]any) ToolCall {
		b, _ := json.Marshal(args) //nolint:errchkjson // strings only
		return ToolCall{Name: name, Arguments: b}
	}
	for line := range strings.SplitSeq(text, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "ASK:"):
			q := strings.TrimSpace(strings.TrimPrefix(line, "ASK:"))
			t, ok := declared[ToolAskUser]
			if !ok {
				notes = append(notes, ToolAskUser+": not called (not declared)")
				continue
			}
			lines = append(lines, call(ToolAskUser, map[string]any{stringParam(t.Parameters, "question"): q}))
		case strings.HasPrefix(line, "CALL:"):
			name, args := strings.TrimSpace(strings.TrimPrefix(line, "CALL:")), ""
			if i := strings.IndexFunc(name, unicode.IsSpace); i >= 0 {
				name, args = name[:i], name[i:]
			}
			if _, ok := declared[name]; !ok {
				notes = append(notes, name+": not called (not declared)")
				continue
			}
			raw := json.RawMessage(strings.TrimSpace(args))
			if len(raw) == 0 {
				raw = json.RawMessage("{}")
			}
			if _, err := argumentsMap(raw); err != nil {
				notes = append(notes, name+": not called (the arguments are not a JSON object)")
				continue
			}
			var buf bytes.Buffer
			_ = json.Compact(&buf, raw) // valid: argumentsMap decoded it
			lines = append(lines, ToolCall{Name: name, Arguments: buf.Bytes()})
		case line != "":
			said = append(said, line)
		}
	}
	words = strings.Join(strings.Fields(strings.Join(said, " ")), " ")
	if words != "" && search != "" {
		rest = append(rest, call(search, map[string]any{stringParam(declared[search].Parameters, "query"): words}))
	}
	return append(rest, lines...), notes, words
}

// stringParam is the parameter a planned call fills: the first required
// string property of schema, else its first string property by name, else
// fallback.
func stringParam(schema map[string]any, fallback string) string {
	props, _ := schema["properties"].(map[string]any)
	isString := func(name string) bool {
		p, _ := props[name].(map[string]any)
		return p != nil && p["type"] == "string"
	}
	for _, name := range SchemaRequired(schema) {
		if isString(name) {
			return name
		}
	}
	for _, name := range slices.Sorted(maps.Keys(props)) {
		if isString(name) {
			return name
		}
	}
	return fallback
}

// localAnswer writes the planner's answer from the turn's tool results.
func localAnswer(turn []Message, notes []string, words string) string {
	var results []ToolResult
	for _, m := range turn {
		results = append(results, m.ToolResults...)
	}
	if len(results) == 0 && len(notes) == 0 {
		return "No tool was called for: " + words
	}
	var b strings.Builder
	fmt.Fprintf(&b, "From %d tool result(s):", len(results))
	for _, r := range results {
		values := jsonValues(r.Content, localSummaryMax)
		summary := strings.Join(values, "; ")
		if summary == "" {
			summary = "nothing"
		}
		if r.IsError {
			fmt.Fprintf(&b, "\n- %s failed: %s", r.Name, summary)
		} else {
			fmt.Fprintf(&b, "\n- %s: %s", r.Name, summary)
		}
	}
	for _, n := range notes {
		b.WriteString("\n- " + n)
	}
	return b.String()
}

// jsonValues returns the string and number values of a JSON document in
// document order (object keys excluded), at most limit.
func jsonValues(raw json.RawMessage, limit int) []string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	type frame struct{ object, wantKey bool }
	var (
		stack []frame
		out   []string
	)
	for len(out) < limit {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		top := len(stack) - 1
		if top >= 0 && stack[top].object {
			if stack[top].wantKey {
				if _, isDelim := tok.(json.Delim); !isDelim {
					stack[top].wantKey = false
					continue // a key
				}
			} else {
				stack[top].wantKey = true // this token starts the value
			}
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{':
				stack = append(stack, frame{object: true, wantKey: true})
			case '[':
				stack = append(stack, frame{})
			default:
				stack = stack[:len(stack)-1]
			}
		case string:
			if s := strings.Join(strings.Fields(v), " "); s != "" {
				out = append(out, s)
			}
		case json.Number:
			out = append(out, v.String())
		}
	}
	return out
}

// streamWords passes s to onDelta (nil: none) a word at a time
// (wordDeltas), as a provider streams its answer.
func streamWords(onDelta func(delta string) error, s string) error {
	if onDelta == nil {
		return nil
	}
	for _, d := range wordDeltas(s) {
		if err := onDelta(d); err != nil {
			return fmt.Errorf("local chat: %w", err)
		}
	}
	return nil
}

// wordDeltas splits s into deltas of one word each, with the white space
// before it, so that they concatenate to s.
func wordDeltas(s string) []string {
	var out []string
	start, inWord := 0, false
	for i, r := range s {
		space := unicode.IsSpace(r)
		if space && inWord {
			out = append(out, s[start:i])
			start = i
		}
		inWord = !space
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}
