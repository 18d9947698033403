package console

import (
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/discovery"
	"github.com/graphmill/graphmill/internal/document"
	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/events"
	"github.com/graphmill/graphmill/internal/templatepack"
)

// DiscoveryEvent is the SSE event the discovery stream sends on a
// discovery job's progress or end: the list and the job page reload.
const DiscoveryEvent = "discovery"

// The rules of the discovery pages: the API's (discovery.Register).
//
//nolint:gochecknoglobals // constant rules
var (
	discoveryRule      = auth.Rule{Scope: auth.DiscoveryRead, Resource: auth.Project, ProjectRole: auth.ProjectViewer}
	discoveryWriteRule = auth.Rule{Scope: auth.DiscoveryWrite, Resource: auth.Project, ProjectRole: auth.ProjectEditor}
)

// discoveryOwner is the API's owner of a discovery job path.
func (h *Handler) discoveryOwner() *auth.Owner {
	return &auth.Owner{Param: "id", Kind: "discovery-job", Resolve: auth.InProject(h.cfg.Discovery.JobProject), NotFound: discovery.ErrNotFound}
}

func discoveryURL(project uuid.UUID) string { return projectURL(project) + "/discovery" }

func discoveryJobURL(project, id uuid.UUID) string { return discoveryURL(project) + "/" + id.String() }

func (h *Handler) discoveryList(r *http.Request, c caller) (projectView, []discovery.ListItem, pager, error) {
	p, list, pg, err := projectList(h, r, c, discoveryRule, "/discovery", h.cfg.Discovery.List)
	if err != nil {
		return projectView{}, nil, pager{}, err
	}
	return projectView{Project: p, CanWrite: h.can(r, c, discoveryWriteRule)}, list, pg, nil
}

// discoveryJobs lists the project's discovery jobs with their progress,
// live.
func (h *Handler) discoveryJobs(w http.ResponseWriter, r *http.Request, c caller) {
	pv, list, pg, err := h.discoveryList(r, c)
	h.show(w, r, discoveryJobsPage(c.sess.CSRF, pv, list, pg), err)
}

func (h *Handler) discoveryRows(w http.ResponseWriter, r *http.Request, c caller) {
	pv, list, _, err := h.discoveryList(r, c)
	h.show(w, r, discoveryRowList(pv, list), err)
}

// discoveryStart is the start form as submitted.
type discoveryStart struct {
	Selected             map[string]bool
	BatchSize            string
	MinConfidence        string
	MaxIterations        string
	IncludeRelationships bool
	Problem              string
}

// newDiscovery is the start form: a page of the project's documents to
// pick (parsed ones only) and the job's options.
func (h *Handler) newDiscovery(w http.ResponseWriter, r *http.Request, c caller) {
	h.renderNewDiscovery(w, r, c, http.StatusOK, discoveryStart{IncludeRelationships: true})
}

func (h *Handler) renderNewDiscovery(w http.ResponseWriter, r *http.Request, c caller, status int, f discoveryStart) {
	a, p, err := h.projectContext(r, c, discoveryWriteRule, "")
	if err == nil {
		_, err = h.check(r, c, documentsRule, "")
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	offset := pageOffset(r)
	docs, total, err := h.cfg.Documents.List(r.Context(), a.ProjectID, PageSize, offset)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	pv := projectView{Project: p, CanWrite: true}
	h.render(w, r, status, discoveryNewPage(c.sess.CSRF, pv, docs, f, pager{Offset: offset, Total: total, Base: discoveryURL(p.ID) + "/new"}))
}

// startDiscovery starts a job on the picked documents, as POST
// /api/discovery-jobs; a refusal shows the form again with the API's
// message.
func (h *Handler) startDiscovery(w http.ResponseWriter, r *http.Request, c caller) {
	a, p, err := h.projectContext(r, c, discoveryWriteRule, "")
	if err != nil {
		h.fail(w, r, err)
		return
	}
	f := discoveryStart{
		Selected: map[string]bool{}, BatchSize: r.PostForm.Get("batch_size"), MinConfidence: r.PostForm.Get("min_confidence"),
		MaxIterations: r.PostForm.Get("max_iterations"), IncludeRelationships: r.PostForm.Get("include_relationships") == "true",
	}
	sp := discovery.StartParams{IncludeRelationships: &f.IncludeRelationships}
	if c.p.UserID != uuid.Nil {
		sp.CreatedBy = &c.p.UserID
	}
	for i, raw := range r.PostForm["document"] {
		f.Selected[raw] = true
		id, perr := uuid.Parse(raw)
		if perr != nil {
			err = errs.Errorf(errs.Invalid, "document %d: %s is not a document id", i+1, errs.Quoted(raw))
			break
		}
		sp.DocumentIDs = append(sp.DocumentIDs, id)
	}
	if err == nil {
		sp.BatchSize, err = optInt(f.BatchSize, "batch_size")
	}
	if err == nil {
		sp.MaxIterations, err = optInt(f.MaxIterations, "max_iterations")
	}
	if err == nil && strings.TrimSpace(f.MinConfidence) != "" {
		v, perr := strconv.ParseFloat(strings.TrimSpace(f.MinConfidence), 64)
		if perr != nil {
			err = errs.New(errs.Invalid, "min_confidence must be a number between 0 and 1")
		}
		sp.MinConfidence = &v
	}
	if err == nil {
		var started discovery.Started
		started, err = h.cfg.Discovery.Start(r.Context(), a.ProjectID, sp)
		if err == nil {
			http.Redirect(w, r, discoveryJobURL(p.ID, started.JobID), http.StatusSeeOther)
			return
		}
	}
	h.formRefused(w, r, err, func(status int, problem string) {
		f.Problem = problem
		h.renderNewDiscovery(w, r, c, status, f)
	})
}

// optInt reads an optional whole number field. Errors: invalid_argument.
func optInt(raw, field string) (*int, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return nil, nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil {
		return nil, errs.Errorf(errs.Invalid, "%s must be a whole number", field)
	}
	return &n, nil
}

// discoveryJob shows a job: its progress (live until it ends), the
// proposed types and relationships, each with an include box, and the
// finalize form.
func (h *Handler) discoveryJob(w http.ResponseWriter, r *http.Request, c caller) {
	h.renderDiscoveryJob(w, r, c, http.StatusOK, finalizeForm{Mode: discovery.ModeCreate, Install: true}, false)
}

// discoveryLive is the job page's live part, which reloads on the
// stream's events until the job ends.
func (h *Handler) discoveryLive(w http.ResponseWriter, r *http.Request, c caller) {
	h.renderDiscoveryJob(w, r, c, http.StatusOK, finalizeForm{Mode: discovery.ModeCreate, Install: true}, true)
}

// finalizeForm is the finalize form as submitted.
type finalizeForm struct {
	PackName, Mode, ExistingPackID string
	Install, Reextract             bool
	// Excluded are the types and relationships unticked (by key); all
	// are included at first.
	Excluded map[string]bool
	Problem  string
	Done     *discovery.Finalized
}

func (h *Handler) renderDiscoveryJob(w http.ResponseWriter, r *http.Request, c caller, status int, f finalizeForm, fragment bool) {
	_, p, j, err := ownedResource(h, r, c, discoveryRule, h.discoveryOwner(), h.cfg.Discovery.Get)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	pv := projectView{Project: p, CanWrite: h.can(r, c, discoveryWriteRule)}
	if fragment {
		h.render(w, r, status, discoveryLivePart(c.sess.CSRF, pv, j, f))
		return
	}
	h.render(w, r, status, discoveryJobPage(c.sess.CSRF, pv, j, f))
}

// cancelDiscovery cancels a pending or running job and answers its live
// part.
func (h *Handler) cancelDiscovery(w http.ResponseWriter, r *http.Request, c caller) {
	a, p, err := h.ownedContext(r, c, discoveryWriteRule, h.discoveryOwner())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	j, err := h.cfg.Discovery.Cancel(r.Context(), a.ProjectID, a.ResourceID)
	h.show(w, r, discoveryLivePart(c.sess.CSRF, projectView{Project: p, CanWrite: true}, j, finalizeForm{Mode: discovery.ModeCreate, Install: true}), err)
}

// relKey names a proposed relationship in the form: its three names, each
// query-escaped ("|" is %7C), joined by "|", so no two proposals share one.
func relKey(rel discovery.Relationship) string {
	return url.QueryEscape(rel.SourceType) + "|" + url.QueryEscape(rel.RelationType) + "|" + url.QueryEscape(rel.TargetType)
}

// finalizeDiscovery makes a template pack of the ticked types and
// relationships, as POST /api/discovery-jobs/{id}/finalize; the page
// shows the pack made, or the API's message with the form as it was.
func (h *Handler) finalizeDiscovery(w http.ResponseWriter, r *http.Request, c caller) {
	a, _, j, err := ownedResource(h, r, c, discoveryWriteRule, h.discoveryOwner(), h.cfg.Discovery.Get)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	f := finalizeForm{
		PackName: strings.TrimSpace(r.PostForm.Get("packName")), Mode: r.PostForm.Get("mode"),
		ExistingPackID: strings.TrimSpace(r.PostForm.Get("existingPackId")),
		Install:        r.PostForm.Get("install") == "true", Reextract: r.PostForm.Get("reextract") == "true",
		Excluded: map[string]bool{},
	}
	types, rels := r.PostForm["type"], r.PostForm["relationship"]
	fp := discovery.FinalizeParams{PackName: f.PackName, Mode: f.Mode, Install: f.Install, Reextract: f.Reextract, Principal: c.p}
	if c.p.UserID != uuid.Nil {
		fp.By = &c.p.UserID
	}
	for _, t := range j.DiscoveredTypes {
		if !slices.Contains(types, t.TypeName) {
			f.Excluded["type:"+t.TypeName] = true
			continue
		}
		fp.IncludedTypes = append(fp.IncludedTypes, discovery.IncludedType{
			TypeName: t.TypeName, Description: t.Description, Properties: t.Properties, RequiredProperties: t.RequiredProperties,
			ExampleInstances: t.ExampleInstances, Frequency: t.Frequency,
		})
	}
	for _, rel := range j.DiscoveredRelationships {
		if !slices.Contains(rels, relKey(rel)) {
			f.Excluded["rel:"+relKey(rel)] = true
			continue
		}
		fp.IncludedRelationships = append(fp.IncludedRelationships, discovery.IncludedRelationship{
			SourceType: rel.SourceType, TargetType: rel.TargetType, RelationType: rel.RelationType, Description: rel.Description, Cardinality: rel.Cardinality,
		})
	}
	if f.ExistingPackID != "" {
		pack, perr := uuid.Parse(f.ExistingPackID)
		if perr != nil {
			err = errs.Errorf(errs.Invalid, "existingPackId %q is not a template pack id", f.ExistingPackID)
		}
		fp.ExistingPackID = &pack
	}
	if err == nil {
		var done discovery.Finalized
		done, err = h.cfg.Discovery.Finalize(r.Context(), a.ProjectID, a.ResourceID, fp)
		if err == nil {
			f.Done = &done
			h.renderDiscoveryJob(w, r, c, http.StatusOK, f, false)
			return
		}
	}
	h.formRefused(w, r, err, func(status int, problem string) {
		f.Problem = problem
		h.renderDiscoveryJob(w, r, c, status, f, false)
	}, templatepack.ErrNotFound, templatepack.ErrNotInstalled)
}

// discoveryEvents selects the events of project that move a discovery
// job: its progress, and its end.
func discoveryEvents(project uuid.UUID) func(e streamEvent) (string, bool) {
	return func(e streamEvent) (string, bool) {
		if e.ProjectID == nil || *e.ProjectID != project {
			return "", false
		}
		if e.Type == events.TypeDiscoveryProgress || (e.Type == events.TypeJobCompleted && discovery.IsQueue(e.Data.Queue)) {
			return DiscoveryEvent, true
		}
		return "", false
	}
}

func (h *Handler) discoveryStream(w http.ResponseWriter, r *http.Request, c caller) {
	h.stream(w, r, c, discoveryRule, discoveryEvents)
}

// discoveryJobEvents selects the events of project that move job: the
// job page's stream, which falls silent once the job has ended (so a
// page whose boxes are being ticked is not reloaded by other jobs).
func discoveryJobEvents(job uuid.UUID) func(project uuid.UUID) func(e streamEvent) (string, bool) {
	return func(project uuid.UUID) func(e streamEvent) (string, bool) {
		keep := discoveryEvents(project)
		return func(e streamEvent) (string, bool) {
			if e.Data.JobID == nil || *e.Data.JobID != job {
				return "", false
			}
			return keep(e)
		}
	}
}

// discoveryJobStream is the job page's stream: the job's own progress
// and end.
func (h *Handler) discoveryJobStream(w http.ResponseWriter, r *http.Request, c caller) {
	a, err := h.checkOwned(r, c, discoveryRule, h.discoveryOwner())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.stream(w, r, c, discoveryRule, discoveryJobEvents(a.ResourceID))
}

// pickable reports whether a document can be picked for discovery.
func pickable(d document.Document) bool { return d.Status == document.StatusParsed }

// jobEnded reports whether a discovery job will not move any more.
func jobEnded(j discovery.Job) bool {
	return j.Status == discovery.StatusCompleted || j.Status == discovery.StatusFailed || j.Status == discovery.StatusCancelled
}

// propertyNames lists a type's property names.
func propertyNames(props map[string]any) string {
	return strings.Join(slices.Sorted(maps.Keys(props)), ", ")
}
