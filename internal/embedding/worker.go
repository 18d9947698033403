package embedding

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"text/template"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/graphmill/graphmill/internal/events"
	"github.com/graphmill/graphmill/internal/jobqueue"
	"github.com/graphmill/graphmill/internal/postgres"
	"github.com/graphmill/graphmill/internal/provider"
	"github.com/graphmill/graphmill/internal/vectorindex"
)

// compiledPolicy is an active policy with its parsed template.
type compiledPolicy struct {
	Policy
	tmpl *template.Template
}

// objectText is one text of an object: for a policy, or for the default
// (policy uuid.Nil).
type objectText struct {
	object *Object
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

// work embeds a batch of objects: it reads the objects, the active
// policies of their projects and the stored vectors' origins, builds the
// texts, makes one embedding call per project and model for the texts that
// changed, then writes every vector and removes the vectors no policy
// covers any more in one transaction. No transaction is open during the
// provider calls.
func (s *Service) work(ctx context.Context, jobs []jobqueue.Job) []error {
	out := make([]error, len(jobs))
	fail := func(err error) []error {
		for i := range out {
			out[i] = err
		}
		return out
	}
	jobIDs := make([]uuid.UUID, len(jobs))
	for i, j := range jobs {
		jobIDs[i] = j.ID
	}
	objectOf, err := jobObjects(ctx, s.pool, jobIDs)
	if err != nil {
		return fail(err)
	}
	objectIDs := make([]uuid.UUID, 0, len(objectOf))
	for _, id := range objectOf {
		objectIDs = append(objectIDs, id)
	}
	snap, err := s.snapshot(ctx, s.pool, objectIDs)
	if err != nil {
		return fail(err)
	}
	existing, err := embeddingsOf(ctx, s.pool, objectIDs)
	if err != nil {
		return fail(err)
	}
	texts := snap.texts

	// Group the changed texts by project and resolved model.
	objectErr := map[uuid.UUID]error{}
	handles := map[[2]string]*provider.Handle{}
	groups := map[groupKey]*group{}
	var order []groupKey
	for _, t := range texts {
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

	// Write what still holds: the objects and policies are read again in
	// the writing transaction, and a vector is stored only if its text is
	// still the object's text. An older job finishing after a newer one
	// (several workers) thus never overwrites the newer vector.
	err = postgres.WithTx(ctx, s.pool, func(tx pgx.Tx) error {
		fresh, err := s.snapshot(ctx, tx, objectIDs)
		if err != nil {
			return err
		}
		current := make(map[vectorKey][]byte, len(fresh.texts))
		for _, t := range fresh.texts {
			sum := sha256.Sum256([]byte(t.text))
			current[vectorKey{t.object.ID, t.policy}] = sum[:]
		}
		valid := rows[:0]
		for _, r := range rows {
			if bytes.Equal(current[vectorKey{r.Object, r.Policy}], r.Hash) {
				valid = append(valid, r)
			}
		}
		deleted, err := embeddingsWrite(ctx, tx, valid, fresh.keep, fresh.gone, s.now().UTC())
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
		return nil
	})
	if err != nil {
		return fail(err)
	}
	for i, j := range jobs {
		if e, ok := objectErr[objectOf[j.ID]]; ok {
			out[i] = e
		}
	}
	return out
}

// snapshot is what a batch's objects should be embedded from.
type snapshot struct {
	texts []objectText
	// keep lists, per live object, the policies (uuid.Nil: the default
	// text) whose vectors it keeps; gone lists the objects that are gone.
	keep map[uuid.UUID][]uuid.UUID
	gone []uuid.UUID
}

// snapshot reads the objects and their projects' active policies and builds
// the objects' texts.
func (s *Service) snapshot(ctx context.Context, db postgres.DBTX, objectIDs []uuid.UUID) (snapshot, error) {
	list, err := s.objects.ObjectsByID(ctx, db, objectIDs)
	if err != nil {
		return snapshot{}, err
	}
	live := make(map[uuid.UUID]bool, len(list))
	var projects []uuid.UUID
	for _, o := range list {
		live[o.ID] = true
		if !slices.Contains(projects, o.ProjectID) {
			projects = append(projects, o.ProjectID)
		}
	}
	snap := snapshot{keep: make(map[uuid.UUID][]uuid.UUID, len(list))}
	for _, id := range objectIDs {
		if !live[id] {
			snap.gone = append(snap.gone, id)
		}
	}
	policies, err := s.activePolicies(ctx, projects)
	if err != nil {
		return snapshot{}, err
	}
	for i := range list {
		o := &list[i]
		ts := s.textsOf(o, policies)
		snap.keep[o.ID] = []uuid.UUID{}
		for _, t := range ts {
			snap.keep[o.ID] = append(snap.keep[o.ID], t.policy)
		}
		snap.texts = append(snap.texts, ts...)
	}
	return snap, nil
}

// activePolicies loads and compiles the active policies of projects; a
// policy whose template no longer compiles (it was checked when saved) is
// left out and logged.
func (s *Service) activePolicies(ctx context.Context, projects []uuid.UUID) ([]compiledPolicy, error) {
	if len(projects) == 0 {
		return nil, nil
	}
	list, err := s.policies.ActivePolicies(ctx, projects)
	if err != nil {
		return nil, fmt.Errorf("load embedding policies: %w", err)
	}
	out := make([]compiledPolicy, 0, len(list))
	for _, p := range list {
		t, err := compile(p.Template)
		if err != nil {
			s.logger.Warn("embedding policy template does not compile; policy skipped", "policy", p.ID, "project", p.ProjectID, "err", err)
			continue
		}
		out = append(out, compiledPolicy{Policy: p, tmpl: t})
	}
	return out, nil
}

// textsOf builds o's texts: one per active policy covering its type, else
// the default text. Empty texts are left out (the object gets no vector
// for that policy); so is a text whose template fails on this object,
// which is logged.
func (s *Service) textsOf(o *Object, policies []compiledPolicy) []objectText {
	var out []objectText
	covered := false
	for _, p := range policies {
		if !p.covers(*o) {
			continue
		}
		covered = true
		text, err := render(p.tmpl, *o, p.Fields)
		if err != nil {
			s.logger.Warn("embedding policy template failed on an object; no vector for it", "policy", p.ID, "object", o.ID, "err", err)
			continue
		}
		if text != "" {
			out = append(out, objectText{object: o, policy: p.ID, model: p.Model, text: text})
		}
	}
	if !covered {
		if text := DefaultText(*o); text != "" {
			out = append(out, objectText{object: o, policy: uuid.Nil, text: text})
		}
	}
	return out
}

// outcomes publishes job.completed for the finished jobs.
func (s *Service) outcomes(ctx context.Context, tx pgx.Tx, outcomes []jobqueue.Outcome) error {
	now := s.now().UTC()
	for _, o := range outcomes {
		if !o.Status.Final() || o.Job.ProjectID == nil {
			continue
		}
		data := map[string]any{"queue": Queue, "jobId": o.Job.ID, "status": o.Status}
		if o.Err != nil {
			data["error"] = o.Err.Error()
		}
		if _, err := events.Publish(ctx, tx, events.TypeJobCompleted, o.Job.ProjectID, nil, data, now); err != nil {
			return err
		}
	}
	return nil
}
