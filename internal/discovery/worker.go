package discovery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

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
		Handler: jobqueue.EachFunc(s.run), BackoffFunc: s.cfg.Backoff, OutcomeFunc: s.outcomes, Lease: s.cfg.Lease,
	})
}

// outcomes publishes job.completed for every job that ended (DESIGN 8).
func (s *Service) outcomes(ctx context.Context, tx pgx.Tx, outcomes []jobqueue.Outcome) error {
	for _, o := range outcomes {
		if err := o.PublishCompleted(ctx, tx, Queue, s.now()); err != nil {
			return err
		}
	}
	return nil
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
	docs    map[uuid.UUID]string // the job's documents: their text once read
}

func (s *Service) run(ctx context.Context, j jobqueue.Job) error {
	w, err := workGet(ctx, s.cfg.Pool, j.ID)
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
	r := &run{s: s, job: j, project: w.ProjectID, w: w, types: types, gen: gen, docs: map[uuid.UUID]string{}}
	for _, id := range w.DocumentIDs {
		r.docs[id] = ""
	}
	batches := r.batches()
	r.pr = Progress{
		Phase: PhaseAnalyzing, TotalSteps: totalSteps(len(batches), w.Options), DocumentsTotal: len(w.DocumentIDs),
		CurrentStep: len(w.Proposals), DocumentsProcessed: documentsIn(batches[:min(len(w.Proposals), len(batches))]),
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

func documentsIn(batches [][]uuid.UUID) int {
	n := 0
	for _, b := range batches {
		n += len(b)
	}
	return n
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
		ok, err := jobSetProgress(ctx, tx, r.job.ID, r.job.Attempt, r.pr, r.s.now())
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

// read loads the text of a batch's documents through the document
// domain; a document deleted since the job started is left out.
func (r *run) read(ctx context.Context, ids []uuid.UUID) ([]batchDoc, error) {
	var out []batchDoc
	for _, id := range ids {
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
		parts := make([]string, len(chunks))
		for i, c := range chunks {
			parts[i] = c.Text
		}
		text := strings.Join(parts, "\n\n")
		r.docs[id] = text
		out = append(out, batchDoc{ID: id, Name: d.Filename, Text: text})
	}
	return out, nil
}

// batch makes the call of batch b and commits its proposal with the
// progress: the checkpoint a later attempt resumes after.
func (r *run) batch(ctx context.Context, b int, batches [][]uuid.UUID) error {
	ids := batches[b]
	docs, err := r.read(ctx, ids)
	if err != nil {
		return err
	}
	p := Proposal{DocumentIDs: ids, Types: []Type{}}
	if len(docs) > 0 {
		var wt wireTypes
		req := llm.GenerateRequest{
			Purpose: llm.PurposeDiscovery, System: systemInstruction, Prompt: discoveryPrompt(r.types),
			Text: documentsText(docs, documentCharsMax), Schema: typesSchema(),
		}
		if err := r.call(ctx, PhaseAnalyzing, b+1, req, map[string]any{"batch": b + 1, "batches": len(batches), "documentIds": ids}, &wt); err != nil {
			return err
		}
		known := map[uuid.UUID]string{}
		for _, d := range docs {
			known[d.ID] = r.docs[d.ID]
		}
		p.Types, _ = fromWire(wt.Types, known)
	}
	r.pr.CurrentStep = b + 1
	r.pr.DocumentsProcessed += len(ids)
	r.pr.Message = fmt.Sprintf("analysed batch %d of %d: %d candidate types", b+1, len(batches), len(p.Types))
	return postgres.WithTx(ctx, r.s.cfg.Pool, func(tx pgx.Tx) error {
		ok, err := jobCheckpoint(ctx, tx, r.job.ID, r.job.Attempt, b, p, r.pr, r.s.now())
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
	payload, _ := json.Marshal(meta) //nolint:errchkjson // plain values
	row := callRow{Call: c, JobID: r.job.ID, ProjectID: r.project, Phase: phase, Step: step, RequestPayload: payload}
	if werr := callInsert(context.WithoutCancel(ctx), r.s.cfg.Pool, row); werr != nil {
		r.s.cfg.Logger.Error("discovery llm call not recorded", "job", r.job.ID, "err", werr)
	}
	if err != nil {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		return fmt.Errorf("discovery %s call %d: %w", phase, step, err)
	}
	return decode(out.JSON, v)
}

// mergeOptions are the job's merge settings, with the project's
// embedding model when it has one.
func (r *run) mergeOptions(ctx context.Context) MergeOptions {
	opt := MergeOptions{MinConfidence: r.w.Options.MinConfidence, Existing: r.types.Objects}
	if r.s.cfg.Embedders != nil {
		if e, err := r.s.cfg.Embedders(ctx, r.project); err == nil && e != nil {
			opt.Embed = e.Embed
		}
	}
	return opt
}

// merge merges the batches' proposals, then refines the list up to
// max_iterations-1 times, stopping when a refinement changes nothing.
func (r *run) merge(ctx context.Context) ([]Type, error) {
	opt := r.mergeOptions(ctx)
	r.pr.Phase, r.pr.Message = PhaseMerging, fmt.Sprintf("merging the proposals of %d batches", len(r.w.Proposals))
	if err := r.progress(ctx); err != nil {
		return nil, err
	}
	merged, err := Merge(ctx, r.w.Proposals, opt)
	if err != nil {
		return nil, fmt.Errorf("merge proposals: %w", err)
	}
	r.pr.CurrentStep++
	for it := 1; it < r.w.Options.MaxIterations && len(merged) > 0; it++ {
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
		revised, _ := fromWire(wt.Types, r.docIDs())
		// A refined list carries the frequencies of the candidates it
		// kept (its examples are capped): Merge keeps the larger.
		freq := map[string]int{}
		for _, t := range merged {
			freq[NameKey(t.TypeName)] = t.Frequency
		}
		for i := range revised {
			revised[i].Frequency = freq[NameKey(revised[i].TypeName)]
		}
		next, err := Merge(ctx, []Proposal{{Types: revised}}, opt)
		if err != nil {
			return nil, fmt.Errorf("merge refined candidates: %w", err)
		}
		r.pr.CurrentStep++
		same := Same(merged, next)
		merged = next
		if same {
			r.pr.Message = fmt.Sprintf("refinement %d changed nothing: %d types", it, len(merged))
			break
		}
		r.pr.Message = fmt.Sprintf("refinement %d: %d types", it, len(merged))
		if err := r.progress(ctx); err != nil {
			return nil, err
		}
	}
	return merged, nil
}

// docIDs are the job's documents without their text (an answer's
// instances are checked against the ids only).
func (r *run) docIDs() map[uuid.UUID]string {
	out := make(map[uuid.UUID]string, len(r.w.DocumentIDs))
	for _, id := range r.w.DocumentIDs {
		out[id] = ""
	}
	return out
}

// relationships proposes the relationships between the merged types
// (with include_relationships and at least two types) in one call.
func (r *run) relationships(ctx context.Context, types []Type) ([]Relationship, error) {
	if !r.w.Options.IncludeRelationships || len(types) < 2 {
		return []Relationship{}, nil
	}
	r.pr.Phase, r.pr.CurrentStep = PhaseRelationships, r.pr.TotalSteps-1
	r.pr.Message = fmt.Sprintf("proposing relationships between %d types", len(types))
	if err := r.progress(ctx); err != nil {
		return nil, err
	}
	var docs []batchDoc
	for _, id := range r.w.DocumentIDs {
		if r.docs[id] == "" {
			if _, err := r.read(ctx, []uuid.UUID{id}); err != nil {
				return nil, err
			}
		}
		docs = append(docs, batchDoc{ID: id, Text: r.docs[id]})
	}
	in, err := json.Marshal(toWire(types))
	if err != nil {
		return nil, fmt.Errorf("encode types: %w", err)
	}
	per := max(relationshipCharsMax/max(len(docs), 1), 500)
	req := llm.GenerateRequest{
		Purpose: llm.PurposeDiscoveryRelationships, System: systemInstruction, Prompt: relationshipsPrompt(r.types),
		Text: string(in) + "\n\n" + documentsText(docs, per), Schema: relationshipsSchema(),
	}
	var wr wireRelationships
	if err := r.call(ctx, PhaseRelationships, 1, req, map[string]any{"types": len(types)}, &wr); err != nil {
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
	rels := MergeRelationships(wr.Relationships, ends, r.types.Relationships)
	if rels == nil {
		rels = []Relationship{}
	}
	return rels, nil
}

// finish commits the result, the final progress and the job's
// completion in one transaction.
func (r *run) finish(ctx context.Context, types []Type, rels []Relationship) error {
	if types == nil {
		types = []Type{}
	}
	u, err := callTotals(ctx, r.s.cfg.Pool, r.job.ID)
	if err != nil {
		return err
	}
	r.pr.Phase, r.pr.CurrentStep = PhaseDone, r.pr.TotalSteps
	r.pr.Message = fmt.Sprintf("found %d types and %d relationships in %d documents with %d provider calls (%d tokens)",
		len(types), len(rels), len(r.w.DocumentIDs), u.Calls, u.InputTokens+u.OutputTokens)
	return postgres.WithTx(ctx, r.s.cfg.Pool, func(tx pgx.Tx) error {
		if err := jobSetResult(ctx, tx, r.job.ID, types, rels, r.pr, r.s.now()); err != nil {
			return err
		}
		if err := r.publish(ctx, tx); err != nil {
			return err
		}
		return r.s.cfg.Jobs.FinishInTx(ctx, tx, Queue, r.job, jobqueue.StatusCompleted)
	})
}
