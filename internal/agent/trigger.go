package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/netresearch/go-cron"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/postgres"
)

// Runs without a caller: an agent's schedule (a cron expression, run by
// the scheduler leader) and the syncs of its trigger integration. Such a
// run is its agent's owner's (the user who last changed its tools,
// instructions, schedule or trigger), with the scopes of the credential
// the owner saved it with, bounded at every step by the owner's roles
// then; it starts, and goes on, only while the owner may run agents in
// the project.

// Integrations finds the project of an integration (integration.Service).
type Integrations interface {
	// IntegrationProject is the project of integration id; errs.NotFound
	// when there is none.
	IntegrationProject(ctx context.Context, id uuid.UUID) (uuid.UUID, error)
}

// Bounds of the triggers.
const (
	// ScheduleMax bounds a schedule's length.
	ScheduleMax = 200
	// ScheduleEveryMin is the shortest @every interval: the scheduler
	// looks for due agents once a minute.
	ScheduleEveryMin = time.Minute
	// ScheduleInterval is how often the scheduler looks for due agents.
	ScheduleInterval = time.Minute
	// scheduleBatch bounds the runs one scheduler run starts.
	scheduleBatch = 500
)

// cronFields are what a schedule may hold: five fields, descriptors
// (@daily, @every 1h) and a CRON_TZ= or TZ= prefix. DowOrDom gives
// classic cron's day rule (Vixie, POSIX): with both day-of-month and
// day-of-week restricted, a day matching either fires ("0 0 1 * 1": the
// 1st and every Monday); with either *, the other alone decides.
const cronFields = cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor | cron.DowOrDom

// ParseSchedule reads a schedule. Errors: invalid_argument naming the
// problem.
func ParseSchedule(expr string) (cron.Schedule, error) {
	if len(expr) > ScheduleMax {
		return nil, errs.Errorf(errs.Invalid, "schedule must be at most %d characters", ScheduleMax)
	}
	if err := checkZone(expr); err != nil {
		return nil, err
	}
	parser, err := cron.TryNewParser(cronFields)
	if err != nil {
		return nil, fmt.Errorf("schedule parser: %w", err)
	}
	sched, err := parser.Parse(expr)
	if err != nil {
		return nil, errs.Errorf(errs.Invalid, "schedule must be a cron expression (minute hour day-of-month month day-of-week, "+
			"e.g. \"0 6 * * 1-5\", or @hourly, @daily, @weekly, @monthly, @every 2h): %v", err)
	}
	if every, ok := sched.(cron.ConstantDelaySchedule); ok && every.Delay < ScheduleEveryMin {
		return nil, errs.Errorf(errs.Invalid, "schedule: @every must be at least %s", ScheduleEveryMin)
	}
	if sched.Next(time.Now()).IsZero() {
		return nil, errs.Errorf(errs.Invalid, "schedule %q never fires", expr)
	}
	return sched, nil
}

// checkZone checks the time zone prefix of a schedule (CRON_TZ=<zone> or
// TZ=<zone>, then a space and the expression) before the cron parser
// reads it (it panics on a prefix without the space): a zone of the IANA
// database, not Local (the server's, which the schedule must not depend
// on).
func checkZone(expr string) error {
	var rest string
	var ok bool
	if rest, ok = strings.CutPrefix(expr, "CRON_TZ="); !ok {
		if rest, ok = strings.CutPrefix(expr, "TZ="); !ok {
			return nil
		}
	}
	zone, spec, ok := strings.Cut(rest, " ")
	switch {
	case !ok || strings.TrimSpace(spec) == "" || zone == "":
		return errs.New(errs.Invalid, "schedule: a time zone prefix is CRON_TZ=<zone> followed by a space and the cron expression, e.g. \"CRON_TZ=Europe/Paris 0 6 * * 1-5\"")
	case zone == "Local":
		return errs.New(errs.Invalid, "schedule: CRON_TZ=Local is not accepted; name the zone (e.g. Europe/Paris or UTC)")
	}
	if _, err := time.LoadLocation(zone); err != nil {
		return errs.Errorf(errs.Invalid, "schedule: unknown time zone %q (an IANA zone such as Europe/Paris or UTC)", zone)
	}
	return nil
}

// checkTriggers checks a's schedule, and its trigger integration when
// retriggered (set anew), and sets its next scheduled run (from now) when
// rescheduled.
func (s *Service) checkTriggers(ctx context.Context, a *Agent, rescheduled, retriggered bool) error {
	if a.Schedule == "" {
		a.NextRunAt = nil
	} else {
		sched, err := ParseSchedule(a.Schedule)
		if err != nil {
			return err
		}
		if rescheduled || a.NextRunAt == nil {
			next := sched.Next(s.now()).UTC()
			a.NextRunAt = &next
		}
	}
	if a.TriggerIntegrationID == nil || !retriggered {
		return nil
	}
	bad := errs.Errorf(errs.Invalid, "triggerIntegrationId: no integration with id %s in this project", *a.TriggerIntegrationID)
	if s.cfg.Integrations == nil {
		return bad
	}
	project, err := s.cfg.Integrations.IntegrationProject(ctx, *a.TriggerIntegrationID)
	switch {
	case errs.CodeOf(err) == errs.NotFound:
		return bad
	case err != nil:
		return fmt.Errorf("find the trigger integration: %w", err)
	case project != a.ProjectID:
		return bad
	}
	return nil
}

// rights are user's rights in project as of now: their current
// memberships, scopes as far as the user's roles still give them, bound
// to project. reason says why the user may not act there (gone, or no
// longer sees the project; with mustRun, no longer holds agents:run with
// the editor role, what starting a run demands); err is for failures of
// the infrastructure.
func (s *Service) rights(ctx context.Context, user, project uuid.UUID, scopes []string, mustRun bool) (*auth.Principal, string, error) {
	cur, err := s.cfg.Principals.PrincipalOfUser(ctx, user)
	if err != nil {
		if c := errs.CodeOf(err); c == errs.Unauthenticated || c == errs.NotFound {
			return nil, "the run's user no longer exists", nil
		}
		return nil, "", err
	}
	org, err := s.cfg.Principals.ProjectOrg(ctx, project)
	if err != nil {
		if errs.CodeOf(err) == errs.NotFound {
			return nil, "the run's project no longer exists", nil
		}
		return nil, "", err
	}
	given, err := auth.ParseScopes(scopes)
	if err != nil {
		return nil, "the run's scopes are not valid: " + err.Error(), nil
	}
	p := *cur
	p.Scopes = given & auth.RoleScopes(cur)
	p.BoundProject = project
	if !p.Sees(project, org) {
		return nil, "the run's user can no longer see its project", nil
	}
	if role := p.ProjectRole(project, org); mustRun && (!p.Scopes.Has(auth.AgentsRun) || (role != auth.ProjectEditor && role != auth.ProjectAdmin)) {
		return nil, "the agent's owner (the user who last changed its tools, instructions, schedule or trigger) " +
			"may no longer run agents in this project (agents:run and the editor role)", nil
	}
	return &p, "", nil
}

// startTriggered starts, in tx, a run of a without a caller (schedule or
// integration): its owner's, with the scopes the owner saved it with.
// An agent without an owner, or whose owner may no longer run agents in
// the project, gets none (logged).
func (s *Service) startTriggered(ctx context.Context, tx pgx.Tx, a Agent, trigger, input string) error {
	if a.OwnerID == nil {
		s.cfg.Logger.InfoContext(ctx, "agent run without a caller skipped: the agent has no owner", "agent", a.ID, "trigger", trigger)
		return nil
	}
	_, reason, err := s.rights(ctx, *a.OwnerID, a.ProjectID, a.OwnerScopes, true)
	if err != nil {
		return err
	}
	if reason != "" {
		s.cfg.Logger.WarnContext(ctx, "agent run without a caller skipped", "agent", a.ID, "trigger", trigger, "reason", reason)
		return nil
	}
	_, err = s.startInTx(ctx, tx, a, *a.OwnerID, a.OwnerScopes, trigger, input)
	return err
}

// QueueScheduled starts, in tx (the scheduler's run), a run of every agent
// of a live project whose next scheduled run has come, and moves that to
// the schedule's next time after now. Times missed while no scheduler ran
// start one run, not one per time. An agent whose scheduled run has not
// ended yet (queued, running or waiting for input) gets none this time,
// nor an agent whose owner may not run it (startTriggered). It is the scheduler task agent-schedule.
func (s *Service) QueueScheduled(ctx context.Context, tx pgx.Tx) error {
	now := s.now()
	rows, _ := tx.Query(ctx, `SELECT `+agentColumns+` FROM agents a
		WHERE a.next_run_at <= $1 AND EXISTS (SELECT 1 FROM projects p WHERE p.id = a.project_id AND p.deleted_at IS NULL)
		ORDER BY a.next_run_at LIMIT $2 FOR UPDATE OF a SKIP LOCKED`, now, scheduleBatch)
	due, err := pgx.CollectRows(rows, pgx.RowToStructByName[Agent])
	if err != nil {
		return fmt.Errorf("find due agents: %w", err)
	}
	for _, a := range due {
		var next *time.Time
		if sched, err := ParseSchedule(a.Schedule); err == nil {
			n := sched.Next(now).UTC()
			next = &n
		}
		if _, err := tx.Exec(ctx, `UPDATE agents SET next_run_at = $2 WHERE id = $1`, a.ID, next); err != nil {
			return fmt.Errorf("schedule the next agent run: %w", err)
		}
		busy, err := postgres.One[bool](ctx, tx, nil, `SELECT EXISTS (SELECT 1 FROM agent_runs
			WHERE agent_id = $1 AND trigger_type = $2 AND status IN ('queued', 'running'))`, a.ID, TriggerSchedule)
		if err != nil {
			return fmt.Errorf("find the agent's scheduled runs: %w", err)
		}
		if busy {
			s.cfg.Logger.InfoContext(ctx, "scheduled agent run skipped: the last one has not ended", "agent", a.ID)
			continue
		}
		input := fmt.Sprintf("Scheduled run (schedule %q) at %s.", a.Schedule, now.Format(time.RFC3339))
		if err := s.startTriggered(ctx, tx, a, TriggerSchedule, input); err != nil {
			return err
		}
	}
	return nil
}

// IntegrationSync is a sync that ended, as its integration.sync.completed
// event reports it (integration.SyncEnded).
type IntegrationSync struct {
	ProjectID, IntegrationID, JobID uuid.UUID
	// Status is the sync's final status (completed, failed, cancelled).
	Status string
	// Data is the event's data.
	Data map[string]any
}

// StartForSync starts, in tx (the one that records the sync's end, so
// once per sync), a run of every agent of the sync's project whose trigger
// integration it is; the input reports the sync (status and counts).
// Agents whose owner may not run them get none (startTriggered).
func (s *Service) StartForSync(ctx context.Context, tx pgx.Tx, e IntegrationSync) error {
	rows, _ := tx.Query(ctx, `SELECT `+agentColumns+` FROM agents WHERE project_id = $1 AND trigger_integration_id = $2
		ORDER BY created_at, id`, e.ProjectID, e.IntegrationID)
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[Agent])
	if err != nil {
		return fmt.Errorf("find the agents a sync triggers: %w", err)
	}
	if len(list) == 0 {
		return nil
	}
	data, err := json.Marshal(e.Data)
	if err != nil {
		return fmt.Errorf("encode the sync: %w", err)
	}
	input := fmt.Sprintf("The integration %s finished a sync (status %s).\nSync: %s", e.IntegrationID, e.Status, data)
	for _, a := range list {
		if err := s.startTriggered(ctx, tx, a, TriggerIntegration, strings.TrimSpace(input)); err != nil {
			return err
		}
	}
	return nil
}
