package extraction

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/graph"
	"github.com/graphmill/graphmill/internal/jobqueue"
	"github.com/graphmill/graphmill/internal/llm"
	"github.com/graphmill/graphmill/internal/notification"
	"github.com/graphmill/graphmill/internal/postgres"
	"github.com/graphmill/graphmill/internal/provider"
	"github.com/graphmill/graphmill/internal/task"
	"github.com/graphmill/graphmill/internal/templatepack"
)

// Worker defaults.
const (
	ConcurrencyDefault = 2
	// excerptMax bounds the source text quoted in a call's request payload.
	excerptMax = 500
	// reviewObjectsMax bounds the objects listed in a review task.
	reviewObjectsMax = 1000
)

// AddQueue registers the worker of the object_extraction queue.
func (s *Service) AddQueue(concurrency, projectMax int) error {
	if concurrency <= 0 {
		concurrency = ConcurrencyDefault
	}
	return s.jobs.AddQueue(jobqueue.QueueConfig{
		Name: Queue, Table: "object_extraction_jobs", Concurrency: concurrency, BatchSize: 1, ProjectMax: projectMax,
		ConcurrencyFunc: s.cfg.InFlight, Handler: jobqueue.EachFunc(s.Run), OutcomeFunc: s.outcomes, AnnounceStarted: true,
	})
}

// jobLog writes log entries of one attempt of a job; every entry's
// metadata carries the attempt.
type jobLog struct {
	s        *Service
	job      jobqueue.Job
	project  uuid.UUID
	deferred []logRow // written with the graph writes
}

func (l *jobLog) row(op, level, msg string, meta map[string]any) logRow {
	if meta == nil {
		meta = map[string]any{}
	}
	meta["attempt"] = l.job.Attempt
	return logRow{operation: op, level: level, message: msg, metadata: meta}
}

// now writes an entry at once, outside any transaction and even when ctx
// was cancelled: the log of a failed or cancelled attempt stays.
func (l *jobLog) now(ctx context.Context, op, level, msg string, meta map[string]any) {
	wctx := context.WithoutCancel(ctx)
	if err := logInsert(wctx, l.s.pool, l.job.ID, l.project, l.s.now().UTC(), []logRow{l.row(op, level, msg, meta)}); err != nil {
		l.s.log.Error("extraction log not written", "job", l.job.ID, "err", err)
	}
}

// later keeps an entry for the write transaction.
func (l *jobLog) later(op, level, msg string, meta map[string]any) {
	l.deferred = append(l.deferred, l.row(op, level, msg, meta))
}

// candidate is an object of the job's result, merged across windows.
type candidate struct {
	in    graph.ObjectInput
	index int
}

// result is what the LLM calls of a job found, validated and merged.
type result struct {
	objects  []*candidate
	byKey    map[string]*candidate   // type + "\x00" + normalized key
	byName   map[string][]*candidate // normalized name or key
	pending  []pendingRel
	rels     []graph.RelationshipInput
	relIndex map[string]int
	chunkIDs []uuid.UUID
}

func newResult() *result {
	return &result{byKey: map[string]*candidate{}, byName: map[string][]*candidate{}, relIndex: map[string]int{}}
}

// Run works one extraction job: all LLM calls first, then every graph
// write in one transaction. It returns jobqueue.ErrRequiresReview when
// objects were stored as suggestions.
func (s *Service) Run(ctx context.Context, j jobqueue.Job) error {
	if j.ProjectID == nil {
		return jobqueue.Permanent(errors.New("extraction job without a project"))
	}
	project := *j.ProjectID
	l := &jobLog{s: s, job: j, project: project}
	src, err := jobSourceGet(ctx, s.pool, j.ID)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return jobqueue.Permanent(err)
		}
		return err
	}
	if src.DocumentID == nil {
		return jobqueue.Permanent(errors.New("the job names no document: extraction from datasources is not available"))
	}
	doc, err := s.cfg.Documents.Get(ctx, project, *src.DocumentID)
	if err != nil && errs.CodeOf(err) != errs.NotFound {
		return err
	}
	src.Filename = doc.Filename // "" when deleted meanwhile: its chunks went with it
	chunks, err := s.cfg.Documents.ChunksToExtract(ctx, project, *src.DocumentID, src.JobType == JobTypeIncremental)
	if err != nil {
		return err
	}
	types, err := s.cfg.Types.TypesFor(ctx, project)
	if err != nil {
		return fmt.Errorf("load the project's types: %w", err)
	}
	settings, err := s.Settings(ctx, project)
	if err != nil {
		return err
	}
	threshold := settings.ReviewThreshold
	res := newResult()
	if len(chunks) == 0 {
		l.now(ctx, OpChunkProcessing, LevelInfo, "no chunks to extract", map[string]any{"jobType": src.JobType, "documentId": src.DocumentID})
		return s.write(ctx, l, src, types, res, threshold)
	}
	gen, err := s.cfg.Generators(ctx, project)
	if err != nil {
		if errors.Is(err, provider.ErrNoProvider) {
			return jobqueue.Permanent(fmt.Errorf("%w: configure provider credentials for the organization or project, or enable the local provider", err))
		}
		return fmt.Errorf("resolve the generative model: %w", err)
	}
	prompt := buildPrompt(types, src.Filename)
	schema := responseSchema(types)
	windows := makeWindows(chunks, textBudget(gen.InputTokenLimit(), s.cfg.WindowTokens, systemInstruction, prompt, schema))
	l.now(ctx, OpChunkProcessing, LevelInfo, fmt.Sprintf("extracting %d chunks in %d windows with %s", len(chunks), len(windows), gen.Model()),
		map[string]any{
			"jobType": src.JobType, "documentId": src.DocumentID, "chunks": len(chunks), "windows": len(windows),
			"model": gen.Model(), "provider": gen.Provider(),
		})
	for i, w := range windows {
		if err := s.extractWindow(ctx, l, gen, types, prompt, schema, i, len(windows), w, res); err != nil {
			return err
		}
	}
	s.resolveRelationships(l, types, res)
	return s.write(ctx, l, src, types, res, threshold)
}

// extractWindow makes the call of one window and merges what it found
// into res. The call is recorded (call log and llm_call entry) at once.
func (s *Service) extractWindow(ctx context.Context, l *jobLog, gen Generator, types *templatepack.Types, prompt string,
	schema map[string]any, i, n int, w window, res *result,
) error {
	ids := make([]uuid.UUID, len(w.chunks))
	indexes := make([]int, len(w.chunks))
	for k, c := range w.chunks {
		ids[k], indexes[k] = c.ID, c.Index
	}
	l.now(ctx, OpChunkProcessing, LevelInfo, fmt.Sprintf("window %d of %d: chunks %d to %d, %d tokens", i+1, n, indexes[0], indexes[len(indexes)-1], w.tokens),
		map[string]any{"window": i + 1, "windows": n, "chunkIds": ids, "chunkIndexes": indexes, "tokens": w.tokens})
	text := w.text()
	req := llm.GenerateRequest{Purpose: llm.PurposeExtraction, System: systemInstruction, Prompt: prompt, Text: text, Schema: schema}
	out, c, err := provider.GenerateCall(ctx, gen, req, s.now().UTC())
	call := LLMCall{Call: c, JobID: l.job.ID, RequestPayload: requestPayload(req, gen, types, i, n, ids, indexes, w.tokens)}
	s.recordCall(ctx, l, call, i+1)
	if err != nil {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		return fmt.Errorf("extraction call %d of %d: %w", i+1, n, err)
	}
	objs, rels, bad, perr := parseOutput(out.JSON)
	if perr != nil {
		l.later(OpValidation, LevelWarn, "window "+fmt.Sprint(i+1)+": "+perr.Error()+"; nothing taken from it", map[string]any{"window": i + 1})
	} else if bad > 0 {
		l.later(OpValidation, LevelWarn, fmt.Sprintf("window %d: %d entries of the response could not be read and were dropped", i+1, bad), map[string]any{"window": i + 1, "dropped": bad})
	}
	for _, o := range objs {
		s.addObject(l, types, res, o, ids, i+1)
	}
	for _, r := range rels {
		res.pending = append(res.pending, pendingRel{raw: r, chunks: ids, window: i + 1})
	}
	res.chunkIDs = append(res.chunkIDs, ids...)
	return nil
}

// recordCall writes the call log row and its llm_call entry, even when the
// job's context was cancelled.
func (s *Service) recordCall(ctx context.Context, l *jobLog, c LLMCall, window int) {
	wctx := context.WithoutCancel(ctx)
	if err := callInsert(wctx, s.pool, l.project, c); err != nil {
		s.log.Error("extraction llm call not recorded", "job", l.job.ID, "err", err)
	}
	level, msg := LevelInfo, fmt.Sprintf("%s call: %d input and %d output tokens, %d ms", c.ModelName, c.InputTokens, c.OutputTokens, c.DurationMs)
	meta := map[string]any{
		"callId": c.ID, "window": window, "model": c.ModelName, "provider": c.Provider, "inputTokens": c.InputTokens,
		"outputTokens": c.OutputTokens, "costUsd": c.CostUSD, "durationMs": c.DurationMs, "status": c.Status,
	}
	if c.Status == CallError {
		level, msg = LevelError, fmt.Sprintf("%s call failed after %d ms: %s", c.ModelName, c.DurationMs, c.ErrorMessage)
		meta["error"] = c.ErrorMessage
	}
	l.now(ctx, OpLLMCall, level, msg, meta)
}

// requestPayload summarises a request for the call log: what was asked,
// of which chunks, with which types; the prompt and text by size, the text
// by an excerpt. No credentials are part of a request.
func requestPayload(req llm.GenerateRequest, gen Generator, types *templatepack.Types, i, n int, ids []uuid.UUID, indexes []int, tokens int) json.RawMessage {
	rels := make([]string, len(types.Relationships))
	for k, r := range types.Relationships {
		rels[k] = r.Name
	}
	p := map[string]any{
		"purpose": req.Purpose, "provider": gen.Provider(), "model": gen.Model(), "window": i + 1, "windows": n,
		"chunkIds": ids, "chunkIndexes": indexes, "textTokens": tokens, "textChars": len(req.Text),
		"promptChars": len(req.Prompt), "systemChars": len(req.System), "objectTypes": types.ObjectNames(),
		"relationshipTypes": rels, "textExcerpt": postgres.Clip(req.Text, excerptMax),
	}
	raw, err := json.Marshal(p)
	if err != nil {
		return nil
	}
	return raw
}

// pendingRel is a relationship of a response, resolved once every window
// is in.
type pendingRel struct {
	raw    rawRelationship
	chunks []uuid.UUID
	window int
}

// addObject validates one object of a response and merges it into res:
// unknown types, nameless objects and properties that cannot be made
// valid drop the object; invalid optional properties are dropped from it.
func (s *Service) addObject(l *jobLog, types *templatepack.Types, res *result, o rawObject, chunks []uuid.UUID, window int) {
	typ := strings.TrimSpace(o.Type)
	name := clipRunes(oneLine(o.Name), nameMax)
	key := clipRunes(oneLine(o.Key), nameMax)
	if name == "" {
		name = key
	}
	if key == "" {
		key = name
	}
	meta := map[string]any{"window": window, "type": typ, "name": name}
	if _, ok := types.Object(typ); !ok {
		l.later(OpValidation, LevelWarn, fmt.Sprintf("dropped %q: unknown object type %q", name, typ), meta)
		return
	}
	norm := graph.NormalizeKey(key)
	if norm == "" {
		l.later(OpValidation, LevelWarn, fmt.Sprintf("dropped an object of type %q without a usable name or key", typ), meta)
		return
	}
	props, dropped, verr, ok := repairProperties(types, typ, o.Properties)
	if !ok {
		meta["error"] = verr.Error()
		l.later(OpValidation, LevelWarn, fmt.Sprintf("dropped %s %q: its properties do not match the type's schema", typ, name), meta)
		return
	}
	if len(dropped) > 0 {
		meta["droppedProperties"] = dropped
		meta["error"] = verr.Error()
		l.later(OpValidation, LevelWarn, fmt.Sprintf("repaired %s %q: dropped invalid properties %s", typ, name, strings.Join(dropped, ", ")), meta)
	}
	var conf *float64
	if o.Confidence != nil {
		c := min(max(*o.Confidence, 0), 1)
		conf = &c
	}
	k := typ + "\x00" + norm
	if c := res.byKey[k]; c != nil {
		// Seen in an earlier window: merge.
		for _, id := range chunks {
			if !slices.Contains(c.in.ChunkIDs, id) {
				c.in.ChunkIDs = append(c.in.ChunkIDs, id)
			}
		}
		if conf != nil && (c.in.Confidence == nil || *conf > *c.in.Confidence) {
			c.in.Confidence = conf
		}
		for pk, pv := range props {
			if _, set := c.in.Properties[pk]; !set {
				c.in.Properties[pk] = pv
				if types.Validate(typ, c.in.Properties) != nil {
					delete(c.in.Properties, pk)
				}
			}
		}
		if c.in.Description == "" {
			c.in.Description = strings.TrimSpace(o.Description)
		}
		return
	}
	c := &candidate{index: len(res.objects), in: graph.ObjectInput{
		Type: typ, Key: key, Name: name, Description: clipRunes(strings.TrimSpace(o.Description), graph.DescriptionMax),
		Properties: props, Confidence: conf, ChunkIDs: slices.Clone(chunks),
	}}
	res.objects = append(res.objects, c)
	res.byKey[k] = c
	for _, n := range []string{graph.NormalizeKey(name), norm} {
		if !slices.Contains(res.byName[n], c) {
			res.byName[n] = append(res.byName[n], c)
		}
	}
}

// resolveRelationships turns the responses' relationships into inputs
// between the job's objects: the endpoints are looked up by name or key
// among the objects found, the first pair the relationship type allows is
// taken; unknown types, unresolvable endpoints and disallowed pairs are
// dropped with a validation entry.
func (s *Service) resolveRelationships(l *jobLog, types *templatepack.Types, res *result) {
	for _, p := range res.pending {
		r := p.raw
		typ := strings.TrimSpace(r.Type)
		meta := map[string]any{"window": p.window, "type": typ, "source": r.Source, "target": r.Target}
		if _, ok := types.Relationship(typ); !ok {
			l.later(OpValidation, LevelWarn, fmt.Sprintf("dropped a relationship of unknown type %q", typ), meta)
			continue
		}
		srcs, tgts := res.byName[graph.NormalizeKey(r.Source)], res.byName[graph.NormalizeKey(r.Target)]
		if len(srcs) == 0 || len(tgts) == 0 {
			l.later(OpValidation, LevelWarn, fmt.Sprintf("dropped %s %q -> %q: an endpoint is not among the objects extracted", typ, r.Source, r.Target), meta)
			continue
		}
		var src, tgt *candidate
	pick:
		for _, a := range srcs {
			for _, b := range tgts {
				if a != b && types.AllowsRelationship(typ, a.in.Type, b.in.Type) {
					src, tgt = a, b
					break pick
				}
			}
		}
		if src == nil {
			l.later(OpValidation, LevelWarn, fmt.Sprintf("dropped %s %q -> %q: the type does not allow these endpoints", typ, r.Source, r.Target), meta)
			continue
		}
		var conf *float64
		if r.Confidence != nil {
			c := min(max(*r.Confidence, 0), 1)
			conf = &c
		}
		k := strings.Join([]string{typ, src.in.Type, graph.NormalizeKey(src.in.Key), tgt.in.Type, graph.NormalizeKey(tgt.in.Key)}, "\x00")
		if i, seen := res.relIndex[k]; seen {
			in := &res.rels[i]
			for _, id := range p.chunks {
				if !slices.Contains(in.ChunkIDs, id) {
					in.ChunkIDs = append(in.ChunkIDs, id)
				}
			}
			if conf != nil && (in.Confidence == nil || *conf > *in.Confidence) {
				in.Confidence = conf
			}
			continue
		}
		props := map[string]any{}
		if d := strings.TrimSpace(r.Description); d != "" {
			props["description"] = clipRunes(d, graph.DescriptionMax)
		}
		res.relIndex[k] = len(res.rels)
		res.rels = append(res.rels, graph.RelationshipInput{
			Type: typ, SourceType: src.in.Type, SourceKey: src.in.Key, TargetType: tgt.in.Type, TargetKey: tgt.in.Key,
			Properties: props, Confidence: conf, ChunkIDs: slices.Clone(p.chunks),
		})
	}
}

// write commits the job's result in one transaction: the graph writes,
// the logs of this phase, the counters, the chunks' extracted_at and, when
// objects fell under the review threshold, their review task and the
// notification of the project's admins.
func (s *Service) write(ctx context.Context, l *jobLog, src jobSource, types *templatepack.Types, res *result, threshold float64) error {
	objs := make([]graph.ObjectInput, len(res.objects))
	for i, c := range res.objects {
		c.in.Status = graph.StatusAccepted
		if c.in.Confidence != nil && *c.in.Confidence < threshold {
			c.in.Status = graph.StatusSuggested
		}
		objs[i] = c.in
	}
	review := false
	kept := len(l.deferred)
	// Run again when the transaction loses a deadlock (in the outcome
	// hook that FinishInTx calls, say): each run starts from the same
	// inputs, with the logs of a run that rolled back dropped.
	err := postgres.WithTxRetryDeadlock(ctx, s.pool, func(tx pgx.Tx) error {
		l.deferred, review = l.deferred[:kept], false
		running, err := jobLockRunning(ctx, tx, l.job.ID, l.job.Attempt)
		if err != nil {
			return err
		}
		if !running {
			return fmt.Errorf("extraction job no longer running: %w", jobqueue.ErrCancelled)
		}
		jobID := l.job.ID
		applied, err := s.cfg.Graph.Apply(ctx, tx, l.project, &jobID, objs, res.rels)
		if err != nil {
			return fmt.Errorf("write the graph: %w", err)
		}
		var suggested []uuid.UUID
		var listed []map[string]any
		seen := map[uuid.UUID]bool{}
		for i, a := range applied.Objects {
			if seen[a.ID] {
				continue
			}
			seen[a.ID] = true
			verb := "updated"
			if a.Created {
				verb = "created"
			}
			in := objs[min(i, len(objs)-1)]
			l.later(OpObjectCreation, LevelInfo, fmt.Sprintf("%s %s %q", verb, a.Type, in.Name), map[string]any{
				"objectId": a.ID, "type": a.Type, "key": a.Key, "created": a.Created, "status": a.Status,
				"confidence": in.Confidence, "chunkIds": in.ChunkIDs,
			})
			if a.Status == graph.StatusSuggested {
				suggested = append(suggested, a.ID)
				if len(listed) < reviewObjectsMax {
					listed = append(listed, map[string]any{"id": a.ID, "type": a.Type, "key": a.Key, "name": in.Name, "confidence": in.Confidence})
				}
			}
		}
		relIDs := map[uuid.UUID]bool{}
		unresolved := map[int]bool{}
		for _, i := range applied.UnresolvedRelationships {
			unresolved[i] = true
		}
		for i, r := range res.rels {
			meta := map[string]any{
				"type": r.Type, "sourceType": r.SourceType, "sourceKey": r.SourceKey, "targetType": r.TargetType,
				"targetKey": r.TargetKey, "confidence": r.Confidence, "chunkIds": r.ChunkIDs,
			}
			if unresolved[i] || i >= len(applied.RelationshipIDs) || applied.RelationshipIDs[i] == uuid.Nil {
				l.later(OpValidation, LevelWarn, fmt.Sprintf("dropped %s %q -> %q: an endpoint could not be resolved", r.Type, r.SourceKey, r.TargetKey), meta)
				continue
			}
			if relIDs[applied.RelationshipIDs[i]] {
				continue
			}
			relIDs[applied.RelationshipIDs[i]] = true
			meta["relationshipId"] = applied.RelationshipIDs[i]
			l.later(OpRelationshipCreation, LevelInfo, fmt.Sprintf("%s %q -> %q", r.Type, r.SourceKey, r.TargetKey), meta)
		}
		// The counters count what the job stored, new or already there, so
		// that a re-run reports the same figures.
		written := len(seen)
		if err := jobSetCounters(ctx, tx, l.job.ID, written, len(relIDs), len(suggested)); err != nil {
			return err
		}
		now := s.now().UTC()
		if err := s.cfg.Documents.MarkExtracted(ctx, tx, l.project, res.chunkIDs, now); err != nil {
			return err
		}
		l.later(OpChunkProcessing, LevelInfo, fmt.Sprintf("extraction finished: %d objects (%d new), %d relationships (%d new), %d suggestions",
			written, applied.ObjectsCreated, len(relIDs), applied.RelationshipsCreated, len(suggested)),
			map[string]any{
				"objectsCreated": applied.ObjectsCreated, "objectsUpdated": applied.ObjectsUpdated,
				"relationshipsCreated": applied.RelationshipsCreated, "relationshipsUpdated": applied.RelationshipsUpdated,
				"suggestions": len(suggested), "chunksProcessed": len(res.chunkIDs),
			})
		status := jobqueue.StatusCompleted
		if len(suggested) > 0 {
			review, status = true, jobqueue.StatusRequiresReview
			err = s.requestReview(ctx, tx, l, src, suggested, listed, threshold, now)
		} else {
			err = logInsert(ctx, tx, l.job.ID, l.project, now, l.deferred)
		}
		if err != nil {
			return err
		}
		// The job's final status commits with its results: a cancel that
		// comes while this commits finds the job final.
		return s.cfg.Jobs.FinishInTx(ctx, tx, Queue, l.job, status)
	})
	if err != nil {
		return err
	}
	if review {
		return jobqueue.ErrRequiresReview
	}
	return nil
}

// countObjects is n and noun, in the plural unless n is 1 ("1 object",
// "3 suggested objects").
func countObjects(n int, noun string) string {
	return fmt.Sprintf("%d %s%s", n, noun, plural(n, "", "s"))
}

// plural is one for a count of 1, else many (a noun's ending, a verb).
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// requestReview logs the suggestions, creates the job's review task and
// tells the project's admins, in the write transaction.
func (s *Service) requestReview(ctx context.Context, tx pgx.Tx, l *jobLog, src jobSource, ids []uuid.UUID, listed []map[string]any, threshold float64, now time.Time) error {
	source := "the document"
	if src.Filename != "" {
		source = src.Filename
	}
	t, err := s.cfg.Tasks.Create(ctx, tx, task.CreateParams{
		ProjectID: l.project,
		Title:     fmt.Sprintf("Review %s from %s", countObjects(len(ids), "suggested object"), clipRunes(source, 300)),
		Description: fmt.Sprintf("Extraction job %s found %s with a confidence under the review threshold %.2f. "+
			"Accept the task to accept them; reject it to delete them with their relationships.", l.job.ID, countObjects(len(ids), "object"), threshold),
		Type: TaskType, SourceType: TaskSourceType, SourceID: l.job.ID.String(),
		Metadata: map[string]any{"jobId": l.job.ID, "documentId": src.DocumentID, "objectIds": ids, "objects": listed, "reviewThreshold": threshold},
	})
	if err != nil {
		return fmt.Errorf("create the review task: %w", err)
	}
	l.later(OpSuggestionCreation, LevelInfo, fmt.Sprintf("%d objects under the review threshold %.2f stored as suggestions; review task %s", len(ids), threshold, t.ID),
		map[string]any{"objectIds": ids, "taskId": t.ID, "reviewThreshold": threshold})
	// The log first: the notification takes the events lock, held to commit.
	if err := logInsert(ctx, tx, l.job.ID, l.project, now, l.deferred); err != nil {
		return err
	}
	_, err = s.cfg.Notifier.NotifyProjectAdmins(ctx, tx, l.project, notification.Params{
		Title:               "Extraction results need review",
		Message:             fmt.Sprintf("%s extracted from %s %s below the review threshold and %s for review.", countObjects(len(ids), "object"), clipRunes(source, 300), plural(len(ids), "is", "are"), plural(len(ids), "waits", "wait")),
		Type:                "extraction_review",
		Severity:            notification.SeverityWarning,
		Importance:          notification.ImportanceImportant,
		Category:            "extraction",
		RelatedResourceType: "extraction_job",
		RelatedResourceID:   l.job.ID.String(),
		SourceType:          TaskSourceType,
		SourceID:            l.job.ID.String(),
		ActionURL:           fmt.Sprintf("/projects/%s/tasks/%s", l.project, t.ID),
		ActionLabel:         "Review",
		TaskID:              &t.ID,
		Details:             map[string]any{"jobId": l.job.ID, "suggestions": len(ids)},
	})
	if err != nil {
		return fmt.Errorf("notify the project's admins: %w", err)
	}
	return nil
}

// outcomes runs in the transaction recording a batch's outcomes: a failed
// attempt gets its error entry there (so it survives the handler's
// rollback), and finished jobs are announced as job.completed.
func (s *Service) outcomes(ctx context.Context, tx pgx.Tx, outs []jobqueue.Outcome) error {
	now := s.now().UTC()
	for _, o := range outs {
		if o.Job.ProjectID == nil {
			continue
		}
		if o.Err != nil {
			meta := map[string]any{"attempt": o.Job.Attempt, "retryCount": o.Job.RetryCount, "maxRetries": o.Job.MaxRetries, "status": o.Status}
			msg := "attempt failed: " + o.Err.Error()
			if o.Status == jobqueue.StatusQueued {
				meta["retryAt"] = o.RunAt.UTC()
				msg += "; it will run again"
			} else {
				msg = "job failed: " + o.Err.Error()
			}
			if err := logInsert(ctx, tx, o.Job.ID, *o.Job.ProjectID, now, []logRow{{OpError, LevelError, msg, meta}}); err != nil {
				return err
			}
		}
		if err := o.PublishCompleted(ctx, tx, Queue, now); err != nil {
			return err
		}
	}
	return nil
}

// resolveReview applies a resolved review task: accepted accepts the
// suggested objects, rejected deletes those still suggested by the task's
// job (with their relationships); what was accepted or re-extracted by
// another job since stays.
func (s *Service) resolveReview(ctx context.Context, tx pgx.Tx, t task.Task, resolution string) error {
	var meta struct {
		ObjectIDs []uuid.UUID `json:"objectIds"`
	}
	if len(t.Metadata) > 0 {
		if err := json.Unmarshal(t.Metadata, &meta); err != nil {
			return fmt.Errorf("review task %s: metadata: %w", t.ID, err)
		}
	}
	if len(meta.ObjectIDs) == 0 {
		return nil
	}
	switch resolution {
	case task.StatusAccepted:
		return s.cfg.Graph.SetObjectsStatus(ctx, tx, t.ProjectID, meta.ObjectIDs, graph.StatusAccepted)
	case task.StatusRejected:
		job, err := uuid.Parse(t.SourceID)
		if err != nil {
			return fmt.Errorf("review task %s: source %q is not a job id", t.ID, t.SourceID)
		}
		return s.cfg.Graph.DeleteSuggestions(ctx, tx, t.ProjectID, job, meta.ObjectIDs)
	}
	return nil
}
