package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/graphmill/graphmill/internal/client"
)

// agentsCommand is graphmill agents ls|run|runs|answer: the project's
// agents and the caller's runs of them.
func agentsCommand(c *cli) *cobra.Command {
	agents := &cobra.Command{
		Use:   "agents",
		Short: "The project's agents: list them, run one, list its runs, answer a run's question",
		Long: "run and answer wait (unless --wait=false) until the run ends or asks a question; a question is printed with " +
			"the command that answers it.\n\n" +
			"Exit codes: 0 the run completed or is waiting for an answer, 1 error, 2 bad command line, 3 token refused, " +
			"4 the run failed or was cancelled.",
	}
	ls := &cobra.Command{
		Use: "ls", Short: "List the project's agents", Args: noArgs,
		RunE: withSession(c.connectProject, func(s *session, _ []string) error {
			list, err := s.agents()
			if err != nil {
				return err
			}
			return c.emit(list, func() [][]string {
				rows := [][]string{{"ID", "NAME", "TOOLS", "MAX STEPS", "SCHEDULE", "DESCRIPTION"}}
				for _, a := range list {
					rows = append(rows, []string{a.Id, a.Name, dash(strings.Join(deref(a.Tools), ",")), fmt.Sprint(a.MaxSteps), dash(str(a.Schedule)), oneLine(a.Description, 60)})
				}
				return rows
			})
		}),
	}

	wait := true
	var timeout time.Duration
	run := &cobra.Command{
		Use: "run AGENT INPUT", Short: "Start a run of an agent (by id or name) with INPUT and follow it", Args: argCount(2, 2, "give the agent (id or name) and the run's input (quoted)"),
		RunE: func(_ *cobra.Command, args []string) error {
			s, id, err := c.connectAgent(args[0])
			if err != nil {
				return err
			}
			r, err := call[client.AgentRun](s.api.StartAgentRun(c.ctx, id, client.StartAgentRunJSONRequestBody{Input: args[1]})) //nolint:bodyclose // call closes it
			if err != nil {
				return err
			}
			return s.followRun(r, wait, timeout)
		},
	}
	runs := &cobra.Command{
		Use: "runs AGENT", Short: "List your runs of an agent (by id or name), newest first", Args: oneArg("agent (id or name)"),
		RunE: func(_ *cobra.Command, args []string) error {
			s, id, err := c.connectAgent(args[0])
			if err != nil {
				return err
			}
			limit := int64(100)
			list, err := call[client.ListRun](s.api.ListAgentRuns(c.ctx, id, &client.ListAgentRunsParams{Limit: &limit})) //nolint:bodyclose // call closes it
			if err != nil {
				return err
			}
			data := deref(list.Data)
			return c.emit(data, func() [][]string {
				rows := [][]string{{"RUN", "STATUS", "TRIGGER", "CREATED", "INPUT", "OUTPUT OR ERROR"}}
				for _, r := range data {
					rows = append(rows, []string{r.Id, string(r.Status), string(r.Trigger), when(&r.CreatedAt), oneLine(r.Input, 40), oneLine(str(r.Output)+str(r.Error), 60)})
				}
				return rows
			})
		},
	}
	var approve, deny bool
	answer := &cobra.Command{
		Use: "answer RUN_ID [ANSWER]", Short: "Answer a run's question (ANSWER) or approval (--approve or --deny), then follow the run",
		Args: func(_ *cobra.Command, args []string) error {
			switch {
			case len(args) == 0 || len(args) > 2:
				return usageErr("give the run id and, for a question, the answer (quoted)")
			case approve && deny:
				return usageErr("--approve or --deny, not both")
			case (approve || deny) == (len(args) == 2):
				return usageErr("answer a question with ANSWER, an approval with --approve or --deny")
			}
			return nil
		},
		RunE: withSession(c.connectProject, func(s *session, args []string) error {
			body := client.AnswerAgentRunJSONRequestBody{}
			if len(args) == 2 {
				body.Answer = &args[1]
			} else {
				body.Approve = &approve
			}
			r, err := call[client.AgentRun](s.api.AnswerAgentRun(c.ctx, args[0], body)) //nolint:bodyclose // call closes it
			if err != nil {
				return err
			}
			return s.followRun(r, wait, timeout)
		}),
	}
	answer.Flags().BoolVar(&approve, "approve", false, "approve the tool call the run waits for")
	answer.Flags().BoolVar(&deny, "deny", false, "refuse the tool call the run waits for")
	for _, cmd := range []*cobra.Command{run, answer} {
		cmd.Flags().BoolVar(&wait, "wait", true, "follow the run until it ends or asks a question")
		cmd.Flags().DurationVar(&timeout, "timeout", 30*time.Minute, "with --wait: give up after this long")
	}
	agents.AddCommand(ls, run, runs, answer)
	return agents
}

// agents lists the project's agents, a page at a time.
func (s *session) agents() ([]client.Agent, error) {
	return listAll(100, func(limit, offset *int64) (*[]client.Agent, error) {
		page, err := call[client.ListAgent](s.api.ListAgents(s.ctx, &client.ListAgentsParams{Limit: limit, Offset: offset})) //nolint:bodyclose // call closes it
		return page.Data, err
	})
}

// connectAgent is connectProject and the id of the agent ref names.
func (c *cli) connectAgent(ref string) (*session, string, error) {
	s, err := c.connectProject()
	if err != nil {
		return nil, "", err
	}
	id, err := s.agentID(ref)
	return s, id, err
}

// agentID is the id of the agent named by ref: an id as given, else the
// project's agent of that name.
func (s *session) agentID(ref string) (string, error) {
	if _, err := uuid.Parse(ref); err == nil {
		return ref, nil
	}
	list, err := s.agents()
	if err != nil {
		return "", err
	}
	for _, a := range list {
		if a.Name == ref {
			return a.Id, nil
		}
	}
	return "", fmt.Errorf("no agent named %q in the project", ref)
}

// agentUUID is agentID as a UUID (a request body's agentId).
func (s *session) agentUUID(ref string) (uuid.UUID, error) {
	id, err := s.agentID(ref)
	if err != nil {
		return uuid.Nil, err
	}
	u, err := uuid.Parse(id)
	if err != nil {
		return uuid.Nil, fmt.Errorf("agent %q: id %q is not a UUID: %w", ref, id, err)
	}
	return u, nil
}

// runWaits tells whether a run's status is one graphmill agents stops at.
func runWaits(st client.AgentRunStatus) bool {
	switch st {
	case client.AgentRunStatusCompleted, client.AgentRunStatusFailed, client.AgentRunStatusCancelled, client.AgentRunStatusWaitingForInput:
		return true
	}
	return false
}

// followRun reads the run again (woken by the event stream, and every two
// seconds) until it ends or asks, when wait, then shows it: its output, its
// question with the command answering it, or its error (exit 4).
func (s *session) followRun(r client.AgentRun, wait bool, timeout time.Duration) error {
	if wait && !runWaits(r.Status) {
		err := s.until("follow run "+r.Id, timeout, func(ctx context.Context) (bool, error) {
			var err error
			r, err = call[client.AgentRun](s.api.GetAgentRun(ctx, r.Id)) //nolint:bodyclose // call closes it
			return runWaits(r.Status), err
		})
		if err != nil {
			return err
		}
	}
	if err := s.emit(r, func() [][]string { return runLines(r) }); err != nil {
		return err
	}
	if r.Status == client.AgentRunStatusFailed || r.Status == client.AgentRunStatusCancelled {
		return withCode(exitFailed, fmt.Errorf("agent run %s %s: %s", r.Id, r.Status, str(r.Error)))
	}
	return nil
}

// runLines is a run for people: its status, then its output, its question
// or its error.
func runLines(r client.AgentRun) [][]string {
	lines := [][]string{{"run " + r.Id + ": " + string(r.Status)}}
	switch {
	case r.Output != nil:
		lines = append(lines, []string{*r.Output})
	case r.Question != nil && r.Question.Kind == client.AgentQuestionKindApproval:
		args, _ := json.Marshal(r.Question.Arguments)
		lines = append(lines,
			[]string{fmt.Sprintf("approve %s %s? %s", str(r.Question.Tool), args, r.Question.Text)},
			[]string{"answer with: graphmill agents answer " + r.Id + " --approve (or --deny)"})
	case r.Question != nil:
		lines = append(lines,
			[]string{"question: " + r.Question.Text},
			[]string{"answer with: graphmill agents answer " + r.Id + " \"ANSWER\""})
	case r.Error != nil:
		lines = append(lines, []string{"error: " + *r.Error})
	}
	return lines
}
