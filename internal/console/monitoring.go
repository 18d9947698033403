package console

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/extraction"
	"github.com/graphmill/graphmill/internal/tenancy"
)

// monitorFilter is the monitoring page's filter and order, from its
// query (the API's monitor-extraction-jobs parameters).
type monitorFilter struct {
	Status    string
	SortBy    string
	SortOrder string
}

func (f monitorFilter) values() url.Values {
	return filterQuery("status", f.Status, "sort_by", f.SortBy, "sort_order", f.SortOrder)
}

// monitoringView is the project's extraction monitoring page: the jobs
// with their calls and cost.
type monitoringView struct {
	projectView
	Jobs   []extraction.MonitorJob
	Filter monitorFilter
	Pager  pager
}

// monitoring is the project's extraction monitoring summary: the API's
// monitor-extraction-jobs, under its rule. (The statistics route's
// aggregate over every job would double the page's time at 100,000 jobs.)
func (h *Handler) monitoring(w http.ResponseWriter, r *http.Request, c caller) {
	a, p, err := h.projectContext(r, c, jobsRule, "")
	if err != nil {
		h.fail(w, r, err)
		return
	}
	q := r.URL.Query()
	f := monitorFilter{Status: q.Get("status"), SortBy: q.Get("sort_by"), SortOrder: q.Get("sort_order")}
	offset := pageOffset(r)
	list, total, err := h.cfg.Extraction.MonitorJobs(r.Context(), a.ProjectID, extraction.MonitorFilter{
		Status: f.Status, SortBy: f.SortBy, SortOrder: f.SortOrder, Limit: PageSize, Offset: offset,
	})
	h.show(w, r, monitoringPage(c.sess.CSRF, monitoringView{
		projectView: projectView{Project: p}, Jobs: list, Filter: f,
		Pager: pager{Offset: offset, Total: total, Base: projectURL(p.ID) + "/monitoring", Params: f.values()},
	}), err)
}

// callsView is an extraction job's LLM calls page.
type callsView struct {
	projectView
	Job     extraction.Job
	Metrics extraction.Metrics
	Calls   []extraction.CallLog
	Pager   pager
}

// jobCalls is an extraction job's LLM calls with their payloads, tokens,
// cost and duration: the API's monitor-extraction-job-llm-calls, under
// its rule.
func (h *Handler) jobCalls(w http.ResponseWriter, r *http.Request, c caller) {
	a, p, j, err := h.jobContext(r, c)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	offset := pageOffset(r)
	calls, total, err := h.cfg.Extraction.MonitorCalls(r.Context(), a.ProjectID, a.ResourceID, PageSize, offset)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	m, err := h.cfg.Extraction.MonitorMetrics(r.Context(), a.ProjectID, a.ResourceID)
	h.show(w, r, callsPage(c.sess.CSRF, callsView{
		projectView: projectView{Project: p}, Job: j, Metrics: m, Calls: calls,
		Pager: pager{Offset: offset, Total: total, Base: jobURL(p.ID, j.ID) + "/llm-calls"},
	}), err)
}

// jobContext authorises c to read the path's extraction job (the API's
// rule and owner) and loads its project and the job.
func (h *Handler) jobContext(r *http.Request, c caller) (auth.Access, tenancy.Project, extraction.Job, error) {
	return ownedResource(h, r, c, jobsRule, h.jobOwner(), h.cfg.Extraction.Job)
}

// payload is an LLM call's payload for reading ("" when there is none).
func payload(raw json.RawMessage) string {
	if string(raw) == "null" {
		return ""
	}
	return prettyJSON(raw)
}

// usd formats an amount of US dollars.
func usd(v float64) string {
	if v == 0 {
		return "$0"
	}
	if v < 0.01 {
		return "$" + strconv.FormatFloat(v, 'f', 6, 64)
	}
	return "$" + strconv.FormatFloat(v, 'f', 2, 64)
}

func msOf(ms *int64) string {
	if ms == nil {
		return ""
	}
	return strconv.FormatInt(*ms, 10) + " ms"
}

// share formats a share of 1 as a percentage.
func share(v float64) string { return strconv.FormatFloat(v*100, 'f', 0, 64) + "%" }

// monitorStatuses and monitorSorts are what the monitoring filter offers.
func monitorStatuses() []string {
	return []string{extraction.MonitorPending, extraction.MonitorRunning, extraction.MonitorCompleted, extraction.MonitorFailed}
}

func monitorSorts() []string {
	return []string{"created_at", "started_at", "duration_ms", "total_cost_usd"}
}
