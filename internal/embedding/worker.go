package embedding

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"text/template"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/graphmill/graphmill/internal/graph"
	"github.com/graphmill/graphmill/internal/jobqueue"
	"github.com/graphmill/graphmill/internal/postgres"
	"github.com/graphmill/graphmill/internal/provider"
	"github.com/graphmill/graphmill/internal/vectorindex"
)

// compiledPolicy is an active policy with its prepared template, or the
// reason it cannot give texts (its template is refused, or it ran past its
// render budget in this batch): the jobs of the objects it covers then
// fail, for good.
type compiledPolicy struct {
	Policy
	tmpl *template.Template
	err  error
}

// objectText is one text of an object: for a policy, or for the default
// (policy uuid.Nil).
type objectText struct {
	object *graph.Object
	policy uuid.UUID
	model  string // the model the policy names; empty for the default text
	text   string
}

// groupKey is one embedding call: a project's texts for one resolved
// provider and model.
type groupKey struct {
	project         uuid.UUID
	provider, model string
}

type group struct {
	handle *provider.Handle
	texts  []objectText
	hashes [][]byte
}

// work embeds a batch of objects. Outside any transaction it reads the
// objects, the active policies of their projects and the stored vectors'
// origins, renders the texts (each template under a deadline and an
// output budget), and makes one embedding call per project and model for
// the texts that changed. Then, in one transaction, it writes the vectors,
// removes the vectors no policy covers any more and records each finished
// job's final status with them (jobqueue FinishBatchInTx). A policy whose
// template is refused or runs past its budget fails only the jobs of the
// objects it covers.
func (s *Service) work(ctx context.Context, jobs []jobqueue.Job) []error {
	out := make([]error, len(jobs))
	fail := func(err error) []error { return jobqueue.FailAll(len(jobs), err) }
	objectOf, err := jobObjects(ctx, s.pool, jobqueue.IDs(jobs))
	if err != nil {
		return fail(err)
	}
	objectIDs := make([]uuid.UUID, 0, len(objectOf))
	for _, id := range objectOf {
		objectIDs = append(objectIDs, id)
	}
	snap, err := s.snapshot(ctx, objectIDs)
	if err != nil {
		return fail(err)
	}
	existing, err := embeddingsOf(ctx, s.pool, objectIDs)
	if err != nil {
		return fail(err)
	}
	objectErr := snap.errs

	// Group the changed texts by project and resolved model.
	handles := map[[2]string]*provider.Handle{}
	groups := map[groupKey]*group{}
	var order []groupKey
	for _, t := range snap.texts {
		o := t.object
		hk := [2]string{o.ProjectID.String(), t.model}
		h, ok := handles[hk]
		if !ok {
			h, err = s.models.ResolveModel(ctx, o.ProjectID, provider.Embedding, t.model)
			if err != nil {
				if ctx.Err() == nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
					err = jobqueue.Permanent(err)
				}
				objectErr[o.ID] = err
				continue
			}
			handles[hk] = h
		}
		sum := sha256.Sum256([]byte(t.text))
		if prev, ok := existing[vectorKey{o.ID, t.policy}]; ok && prev.Provider == h.Provider() && prev.Model == h.Model() && bytes.Equal(prev.Hash, sum[:]) {
			continue // unchanged text, same model: the vector stands
		}
		gk := groupKey{o.ProjectID, h.Provider(), h.Model()}
		g := groups[gk]
		if g == nil {
			g = &group{handle: h}
			groups[gk] = g
			order = append(order, gk)
		}
		g.texts = append(g.texts, t)
		g.hashes = append(g.hashes, sum[:])
	}

	var rows []vectorRow
	for _, gk := range order {
		g := groups[gk]
		in := make([]string, len(g.texts))
		for i, t := range g.texts {
			in[i] = t.text
		}
		vectors, err := g.handle.Embed(ctx, in)
		if err == nil && len(vectors) != len(in) {
			err = fmt.Errorf("provider returned %d vectors for %d texts", len(vectors), len(in))
		}
		if err != nil {
			err = fmt.Errorf("embed %d graph object texts with %s %s: %w", len(in), gk.provider, gk.model, err)
			for _, t := range g.texts {
				objectErr[t.object.ID] = err
			}
			continue
		}
		for i, t := range g.texts {
			rows = append(rows, vectorRow{
				Object: t.object.ID, Policy: t.policy, Project: gk.project, Provider: gk.provider, Model: gk.model,
				Vector: vectors[i], Hash: g.hashes[i],
			})
		}
	}

	// Run again when it loses a deadlock (in the outcome hook
	// FinishBatchInTx calls, say); out is set only for jobs no longer
	// ours, which a run again finds so too.
	err = postgres.WithTxRetryDeadlock(ctx, s.pool, func(tx pgx.Tx) error {
		// The jobs still ours: a job cancelled or reaped since its claim
		// writes nothing, and a cancel arriving now waits for this commit.
		if err := s.objects.LockObjects(ctx, tx, objectIDs); err != nil {
			return err
		}
		owned, err := jobsLockRunning(ctx, tx, jobs)
		if err != nil {
			return err
		}
		// What still holds: an object (or a policy covering it) changed
		// since the texts were rendered has a newer job queued, which
		// will write its vectors; nothing is rendered here.
		current, err := s.fingerprints(ctx, tx, objectIDs)
		if err != nil {
			return err
		}
		write := map[uuid.UUID]bool{}
		keep := map[uuid.UUID][]uuid.UUID{}
		var gone []uuid.UUID
		for _, j := range jobs {
			id := objectOf[j.ID]
			if !owned[j.ID] {
				continue
			}
			cur, live := current[id]
			switch was, wasLive := snap.fingerprints[id]; {
			case !live:
				gone = append(gone, id)
			case wasLive && cur == was:
				write[id] = true
				keep[id] = snap.keep[id]
			}
		}
		valid := make([]vectorRow, 0, len(rows))
		for _, r := range rows {
			if write[r.Object] {
				valid = append(valid, r)
			}
		}
		deleted, err := embeddingsWrite(ctx, tx, valid, keep, gone, s.now().UTC())
		if err != nil {
			return err
		}
		// Tell every process's vector index, in this transaction.
		changed := map[uuid.UUID]bool{}
		for _, r := range valid {
			changed[r.Project] = true
		}
		for _, j := range jobs {
			p := *j.ProjectID
			if changed[p] {
				if err := vectorindex.Changed(ctx, tx, p, vectorindex.KindObjects); err != nil {
					return err
				}
				changed[p] = false // once per project
			}
			if deleted > 0 {
				if err := vectorindex.Removed(ctx, tx, p, vectorindex.KindObjects); err != nil {
					return err
				}
			}
		}
		// The final statuses commit with the vectors, in one statement.
		done := make([]jobqueue.Job, 0, len(jobs))
		for _, j := range jobs {
			if owned[j.ID] && objectErr[objectOf[j.ID]] == nil {
				done = append(done, j)
			}
		}
		if err := s.jobs.FinishBatchInTx(ctx, tx, Queue, done, jobqueue.StatusCompleted); err != nil {
			return err
		}
		for i, j := range jobs {
			if !owned[j.ID] {
				out[i] = fmt.Errorf("graph embedding job no longer running: %w", jobqueue.ErrCancelled)
			}
		}
		return nil
	})
	if err != nil {
		return fail(err)
	}
	for i, j := range jobs {
		if out[i] == nil {
			out[i] = objectErr[objectOf[j.ID]]
		}
	}
	return out
}

// snapshot is what a batch's objects are embedded from.
type snapshot struct {
	texts []objectText
	// keep lists, per live object, the policies (uuid.Nil: the default
	// text) whose vectors it keeps.
	keep map[uuid.UUID][]uuid.UUID
	// fingerprints identify, per live object, everything its texts were
	// rendered from.
	fingerprints map[uuid.UUID][32]byte
	// errs holds the objects that a policy could not give a text.
	errs map[uuid.UUID]error
}

// snapshot reads the objects and their projects' active policies and
// renders the objects' texts. It runs outside any transaction.
func (s *Service) snapshot(ctx context.Context, objectIDs []uuid.UUID) (snapshot, error) {
	list, policies, err := s.load(ctx, s.pool, objectIDs)
	if err != nil {
		return snapshot{}, err
	}
	compiled := s.prepare(policies)
	snap := snapshot{
		keep:         make(map[uuid.UUID][]uuid.UUID, len(list)),
		fingerprints: make(map[uuid.UUID][32]byte, len(list)),
		errs:         map[uuid.UUID]error{},
	}
	start := time.Now()
	for i := range list {
		o := &list[i]
		snap.fingerprints[o.ID] = fingerprint(o, policies)
		if i > 0 && time.Since(start) > s.renderBudget {
			// Retried in a later batch (counting a retry); the first
			// object always renders, so every batch makes progress.
			snap.errs[o.ID] = fmt.Errorf("the batch's render budget of %s was spent before this object", s.renderBudget)
			continue
		}
		ts, err := s.textsOf(o, compiled)
		if err != nil {
			snap.errs[o.ID] = err
		}
		snap.keep[o.ID] = []uuid.UUID{}
		for _, t := range ts {
			snap.keep[o.ID] = append(snap.keep[o.ID], t.policy)
		}
		snap.texts = append(snap.texts, ts...)
	}
	return snap, nil
}

// fingerprints reads the live objects among objectIDs and their projects'
// active policies again, in db, and fingerprints them.
func (s *Service) fingerprints(ctx context.Context, db postgres.DBTX, objectIDs []uuid.UUID) (map[uuid.UUID][32]byte, error) {
	list, policies, err := s.load(ctx, db, objectIDs)
	if err != nil {
		return nil, err
	}
	out := make(map[uuid.UUID][32]byte, len(list))
	for i := range list {
		out[list[i].ID] = fingerprint(&list[i], policies)
	}
	return out, nil
}

// load reads the live objects among objectIDs and the active policies of
// their projects.
func (s *Service) load(ctx context.Context, db postgres.DBTX, objectIDs []uuid.UUID) ([]graph.Object, []Policy, error) {
	list, err := s.objects.ObjectsByID(ctx, db, objectIDs)
	if err != nil {
		return nil, nil, err
	}
	var projects []uuid.UUID
	for _, o := range list {
		if !slices.Contains(projects, o.ProjectID) {
			projects = append(projects, o.ProjectID)
		}
	}
	if len(projects) == 0 {
		return list, nil, nil
	}
	policies, err := s.policies.ActivePolicies(ctx, projects)
	if err != nil {
		return nil, nil, fmt.Errorf("load embedding policies: %w", err)
	}
	return list, policies, nil
}

// fingerprint identifies what o's texts are made of: the object's fields
// whose changes queue a re-embedding (not its status or confidence, which
// review decisions change without one) and the active policies covering
// it.
func fingerprint(o *graph.Object, policies []Policy) [32]byte {
	type covering struct {
		ID                  uuid.UUID
		ObjectTypes, Fields []string
		Template, Model     string
	}
	v := struct {
		ID, ProjectID          uuid.UUID
		Type, Key, Name, Descr string
		Properties             map[string]any
		Labels                 []string
		Policies               []covering
	}{ID: o.ID, ProjectID: o.ProjectID, Type: o.Type, Key: o.Key, Name: o.Name, Descr: o.Description, Properties: o.Properties, Labels: o.Labels}
	for _, p := range policies {
		if p.covers(*o) {
			v.Policies = append(v.Policies, covering{p.ID, p.ObjectTypes, p.Fields, p.Template, p.Model})
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		// Properties come from JSON; they always encode. Never match.
		return sha256.Sum256([]byte(uuid.NewString()))
	}
	return sha256.Sum256(b)
}

// prepare checks and prepares the policies' templates. A policy whose
// template is refused (stored before a rule existed) is kept with its
// error, so that the objects it covers fail rather than fall back to the
// default text.
func (s *Service) prepare(policies []Policy) []*compiledPolicy {
	out := make([]*compiledPolicy, 0, len(policies))
	for _, p := range policies {
		t, err := prepare(p.Template, p.Fields)
		c := &compiledPolicy{Policy: p, tmpl: t}
		if err != nil {
			s.logger.Warn("embedding policy template refused; the objects it covers fail", "policy", p.ID, "project", p.ProjectID, "err", err)
			c.err = jobqueue.Permanent(fmt.Errorf("embedding policy %s: %w", p.ID, err))
		}
		out = append(out, c)
	}
	return out
}

// textsOf builds o's texts: one per active policy covering its type, else
// the default text. Empty texts are left out (the object gets no vector
// for that policy); so is a text whose template fails on this object,
// which is logged. A policy that cannot render (refused, or past its
// budget on this or an earlier object of the batch) gives no text and its
// error.
func (s *Service) textsOf(o *graph.Object, policies []*compiledPolicy) ([]objectText, error) {
	var out []objectText
	var failed error
	covered := false
	for _, p := range policies {
		if !p.covers(*o) {
			continue
		}
		covered = true
		if p.err == nil {
			text, err := render(p.tmpl, *o, p.Fields, s.renderTimeout)
			switch {
			case errors.Is(err, errRenderBudget):
				// Not rendered again in this batch. A retryable error: a
				// loaded machine or a collection pause can make a sound
				// template miss its deadline once; one that always does
				// fails after its retries.
				s.logger.Warn("embedding policy template ran past its render budget; the objects it covers are retried", "policy", p.ID, "object", o.ID, "err", err)
				p.err = fmt.Errorf("embedding policy %s: %w", p.ID, err)
			case err != nil:
				s.logger.Warn("embedding policy template failed on an object; no vector for it", "policy", p.ID, "object", o.ID, "err", err)
				continue
			case text != "":
				out = append(out, objectText{object: o, policy: p.ID, model: p.Model, text: text})
				continue
			default:
				continue
			}
		}
		if failed == nil {
			failed = p.err
		}
	}
	if !covered {
		if text := DefaultText(*o); text != "" {
			out = append(out, objectText{object: o, policy: uuid.Nil, text: text})
		}
	}
	return out, failed
}
