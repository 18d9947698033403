package main

import (
	"cmp"
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

// jobItem decodes the fields graphmill jobs shows of a job of any queue:
// the queues' records spell them differently (discovery's are
// snake_case, extraction's error is errorMsg, the superadmin lists'
// errorMessage). Only jobRecord, spelled one way, is printed.
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

// errorText is the job's error, whichever its queue's spelling.
func (j jobItem) errorText() string { return cmp.Or(j.ErrorMsg, j.ErrorMessage, j.ErrorSnake) }

// jobRecord is a job of any queue as graphmill jobs prints it, in the
// table and with --json: the fields every queue's jobs have, spelled the
// same whatever the queue (as ingest spells documentId, status and
// error), and the queue route's own record whole in record.
type jobRecord struct {
	ID         string `json:"id"`
	Queue      string `json:"queue"`
	Status     string `json:"status"`
	ProjectID  string `json:"projectId,omitempty"`
	DocumentID string `json:"documentId,omitempty"`
	// FileName is the document's file name: the record's, else read from
	// the project's documents (extraction jobs name only the document).
	FileName string `json:"fileName,omitempty"`
	// Subject is what the job works on: the file name (the document id
	// when it cannot be read), object name, recipient, integration, or
	// a discovery job's phase.
	Subject   string          `json:"subject,omitempty"`
	Error     string          `json:"error,omitempty"`
	CreatedAt time.Time       `json:"createdAt"`
	Record    json.RawMessage `json:"record"`
}

// jobEnded tells whether a status is one a job of any queue ends in.
func jobEnded(status string) bool {
	return slices.Contains([]string{"completed", "failed", "cancelled", "requires_review", "sent"}, status)
}

// jobRecords decodes the jobs of queue q's raw records and names their
// documents: the file names the records lack are read in one request
// (names caches them across calls; a refused token leaves the ids).
func (s *session) jobRecords(q jobQueue, raw []json.RawMessage, names map[string]string) ([]jobRecord, error) {
	items := make([]jobItem, len(raw))
	var unnamed []string
	for i, r := range raw {
		if err := json.Unmarshal(r, &items[i]); err != nil {
			return nil, fmt.Errorf("decode job: %w", err)
		}
		// The documents are read in the session's project (a superadmin's
		// lists may span projects; their records name the file).
		if j := items[i]; j.DocumentID != "" && j.FileName == "" && s.cfg.Project != "" {
			if _, known := names[j.DocumentID]; !known {
				unnamed = append(unnamed, j.DocumentID)
			}
		}
	}
	if len(unnamed) > 0 {
		read, err := s.documentNames(unnamed)
		if err != nil {
			return nil, err
		}
		for _, id := range unnamed {
			names[id] = read[id] // "" for a document not read: not asked again
		}
	}
	out := make([]jobRecord, 0, len(items))
	for i, r := range raw {
		j := items[i]
		rec := jobRecord{
			ID: j.ID, Queue: q.name, Status: j.Status, ProjectID: j.ProjectID, DocumentID: j.DocumentID,
			FileName: cmp.Or(j.FileName, names[j.DocumentID]), Error: j.errorText(),
			CreatedAt: cmp.Or(j.CreatedAt, j.CreatedAtSnake), Record: r,
		}
		if rec.ProjectID == "" && !q.superadmin {
			rec.ProjectID = s.cfg.Project // the project's queues: discovery's records do not name it
		}
		rec.Subject = cmp.Or(rec.FileName, j.DocumentID, j.ObjectName, j.ToEmail, j.IntegrationName)
		if rec.Subject == "" && j.Progress != nil {
			rec.Subject = j.Progress.Phase
		}
		out = append(out, rec)
	}
	return out, nil
}

// jobTable is jobs as table rows.
func jobTable(jobs []jobRecord) [][]string {
	rows := [][]string{{"ID", "QUEUE", "STATUS", "SUBJECT", "CREATED", "ERROR"}}
	for _, j := range jobs {
		rows = append(rows, []string{j.ID, j.Queue, j.Status, dash(j.Subject), when(&j.CreatedAt), oneLine(j.Error, 60)})
	}
	return rows
}

// emitJobs writes jobs as records (--json) or as a table.
func (s *session) emitJobs(q jobQueue, raw []json.RawMessage) error {
	jobs, err := s.jobRecords(q, raw, map[string]string{})
	if err != nil {
		return err
	}
	return s.emit(jobs, func() [][]string { return jobTable(jobs) })
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
			return s.emitJobs(q, list)
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
	jobs, err := s.jobRecords(q, []json.RawMessage{res}, map[string]string{})
	if err != nil {
		return err
	}
	return s.emit(jobs[0], func() [][]string { return jobTable(jobs) })
}

// watchJob prints the job's status whenever it changes until it is
// final.
func (s *session) watchJob(q jobQueue, id string, timeout time.Duration) error {
	last, names := "", map[string]string{}
	return s.until("watch job "+id, timeout, func(ctx context.Context) (bool, error) {
		in := s.withContext(ctx)
		raw, err := call[json.RawMessage](q.get(in, id)) //nolint:bodyclose // call closes it
		if err != nil {
			return false, err
		}
		var job jobItem
		if err := json.Unmarshal(raw, &job); err != nil {
			return false, fmt.Errorf("decode job: %w", err)
		}
		if job.Status != last {
			last = job.Status
			// One line per status reached: the job's record as JSON with
			// --json (its document named once).
			line := strings.Join([]string{time.Now().Format(time.TimeOnly), job.ID, job.Status, job.errorText()}, "  ")
			if s.json {
				rec, err := in.jobRecords(q, []json.RawMessage{raw}, names)
				if err != nil {
					return false, err
				}
				b, err := json.Marshal(rec[0])
				if err != nil {
					return false, fmt.Errorf("encode job: %w", err)
				}
				line = string(b)
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

// withContext is the session with its requests made under ctx.
func (s *session) withContext(ctx context.Context) *session {
	c := *s.cli
	c.ctx = ctx
	return &session{cli: &c, cfg: s.cfg, api: s.api}
}
