package discovery

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/events"
	"github.com/graphmill/graphmill/internal/jobqueue"
	"github.com/graphmill/graphmill/internal/llm"
	"github.com/graphmill/graphmill/internal/postgres"
	"github.com/graphmill/graphmill/internal/provider"
	"github.com/graphmill/graphmill/internal/templatepack"
)

// ConcurrencyDefault is the discovery jobs in flight per process.
const ConcurrencyDefault = 2

// AddQueue registers the schema_discovery queue and its worker.
func (s *Service) AddQueue(concurrency, projectMax int) error {
	if concurrency <= 0 {
		concurrency = ConcurrencyDefault
	}
	return s.cfg.Jobs.AddQueue(jobqueue.QueueConfig{
		Name: Queue, Table: "discovery_jobs", Concurrency: concurrency, BatchSize: 1, ProjectMax: projectMax,
		Handler: jobqueue.EachFunc(s.run), BackoffFunc: s.cfg.Backoff, OutcomeFunc: jobqueue.PublishCompletedFunc(Queue, s.now), Lease: s.cfg.Lease, AnnounceStarted: true,
	})
}

// run is one attempt of a job: the batches not finished yet (each
// committed with its proposal), then merging, refinement and the
// relationships pass, and the result committed with the job's completion.
type run struct {
	s       *Service
	job     jobqueue.Job
	project uuid.UUID
	w       work
	types   *templatepack.Types
	gen     provider.Generator
	pr      Progress
	// budget is the characters of document text one call carries.
	budget int
	// relPer is the characters of each document the relationships call
	// sends (0: no relationships call).
	relPer int
	// docs holds, once read, the text each document gives the
	// relationships call (clipped to relPer; "" for a document deleted
	// or without text): never a whole document.
	docs map[uuid.UUID]string
	// skipped counts the documents found deleted or without text.
	skipped int
	// embedFailed: an embedding call failed and merging went on by
	// names only.
	embedFailed bool
	mergeStep   int // the merge pass the embedding calls belong to
}

func (s *Service) run(ctx context.Context, j jobqueue.Job) error {
	if j.ProjectID == nil {
		return jobqueue.Permanent(errors.New("discovery job without a project"))
	}
	w, err := workGet(ctx, s.cfg.Pool, *j.ProjectID, j.ID)
	if err != nil {
		return jobqueue.Permanent(err)
	}
	types, err := s.cfg.Packs.TypesFor(ctx, w.ProjectID)
	if err != nil {
		return fmt.Errorf("load the project's types: %w", err)
	}
	gen, err := s.cfg.Generators(ctx, w.ProjectID)
	if err != nil {
		if errors.Is(err, provider.ErrNoProvider) {
			return jobqueue.Permanent(fmt.Errorf("%w: configure provider credentials for the organization or project, or enable the local provider", err))
		}
		return fmt.Errorf("resolve the generative model: %w", err)
	}
	limit := 0
	if l, ok := gen.(interface{ InputTokenLimit() int }); ok {
		limit = l.InputTokenLimit()
	}
	r := &run{s: s, job: j, project: w.ProjectID, w: w, types: types, gen: gen, docs: map[uuid.UUID]string{}, budget: callChars(limit)}
	if w.Options.IncludeRelationships {
		r.relPer = relationshipPer(r.budget, len(w.DocumentIDs))
	}
	batches := r.batches()
	done := min(len(w.Proposals), len(batches))
	processed := 0
	for b, p := range w.Proposals[:done] {
		processed += len(p.DocumentIDs)
		r.skipped += len(batches[b]) - len(p.DocumentIDs)
	}
	r.pr = Progress{
		Phase: PhaseAnalyzing, TotalSteps: totalSteps(len(batches), w.Options), DocumentsTotal: len(w.DocumentIDs),
		CurrentStep: len(w.Proposals), DocumentsProcessed: processed,
	}
	if len(w.Proposals) > 0 {
		r.pr.Message = fmt.Sprintf("resumed after %d finished batches of %d", len(w.Proposals), len(batches))
		if err := r.progress(ctx); err != nil {
			return err
		}
	}
	for b := len(w.Proposals); b < len(batches); b++ {
		if err := r.batch(ctx, b, batches); err != nil {
			return err
		}
	}
	merged, err := r.merge(ctx)
	if err != nil {
		return err
	}
	rels, err := r.relationships(ctx, merged)
	if err != nil {
		return err
	}
	return r.finish(ctx, merged, rels)
}

// batches splits the job's documents into batches of batch_size.
func (r *run) batches() [][]uuid.UUID {
	var out [][]uuid.UUID
	ids, n := r.w.DocumentIDs, max(r.w.Options.BatchSize, 1)
	for i := 0; i < len(ids); i += n {
		out = append(out, ids[i:min(i+n, len(ids))])
	}
	return out
}

// cancelled is the error of an attempt whose job no longer runs at it.
func (r *run) cancelled(ctx context.Context) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return jobqueue.ErrCancelled
}

// progress records the progress and publishes it (discovery.progress).
func (r *run) progress(ctx context.Context) error {
	return postgres.WithTx(ctx, r.s.cfg.Pool, func(tx pgx.Tx) error {
		ok, err := jobSetProgress(ctx, tx, r.project, r.job.ID, r.job.Attempt, r.pr, r.s.now())
		if err != nil {
			return err
		}
		if !ok {
			return r.cancelled(ctx)
		}
		return r.publish(ctx, tx)
	})
}

func (r *run) publish(ctx context.Context, tx pgx.Tx) error {
	data := map[string]any{"jobId": r.job.ID, "status": StatusRunning, "progress": r.pr}
	if r.pr.Phase == PhaseDone {
		data["status"] = StatusCompleted
	}
	if _, err := events.Publish(ctx, tx, events.TypeDiscoveryProgress, &r.project, nil, data, r.s.now()); err != nil {
		return fmt.Errorf("publish discovery.progress: %w", err)
	}
	return nil
}

// read loads the text of documents through the document domain, each
// clipped to documentCharsMax, and keeps what the relationships call
// will send of it. A document deleted since the job started, or without
// text, is left out.
func (r *run) read(ctx context.Context, ids []uuid.UUID) ([]batchDoc, error) {
	var out []batchDoc
	for _, id := range ids {
		r.docs[id] = ""
		d, err := r.s.cfg.Documents.Get(ctx, r.project, id)
		if errs.CodeOf(err) == errs.NotFound {
			continue
		}
		if err != nil {
			return nil, err
		}
		chunks, err := r.s.cfg.Documents.ChunksToExtract(ctx, r.project, id, false)
		if err != nil {
			return nil, err
		}
		var b strings.Builder
		for i, c := range chunks {
			if b.Len() > documentCharsMax*4 { // runes are at most 4 bytes
				break
			}
			if i > 0 {
				b.WriteString("\n\n")
			}
			b.WriteString(c.Text)
		}
		text := clip(b.String(), documentCharsMax)
		if strings.TrimSpace(text) == "" {
			continue
		}
		r.docs[id] = clip(text, r.relPer)
		out = append(out, batchDoc{ID: id, Name: d.Filename, Text: text})
	}
	return out, nil
}

// batch makes the call of batch b and commits its proposal with the
// progress: the checkpoint a later attempt resumes after. The call
// carries the batch's documents within the call budget (an equal share
// each); instances are checked against the text it sent.
func (r *run) batch(ctx context.Context, b int, batches [][]uuid.UUID) error {
	ids := batches[b]
	docs, err := r.read(ctx, ids)
	if err != nil {
		return err
	}
	p := Proposal{DocumentIDs: make([]uuid.UUID, len(docs)), Types: []Type{}}
	if len(docs) > 0 {
		per := perDocument(r.budget, len(docs))
		sent := map[uuid.UUID]string{}
		for i, d := range docs {
			p.DocumentIDs[i] = d.ID
			docs[i].Text = clip(d.Text, per)
			sent[d.ID] = docs[i].Text
		}
		var wt wireTypes
		req := llm.GenerateRequest{
			Purpose: llm.PurposeDiscovery, System: systemInstruction, Prompt: discoveryPrompt(r.types),
			Text: documentsText(docs, per), Schema: typesSchema(),
		}
		if err := r.call(ctx, PhaseAnalyzing, b+1, req, map[string]any{"batch": b + 1, "batches": len(batches), "documentIds": p.DocumentIDs}, &wt); err != nil {
			return err
		}
		if types, _ := fromWire(wt.Types, sent); types != nil {
			p.Types = types
		}
	}
	skipped := len(ids) - len(docs)
	r.skipped += skipped
	r.pr.CurrentStep = b + 1
	r.pr.DocumentsProcessed += len(docs)
	r.pr.Message = fmt.Sprintf("analysed batch %d of %d: %d candidate types", b+1, len(batches), len(p.Types))
	if skipped > 0 {
		r.pr.Message += fmt.Sprintf("; %d documents skipped (deleted or without text)", skipped)
	}
	return postgres.WithTx(ctx, r.s.cfg.Pool, func(tx pgx.Tx) error {
		ok, err := jobCheckpoint(ctx, tx, r.project, r.job.ID, r.job.Attempt, b, p, r.pr, r.s.now())
		if err != nil {
			return err
		}
		if !ok {
			return r.cancelled(ctx)
		}
		r.w.Proposals = append(r.w.Proposals, p)
		return r.publish(ctx, tx)
	})
}

// call makes one provider call, records it in the call log (even when
// it failed or was cancelled) and decodes its answer into v. An answer
// that cannot be decoded fails the attempt (a retry asks again).
func (r *run) call(ctx context.Context, phase string, step int, req llm.GenerateRequest, meta map[string]any, v any) error {
	out, c, err := provider.GenerateCall(ctx, r.gen, req, r.s.now())
	meta["purpose"] = req.Purpose
	meta["provider"], meta["model"] = r.gen.Provider(), r.gen.Model()
	meta["promptChars"], meta["textChars"] = len(req.Prompt), len(req.Text)
	r.record(ctx, c, phase, step, meta)
	if err != nil {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		return fmt.Errorf("discovery %s call %d: %w", phase, step, err)
	}
	return decode(out.JSON, v)
}

// record writes a call to the call log; a failure to write is logged.
func (r *run) record(ctx context.Context, c provider.Call, phase string, step int, meta map[string]any) {
	payload, _ := json.Marshal(meta) //nolint:errchkjson // plain values
	row := callRow{Call: c, JobID: r.job.ID, ProjectID: r.project, Phase: phase, Step: step, RequestPayload: payload}
	if err := callInsert(context.WithoutCancel(ctx), r.s.cfg.Pool, row); err != nil {
		r.s.cfg.Logger.Error("discovery llm call not recorded", "job", r.job.ID, "err", err)
	}
}

// embedErrorMax bounds an embedding call's logged error.
const embedErrorMax = 2000

// embed is e.Embed with each call recorded in the call log (phase
// merging, step the merge pass).
func (r *run) embed(e llm.Embedder) func(ctx context.Context, texts []string) ([][]float32, error) {
	return func(ctx context.Context, texts []string) ([][]float32, error) {
		started, t0 := r.s.now(), time.Now()
		vs, err := e.Embed(ctx, texts)
		dur := time.Since(t0)
		done := started.Add(dur)
		c := provider.Call{
			ID: uuid.Must(uuid.NewV7()), ModelName: e.Model(), Status: provider.CallSuccess,
			DurationMs: int(dur.Milliseconds()), StartedAt: started, CompletedAt: &done,
		}
		if p, ok := e.(interface{ Provider() string }); ok {
			c.Provider = p.Provider()
		}
		if err != nil {
			c.Status, c.ErrorMessage = provider.CallError, postgres.TextMax(err.Error(), embedErrorMax)
		}
		r.record(ctx, c, PhaseMerging, r.mergeStep, map[string]any{"purpose": "embed", "provider": c.Provider, "model": c.ModelName, "texts": len(texts)})
		return vs, err
	}
}

// mergeOptions are the job's merge settings, with the project's
// embedding model when it has one.
func (r *run) mergeOptions(ctx context.Context) MergeOptions {
	opt := MergeOptions{MinConfidence: r.w.Options.MinConfidence, Existing: r.types.Objects}
	if r.s.cfg.Embedders != nil {
		if e, err := r.s.cfg.Embedders(ctx, r.project); err == nil && e != nil {
			opt.Embed = r.embed(e)
		}
	}
	return opt
}

// mergeTypes merges proposals; when embedding fails (embeddings are
// optional) it merges by names only, for this and every later pass.
func (r *run) mergeTypes(ctx context.Context, opt *MergeOptions, proposals []Proposal) ([]Type, error) {
	out, err := Merge(ctx, proposals, *opt)
	if err != nil && opt.Embed != nil && ctx.Err() == nil {
		r.s.cfg.Logger.Warn("discovery merges by type names only: embedding failed", "job", r.job.ID, "err", err)
		r.embedFailed, opt.Embed = true, nil
		out, err = Merge(ctx, proposals, *opt)
	}
	if err != nil {
		return nil, fmt.Errorf("merge candidate types: %w", err)
	}
	return out, nil
}

// merge merges the batches' proposals, then refines the list up to
// max_iterations-1 times, stopping when a refinement changes nothing or
// is rejected: a refined list that drops an instance (so a type), holds
// no type, or whose merge would drop a type below min_confidence is not
// taken, and the previous list is kept.
func (r *run) merge(ctx context.Context) ([]Type, error) {
	opt := r.mergeOptions(ctx)
	r.pr.Phase, r.pr.Message = PhaseMerging, fmt.Sprintf("merging the proposals of %d batches", len(r.w.Proposals))
	if err := r.progress(ctx); err != nil {
		return nil, err
	}
	merged, err := r.mergeTypes(ctx, &opt, r.w.Proposals)
	if err != nil {
		return nil, err
	}
	r.pr.CurrentStep++
	for it := 1; it < r.w.Options.MaxIterations && len(merged) > 0; it++ {
		r.mergeStep = it
		var wt wireTypes
		in, err := json.Marshal(toWire(merged))
		if err != nil {
			return nil, fmt.Errorf("encode candidates: %w", err)
		}
		req := llm.GenerateRequest{
			Purpose: llm.PurposeDiscoveryRefine, System: systemInstruction, Prompt: existingTypes(r.types) + "\n" + refinePrompt,
			Text: string(in), Schema: typesSchema(),
		}
		if err := r.call(ctx, PhaseMerging, it, req, map[string]any{"iteration": it, "candidates": len(merged)}, &wt); err != nil {
			return nil, err
		}
		r.pr.CurrentStep++
		next, reason, err := r.refined(ctx, opt, merged, wt.Types)
		if err != nil {
			return nil, err
		}
		stop := true
		switch {
		case reason != "":
			r.pr.Message = fmt.Sprintf("refinement %d rejected (%s): kept the previous %d types", it, reason, len(merged))
			r.s.cfg.Logger.Warn("discovery refinement rejected", "job", r.job.ID, "iteration", it, "reason", reason)
		case Same(merged, next):
			r.pr.Message = fmt.Sprintf("refinement %d changed nothing: %d types", it, len(merged))
		default:
			merged, stop = next, false
			r.pr.Message = fmt.Sprintf("refinement %d: %d types", it, len(merged))
		}
		if err := r.progress(ctx); err != nil {
			return nil, err
		}
		if stop {
			break
		}
	}
	return merged, nil
}

// refined reads a refine answer against prev and merges it; reason
// says why it is rejected ("" when it is taken).
func (r *run) refined(ctx context.Context, opt MergeOptions, prev []Type, ws []wireType) (next []Type, reason string, err error) {
	revised, dropped := refinedFromWire(ws, prev)
	if len(revised) == 0 {
		return nil, fmt.Sprintf("no type kept; %d items of the answer not from the list", dropped), nil
	}
	if lost := lostInstances(prev, revised); lost > 0 {
		return nil, fmt.Sprintf("%d instances of the list lost; %d items of the answer not from the list", lost, dropped), nil
	}
	minConf := opt.MinConfidence
	opt.MinConfidence = 0
	next, err = r.mergeTypes(ctx, &opt, []Proposal{{Types: revised}})
	if err != nil {
		return nil, "", err
	}
	for _, t := range next {
		if t.Confidence < minConf {
			return nil, fmt.Sprintf("type %s below min_confidence", t.TypeName), nil
		}
	}
	return next, "", nil
}

// relationships proposes the relationships between the merged types
// (with include_relationships and at least two types) in one call. The
// call carries at most relationshipCharsMax characters of documents
// (and no more than the call budget): relPer of each, the documents
// with instances first, then the others, in the job's order.
// Relationships below min_confidence are dropped; a relationship's
// frequency is the number of documents holding instances of both its
// ends.
func (r *run) relationships(ctx context.Context, types []Type) ([]Relationship, error) {
	if !r.w.Options.IncludeRelationships || len(types) < 2 {
		return []Relationship{}, nil
	}
	r.pr.Phase, r.pr.CurrentStep = PhaseRelationships, r.pr.TotalSteps-1
	r.pr.Message = fmt.Sprintf("proposing relationships between %d types", len(types))
	if err := r.progress(ctx); err != nil {
		return nil, err
	}
	in, err := json.Marshal(toWire(types))
	if err != nil {
		return nil, fmt.Errorf("encode types: %w", err)
	}
	docs, err := r.relationshipDocuments(ctx, types, relationshipCount(r.budget, len(in), r.relPer))
	if err != nil {
		return nil, err
	}
	req := llm.GenerateRequest{
		Purpose: llm.PurposeDiscoveryRelationships, System: systemInstruction, Prompt: relationshipsPrompt(r.types),
		Text: string(in) + "\n\n" + documentsText(docs, r.relPer), Schema: relationshipsSchema(),
	}
	var wr wireRelationships
	if err := r.call(ctx, PhaseRelationships, 1, req, map[string]any{"types": len(types), "documents": len(docs)}, &wr); err != nil {
		return nil, err
	}
	for i := range wr.Relationships {
		wr.Relationships[i].Confidence = min(max(wr.Relationships[i].Confidence, 0), 1)
	}
	// Relationships to installed types discovery did not find are kept.
	ends := append([]Type{}, types...)
	for _, o := range r.types.Objects {
		ends = append(ends, Type{TypeName: o.Name})
	}
	docsOf := map[string]map[uuid.UUID]bool{}
	for _, t := range types {
		docsOf[t.TypeName] = documentsOf(t.ExampleInstances, t.Documents)
	}
	rels := []Relationship{}
	for _, rel := range MergeRelationships(wr.Relationships, ends, r.types.Relationships) {
		if rel.Confidence < r.w.Options.MinConfidence {
			continue
		}
		rel.Frequency = 0
		for d := range docsOf[rel.SourceType] {
			if docsOf[rel.TargetType][d] {
				rel.Frequency++
			}
		}
		rels = append(rels, rel)
	}
	slices.SortFunc(rels, relationshipOrder)
	return rels, nil
}

// relationshipDocuments are at most n documents for the relationships
// call, as kept when read (or read now, after a resume): those holding
// instances of types first, then the others, in the job's order;
// documents deleted or without text are left out.
func (r *run) relationshipDocuments(ctx context.Context, types []Type, n int) ([]batchDoc, error) {
	with := map[uuid.UUID]bool{}
	for _, t := range types {
		for d := range documentsOf(t.ExampleInstances, t.Documents) {
			with[d] = true
		}
	}
	order := slices.Clone(r.w.DocumentIDs)
	slices.SortStableFunc(order, func(a, b uuid.UUID) int {
		return cmp.Compare(boolRank(with[b]), boolRank(with[a]))
	})
	var docs []batchDoc
	for _, id := range order {
		if len(docs) == n {
			break
		}
		if _, ok := r.docs[id]; !ok {
			if _, err := r.read(ctx, []uuid.UUID{id}); err != nil {
				return nil, err
			}
		}
		if r.docs[id] != "" {
			docs = append(docs, batchDoc{ID: id, Text: r.docs[id]})
		}
	}
	return docs, nil
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

// finish commits the result, the final progress and the job's
// completion in one transaction.
func (r *run) finish(ctx context.Context, types []Type, rels []Relationship) error {
	if types == nil {
		types = []Type{}
	}
	u, err := callTotals(ctx, r.s.cfg.Pool, r.project, r.job.ID)
	if err != nil {
		return err
	}
	r.pr.Phase, r.pr.CurrentStep = PhaseDone, r.pr.TotalSteps
	r.pr.Message = fmt.Sprintf("found %d types and %d relationships in %d documents with %d provider calls (%d tokens)",
		len(types), len(rels), len(r.w.DocumentIDs)-r.skipped, u.Calls, u.InputTokens+u.OutputTokens)
	if r.skipped > 0 {
		r.pr.Message += fmt.Sprintf("; %d documents skipped (deleted or without text)", r.skipped)
	}
	if r.embedFailed {
		r.pr.Message += "; embedding failed: types merged by name only"
	}
	// Run again when it loses a deadlock (in the outcome hook FinishInTx
	// calls, say): results, progress and completion commit together.
	return postgres.WithTxRetryDeadlock(ctx, r.s.cfg.Pool, func(tx pgx.Tx) error {
		if err := jobSetResult(ctx, tx, r.project, r.job.ID, types, rels, r.pr, r.s.now()); err != nil {
			return err
		}
		if err := r.publish(ctx, tx); err != nil {
			return err
		}
		return r.s.cfg.Jobs.FinishInTx(ctx, tx, Queue, r.job, jobqueue.StatusCompleted)
	})
}

// sortedDocuments is a set of documents as a list, by id.
func sortedDocuments(set map[uuid.UUID]bool) []uuid.UUID {
	return slices.SortedFunc(maps.Keys(set), func(a, b uuid.UUID) int { return bytes.Compare(a[:], b[:]) })
}
