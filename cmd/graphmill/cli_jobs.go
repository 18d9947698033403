package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/graphmill/graphmill/internal/client"
)

// jobQueue is what graphmill jobs can do with one queue, through the
// routes the API has for it: a project's own routes (extraction,
// discovery) or the superadmin's (the other queues). A nil func is an
// action the API has no route for.
type jobQueue struct {
	name       string
	superadmin bool // the routes need the superadmin role
	// list asks for one page (from 0) of jobs of a status ("" for any),
	// newest first; the answer's data is the jobs.
	list   func(s *session, status string, page, limit int64) (*http.Response, error)
	get    func(s *session, id string) (*http.Response, error)
	cancel func(s *session, id string) (*http.Response, error)
	retry  func(s *session, id string) (*http.Response, error)
}

// superadminPage is a page number of the superadmin lists (from 1).
func superadminPage(page int64) *int64 { page++; return &page }

// optional is v's address, or nil for "".
func optional(v string) *string {
	if v == "" {
		return nil
	}
	return &v
}

// oneJob is a superadmin bulk request for one job.
func oneJob(id string) client.SuperadminBulkRequest {
	return client.SuperadminBulkRequest{Ids: &[]string{id}}
}

// jobQueues are the queues graphmill jobs knows, by the job engine's
// names (those of GET /api/metrics/jobs).
func jobQueues() []jobQueue {
	return []jobQueue{
		{
			name: "object_extraction",
			list: func(s *session, status string, page, limit int64) (*http.Response, error) {
				offset := page * limit
				return s.api.ListExtractionJobs(s.ctx, s.cfg.Project, &client.ListExtractionJobsParams{Status: optional(status), Limit: &limit, Offset: &offset})
			},
			get:    func(s *session, id string) (*http.Response, error) { return s.api.GetExtractionJob(s.ctx, id) },
			cancel: func(s *session, id string) (*http.Response, error) { return s.api.CancelExtractionJob(s.ctx, id) },
			retry:  func(s *session, id string) (*http.Response, error) { return s.api.RetryExtractionJob(s.ctx, id) },
		},
		{
			name: "schema_discovery",
			list: func(s *session, _ string, page, limit int64) (*http.Response, error) {
				offset := page * limit
				return s.api.ListDiscoveryJobs(s.ctx, &client.ListDiscoveryJobsParams{Limit: &limit, Offset: &offset})
			},
			get:    func(s *session, id string) (*http.Response, error) { return s.api.GetDiscoveryJob(s.ctx, id) },
			cancel: func(s *session, id string) (*http.Response, error) { return s.api.CancelDiscoveryJob(s.ctx, id) },
		},
		{
			name: "document_parsing", superadmin: true,
			list: func(s *session, status string, page, limit int64) (*http.Response, error) {
				return s.api.SuperadminListDocumentParsingJobs(s.ctx, &client.SuperadminListDocumentParsingJobsParams{
					Page: superadminPage(page), Limit: &limit, Status: optional(status), ProjectId: optional(s.cfg.Project),
				})
			},
			retry: func(s *session, id string) (*http.Response, error) {
				return s.api.SuperadminRetryDocumentParsingJobs(s.ctx, oneJob(id))
			},
		},
		embeddingQueue("chunk_embedding", "chunk"),
		embeddingQueue("graph_embedding", "graph"),
		{
			name: "integration_sync", superadmin: true,
			list: func(s *session, status string, page, limit int64) (*http.Response, error) {
				return s.api.SuperadminListSyncJobs(s.ctx, &client.SuperadminListSyncJobsParams{
					Page: superadminPage(page), Limit: &limit, Status: optional(status), ProjectId: optional(s.cfg.Project),
				})
			},
			cancel: func(s *session, id string) (*http.Response, error) {
				return s.api.SuperadminCancelSyncJobs(s.ctx, oneJob(id))
			},
		},
		{
			name: "email", superadmin: true,
			list: func(s *session, status string, page, limit int64) (*http.Response, error) {
				return s.api.SuperadminListEmailJobs(s.ctx, &client.SuperadminListEmailJobsParams{
					Page: superadminPage(page), Limit: &limit, Status: optional(status),
				})
			},
		},
	}
}

// embeddingQueue is one of the two embedding queues (the superadmin list's
// type graph or chunk).
func embeddingQueue(name, kind string) jobQueue {
	return jobQueue{
		name: name, superadmin: true,
		list: func(s *session, status string, page, limit int64) (*http.Response, error) {
			return s.api.SuperadminListEmbeddingJobs(s.ctx, &client.SuperadminListEmbeddingJobsParams{
				Page: superadminPage(page), Limit: &limit, Status: optional(status), ProjectId: optional(s.cfg.Project), Type: &kind,
			})
		},
	}
}

// queueNamed is the queue of that name, or a usage error listing them.
func queueNamed(name string) (jobQueue, error) {
	var names []string
	for _, q := range jobQueues() {
		if q.name == name {
			return q, nil
		}
		names = append(names, q.name)
	}
	return jobQueue{}, usageErr("unknown queue %q: one of %s", name, strings.Join(names, ", "))
}

// unsupported is the usage error for an action a queue has no route for.
func (q jobQueue) unsupported(action string, has func(jobQueue) bool) error {
	var names []string
	for _, o := range jobQueues() {
		if has(o) {
			names = append(names, o.name)
		}
	}
	return usageErr("the API cannot %s jobs of queue %s (only of %s)", action, q.name, strings.Join(names, ", "))
}

// jobItem is the fields graphmill jobs shows of a job of any queue (the
// queues' records differ; discovery's are snake_case).
type jobItem struct {
	ID              string    `json:"id"`
	Status          string    `json:"status"`
	ProjectID       string    `json:"projectId"`
	CreatedAt       time.Time `json:"createdAt"`
	CreatedAtSnake  time.Time `json:"created_at"`
	ErrorMsg        string    `json:"errorMsg"`
	ErrorMessage    string    `json:"errorMessage"`
	ErrorSnake      string    `json:"error_message"`
	DocumentID      string    `json:"documentId"`
	FileName        string    `json:"fileName"`
	ObjectName      string    `json:"objectName"`
	ToEmail         string    `json:"toEmail"`
	IntegrationName string    `json:"integrationName"`
	Progress        *struct {
		Phase string `json:"phase"`
	} `json:"progress"`
}

// subject is what the job works on, for the table.
func (j jobItem) subject() string {
	for _, v := range []string{j.FileName, j.DocumentID, j.ObjectName, j.ToEmail, j.IntegrationName} {
		if v != "" {
			return v
		}
	}
	if j.Progress != nil {
		return j.Progress.Phase
	}
	return ""
}

func (j jobItem) created() time.Time {
	if j.CreatedAt.IsZero() {
		return j.CreatedAtSnake
	}
	return j.CreatedAt
}

func (j jobItem) errorText() string { return j.ErrorMsg + j.ErrorMessage + j.ErrorSnake }

// jobEnded tells whether a status is one a job of any queue ends in.
func jobEnded(status string) bool {
	return slices.Contains([]string{"completed", "failed", "cancelled", "requires_review", "sent"}, status)
}

// decodeJobs reads the jobs of raw records.
func decodeJobs(raw []json.RawMessage) ([]jobItem, error) {
	out := make([]jobItem, len(raw))
	for i, r := range raw {
		if err := json.Unmarshal(r, &out[i]); err != nil {
			return nil, fmt.Errorf("decode job: %w", err)
		}
	}
	return out, nil
}

// jobTable is jobs as table rows.
func jobTable(queue string, raw []json.RawMessage) ([][]string, error) {
	jobs, err := decodeJobs(raw)
	if err != nil {
		return nil, err
	}
	rows := [][]string{{"ID", "QUEUE", "STATUS", "SUBJECT", "CREATED", "ERROR"}}
	for _, j := range jobs {
		created := j.created()
		rows = append(rows, []string{j.ID, queue, j.Status, dash(j.subject()), when(&created), oneLine(j.errorText(), 60)})
	}
	return rows, nil
}

// emitJobs writes jobs as the server sent them (--json) or as a table.
func (c *cli) emitJobs(queue string, raw []json.RawMessage) error {
	rows, err := jobTable(queue, raw)
	if err != nil {
		return err
	}
	return c.emit(raw, func() [][]string { return rows })
}

// listJobs reads up to most jobs of the queue (of a status, when given),
// newest first, a page at a time.
func (s *session) listJobs(q jobQueue, status string, most int64) ([]json.RawMessage, error) {
	if status != "" && q.name == "schema_discovery" {
		return nil, usageErr("the API lists %s jobs without a status filter", q.name)
	}
	return listUpTo(min(most, 100), most, func(limit, offset *int64) (*[]json.RawMessage, error) { // 100: the routes' most
		got, err := call[struct {
			Data []json.RawMessage `json:"data"`
		}](q.list(s, status, *offset / *limit, *limit)) //nolint:bodyclose // call closes it
		return &got.Data, err
	})
}

// jobsCommand is graphmill jobs: the jobs of every queue the caller may see.
func jobsCommand(c *cli) *cobra.Command {
	jobs := &cobra.Command{
		Use:   "jobs",
		Short: "Jobs of the project's queues (object_extraction, schema_discovery) and, for superadmins, of every queue: list, watch, cancel, retry",
		Long: "The queues: object_extraction (default) and schema_discovery are the project's; document_parsing, chunk_embedding, " +
			"graph_embedding, integration_sync and email are read and changed through the superadmin routes (a project, when one is " +
			"given or configured, narrows their lists).\n\n" +
			"Exit codes: 0 done, 1 error (an unknown job, a refused change), 2 bad command line or an action the queue has no route for, " +
			"3 token refused (not a superadmin, missing scope), 4 the watched job failed.",
	}
	var queue string
	jobs.PersistentFlags().StringVar(&queue, "queue", "object_extraction", "the job queue")

	// openFor connects for the queue (the project resolved for the
	// project's queues). For an action only some queues have a route for
	// (has, nil for every queue): for another queue, a usage error naming
	// those that have one, before connecting.
	openFor := func(action string, has func(jobQueue) bool) (*session, jobQueue, error) {
		q, err := queueNamed(queue)
		if err != nil {
			return nil, q, err
		}
		if has != nil && !has(q) {
			return nil, q, q.unsupported(action, has)
		}
		connect := c.connectProject
		if q.superadmin {
			connect = c.connect
		}
		s, err := connect()
		return s, q, err
	}

	var status string
	var most int64
	ls := &cobra.Command{
		Use: "ls", Short: "List a queue's jobs, newest first", Args: noArgs,
		RunE: func(*cobra.Command, []string) error {
			if most < 1 {
				return usageErr("--limit must be at least 1")
			}
			s, q, err := openFor("list", nil)
			if err != nil {
				return err
			}
			list, err := s.listJobs(q, status, most)
			if err != nil {
				return err
			}
			return c.emitJobs(q.name, list)
		},
	}
	ls.Flags().StringVar(&status, "status", "", "only jobs of this status (the queue's own: queued, running, completed, failed, cancelled, ...)")
	ls.Flags().Int64Var(&most, "limit", 200, "most jobs listed")

	var timeout time.Duration
	watch := &cobra.Command{
		Use: "watch JOB_ID", Short: "Follow a job until it ends, printing each status it reaches (exit 4 when it fails)", Args: oneArg("job id"),
		RunE: func(_ *cobra.Command, args []string) error {
			s, q, err := openFor("read one", func(o jobQueue) bool { return o.get != nil })
			if err != nil {
				return err
			}
			return s.watchJob(q, args[0], timeout)
		},
	}
	watch.Flags().DurationVar(&timeout, "timeout", time.Hour, "give up after this long")

	action := func(use, short string, do func(jobQueue) func(*session, string) (*http.Response, error)) *cobra.Command {
		return &cobra.Command{
			Use: use + " JOB_ID", Short: short, Args: oneArg("job id"),
			RunE: func(_ *cobra.Command, args []string) error {
				s, q, err := openFor(use, func(o jobQueue) bool { return do(o) != nil }) //nolint:bodyclose // a func value, not a call
				if err != nil {
					return err
				}
				return s.jobAction(q, use, args[0], do(q)) //nolint:bodyclose // a func value; jobAction closes its answers
			},
		}
	}
	jobs.AddCommand(ls, watch,
		action("cancel", "Cancel a queued or running job", func(q jobQueue) func(*session, string) (*http.Response, error) { return q.cancel }),
		action("retry", "Retry a failed job", func(q jobQueue) func(*session, string) (*http.Response, error) { return q.retry }))
	return jobs
}

// jobAction cancels or retries one job and shows it after (the job the
// route answers when the queue has a route reading one (the project's
// queues), else the bulk route's result, which must count the job).
func (s *session) jobAction(q jobQueue, action, id string, do func(*session, string) (*http.Response, error)) error {
	res, err := call[json.RawMessage](do(s, id)) //nolint:bodyclose // call closes it
	if err != nil {
		return err
	}
	if q.get == nil {
		var counts struct {
			CancelledCount *int64 `json:"cancelledCount"`
			RetriedCount   *int64 `json:"retriedCount"`
			Message        string `json:"message"`
		}
		if err := json.Unmarshal(res, &counts); err != nil {
			return fmt.Errorf("decode the %s result: %w", action, err)
		}
		n := counts.CancelledCount
		if n == nil {
			n = counts.RetriedCount
		}
		if n == nil || *n == 0 {
			return fmt.Errorf("%s %s job %s: nothing done (%s)", action, q.name, id, counts.Message)
		}
		return s.emit(res, func() [][]string { return [][]string{{counts.Message}} })
	}
	// The project's routes answer the job as it is after the change.
	rows, err := jobTable(q.name, []json.RawMessage{res})
	if err != nil {
		return err
	}
	return s.emit(res, func() [][]string { return rows })
}

// watchJob prints the job's status whenever it changes until it is
// final.
func (s *session) watchJob(q jobQueue, id string, timeout time.Duration) error {
	last := ""
	return s.until("watch job "+id, timeout, func(ctx context.Context) (bool, error) {
		raw, err := call[json.RawMessage](q.get(s.withContext(ctx), id)) //nolint:bodyclose // call closes it
		if err != nil {
			return false, err
		}
		var job jobItem
		if err := json.Unmarshal(raw, &job); err != nil {
			return false, fmt.Errorf("decode job: %w", err)
		}
		if job.Status != last {
			last = job.Status
			// One line per status reached: the job's JSON with --json.
			line := strings.Join([]string{time.Now().Format(time.TimeOnly), job.ID, job.Status, job.errorText()}, "  ")
			if s.json {
				line = string(compactJSON(raw))
			}
			if _, err := fmt.Fprintln(s.stdout, line); err != nil {
				return false, err
			}
		}
		if job.Status == "failed" {
			return false, withCode(exitFailed, fmt.Errorf("%s job %s failed: %s", q.name, id, job.errorText()))
		}
		return jobEnded(job.Status), nil
	})
}

// compactJSON is raw on one line.
func compactJSON(raw json.RawMessage) []byte {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return raw
	}
	return b.Bytes()
}

// withContext is the session with its requests made under ctx.
func (s *session) withContext(ctx context.Context) *session {
	c := *s.cli
	c.ctx = ctx
	return &session{cli: &c, cfg: s.cfg, api: s.api}
}
