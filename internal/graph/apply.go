package graph

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/graphmill/graphmill/internal/errs"
)

// applyAttempts bounds the insert rounds of Apply: a round only repeats
// for rows a concurrent transaction inserted first.
const applyAttempts = 3

type objKey struct{ typ, nkey string }

// pendingObject is one distinct object of an Apply batch, merged from
// its inputs, and then what became of it.
type pendingObject struct {
	key         objKey
	keyText     string
	name        string
	description string
	props       map[string]any
	labels      []string
	status      string
	confidence  *float64
	chunks      []uuid.UUID
	inputs      []int

	id      uuid.UUID
	created bool
	content bool // created, or name/description/properties/labels changed
	updated bool
}

// links is the object's id and the chunks it came from (provenanceInsert).
func (p *pendingObject) links() (uuid.UUID, []uuid.UUID) { return p.id, p.chunks }

type relKey struct {
	typ            string
	source, target uuid.UUID
}

type pendingRel struct {
	key        relKey
	props      map[string]any
	confidence *float64
	chunks     []uuid.UUID
	inputs     []int

	id      uuid.UUID
	created bool
	updated bool
}

// links is the relationship's id and the chunks it came from
// (provenanceInsert).
func (p *pendingRel) links() (uuid.UUID, []uuid.UUID) { return p.id, p.chunks }

// maxConfidence is the larger of two confidences (nil: unknown).
func maxConfidence(a, b *float64) *float64 {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	case *b > *a:
		return b
	}
	return a
}

func sameConfidence(a, b *float64) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && *a == *b)
}

func unionLabels(a, b []string) []string {
	out := slices.Clone(a)
	for _, l := range b {
		if !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	return out
}

func unionIDs(a, b []uuid.UUID) []uuid.UUID {
	for _, id := range b {
		if !slices.Contains(a, id) {
			a = append(a, id)
		}
	}
	return a
}

// applyLock is the first key of the advisory lock serialising the Apply
// calls of a project (the second is the project's hash).
const applyLock = 0x67617079 // "gapy"

// mergeProps returns old overlaid with new (new keys win).
func mergeProps(old, new map[string]any) map[string]any {
	out := make(map[string]any, len(old)+len(new))
	maps.Copy(out, old)
	maps.Copy(out, new)
	return out
}

// upgradeStatus never turns accepted into suggested.
func upgradeStatus(old, new string) string {
	if old == StatusAccepted || new == StatusAccepted {
		return StatusAccepted
	}
	return StatusSuggested
}

// Apply upserts the objects and relationships of one extraction in the
// caller's transaction, with batched statements. An object matching a live
// one by (type, normalized key) updates it: the new name, the new
// description when not empty, properties merged (new keys win), labels
// unioned, the higher confidence, accepted never downgraded to suggested,
// extraction_job_id set to jobID (when not nil). Relationship endpoints
// are resolved by (type, normalized key) among the batch and the live
// objects of project; a relationship matching an existing one merges its
// properties and confidence the same way. Provenance rows link everything
// to its chunks, and the objects created or whose text changed (name,
// description, properties, labels) are handed to the EmbedQueue. Applying
// the same input twice changes nothing the second time. Errors:
// invalid_argument (a bad input, named by index; a chunk not of project).
//
// The Apply calls of one project run one at a time (a transaction lock
// held until the caller's commit): concurrent ones that lock existing
// objects and insert new ones of the same keys deadlock otherwise. The
// lock is held for the write only; extraction calls its model before.
func (s *Service) Apply(ctx context.Context, tx pgx.Tx, project uuid.UUID, jobID *uuid.UUID, objs []ObjectInput, rels []RelationshipInput) (ApplyResult, error) {
	res := ApplyResult{
		Objects: make([]AppliedObject, len(objs)), RelationshipIDs: make([]uuid.UUID, len(rels)), UnresolvedRelationships: []int{},
	}
	now := s.now().UTC()
	pending, err := collectObjects(objs)
	if err != nil {
		return ApplyResult{}, err
	}
	relInputs, err := checkRelationships(rels)
	if err != nil {
		return ApplyResult{}, err
	}
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2))`, applyLock, project.String()); err != nil {
		return ApplyResult{}, fmt.Errorf("lock the project's graph: %w", err)
	}
	if err := checkChunks(ctx, tx, project, objs, rels); err != nil {
		return ApplyResult{}, err
	}
	if err := s.applyObjects(ctx, tx, project, jobID, pending, now); err != nil {
		return ApplyResult{}, err
	}
	var embed []uuid.UUID
	for _, p := range pending {
		for _, i := range p.inputs {
			res.Objects[i] = AppliedObject{ID: p.id, Type: p.key.typ, Key: p.keyText, Status: p.status, Created: p.created}
		}
		switch {
		case p.created:
			res.ObjectsCreated++
		case p.updated:
			res.ObjectsUpdated++
		}
		if p.content {
			embed = append(embed, p.id)
		}
	}
	if err := provenanceInsert(ctx, tx, "graph_object_provenance", "object_id", project, jobID, pending, now); err != nil {
		return ApplyResult{}, err
	}

	prels, err := s.resolveRelationships(ctx, tx, project, pending, relInputs, &res)
	if err != nil {
		return ApplyResult{}, err
	}
	if err := s.applyRelationships(ctx, tx, project, jobID, prels, now); err != nil {
		return ApplyResult{}, err
	}
	for _, p := range prels {
		for _, i := range p.inputs {
			res.RelationshipIDs[i] = p.id
		}
		switch {
		case p.created:
			res.RelationshipsCreated++
		case p.updated:
			res.RelationshipsUpdated++
		}
	}
	if err := provenanceInsert(ctx, tx, "graph_relationship_provenance", "relationship_id", project, jobID, prels, now); err != nil {
		return ApplyResult{}, err
	}
	if err := s.enqueue(ctx, tx, project, embed); err != nil {
		return ApplyResult{}, err
	}
	return res, nil
}

// collectObjects checks the object inputs and merges those naming the
// same object, in first-appearance order.
func collectObjects(objs []ObjectInput) ([]*pendingObject, error) {
	byKey := make(map[objKey]*pendingObject, len(objs))
	out := make([]*pendingObject, 0, len(objs))
	for i, in := range objs {
		p, err := objectFromInput(in)
		if err != nil {
			return nil, fmt.Errorf("objects[%d]: %w", i, err)
		}
		p.inputs = []int{i}
		prev, ok := byKey[p.key]
		if !ok {
			byKey[p.key] = p
			out = append(out, p)
			continue
		}
		prev.name = p.name
		if p.description != "" {
			prev.description = p.description
		}
		prev.props = mergeProps(prev.props, p.props)
		prev.labels = unionLabels(prev.labels, p.labels)
		prev.status = upgradeStatus(prev.status, p.status)
		prev.confidence = maxConfidence(prev.confidence, p.confidence)
		prev.chunks = unionIDs(prev.chunks, p.chunks)
		prev.inputs = append(prev.inputs, i)
	}
	return out, nil
}

func objectFromInput(in ObjectInput) (*pendingObject, error) {
	o := Object{
		Type: in.Type, Key: strings.TrimSpace(in.Key), Name: strings.TrimSpace(in.Name), Description: in.Description, Status: in.Status,
		Confidence: in.Confidence, Labels: in.Labels, Properties: in.Properties,
	}
	if o.Name == "" {
		o.Name = o.Key
	}
	if o.Key == "" {
		o.Key = o.Name
	}
	nkey, err := checkObject(&o)
	if err != nil {
		return nil, err
	}
	return &pendingObject{
		key: objKey{typ: o.Type, nkey: nkey}, keyText: o.Key, name: o.Name, description: o.Description,
		props: o.Properties, labels: o.Labels, status: o.Status, confidence: o.Confidence, chunks: unionIDs(nil, in.ChunkIDs),
	}, nil
}

// checkRelationships checks the relationship inputs and returns them with
// properties and confidence normalised.
func checkRelationships(rels []RelationshipInput) ([]RelationshipInput, error) {
	out := make([]RelationshipInput, len(rels))
	for i, in := range rels {
		if err := checkText("type", in.Type, TypeMax, true); err != nil {
			return nil, fmt.Errorf("relationships[%d]: %w", i, err)
		}
		c, err := roundConfidence(in.Confidence)
		if err != nil {
			return nil, fmt.Errorf("relationships[%d]: %w", i, err)
		}
		props, err := normalizeProps("properties", in.Properties)
		if err != nil {
			return nil, fmt.Errorf("relationships[%d]: %w", i, err)
		}
		in.Confidence, in.Properties, in.ChunkIDs = c, props, unionIDs(nil, in.ChunkIDs)
		out[i] = in
	}
	return out, nil
}

// checkChunks refuses chunk ids that are not chunks of project.
func checkChunks(ctx context.Context, tx pgx.Tx, project uuid.UUID, objs []ObjectInput, rels []RelationshipInput) error {
	var ids []uuid.UUID
	seen := map[uuid.UUID]bool{}
	add := func(list []uuid.UUID) {
		for _, id := range list {
			if !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
	}
	for _, o := range objs {
		add(o.ChunkIDs)
	}
	for _, r := range rels {
		add(r.ChunkIDs)
	}
	if len(ids) == 0 {
		return nil
	}
	n, err := chunksCount(ctx, tx, project, ids)
	if err != nil {
		return err
	}
	if n != len(ids) {
		return errs.Errorf(errs.Invalid, "%d of the %d chunk ids are not chunks of the project", len(ids)-n, len(ids))
	}
	return nil
}

// applyObjects writes the pending objects: existing live ones (locked)
// are merged and updated when something changed, the others inserted.
// A row a concurrent transaction inserted first is merged in the next
// round.
func (s *Service) applyObjects(ctx context.Context, tx pgx.Tx, project uuid.UUID, jobID *uuid.UUID, pending []*pendingObject, now time.Time) error {
	slices.SortStableFunc(pending, func(a, b *pendingObject) int {
		if c := strings.Compare(a.key.typ, b.key.typ); c != 0 {
			return c
		}
		return strings.Compare(a.key.nkey, b.key.nkey)
	})
	remaining := pending
	var updates []*pendingObject
	for round := 0; len(remaining) > 0; round++ {
		if round == applyAttempts {
			return fmt.Errorf("apply objects: %d objects still conflict after %d rounds", len(remaining), applyAttempts)
		}
		existing, err := objectsLockByKeys(ctx, tx, project, remaining)
		if err != nil {
			return err
		}
		var inserts []*pendingObject
		for _, p := range remaining {
			e, ok := existing[p.key]
			if !ok {
				p.id, p.created, p.content = newID(), true, true
				inserts = append(inserts, p)
				continue
			}
			if mergeExisting(p, e, jobID) {
				updates = append(updates, p)
			}
		}
		inserted, err := objectsInsertBatch(ctx, tx, project, jobID, inserts, now)
		if err != nil {
			return err
		}
		remaining = remaining[:0:0]
		for _, p := range inserts {
			if !inserted[p.id] {
				p.created, p.content = false, false
				remaining = append(remaining, p)
			}
		}
	}
	return objectsUpdateBatch(ctx, tx, project, jobID, updates, now)
}

// mergeExisting folds the stored object e into p (p becomes the merged
// object) and reports whether the row must be written.
func mergeExisting(p *pendingObject, e Object, jobID *uuid.UUID) bool {
	p.id, p.keyText = e.ID, e.Key
	description := e.Description
	if p.description != "" {
		description = p.description
	}
	props := mergeProps(e.Properties, p.props)
	labels := unionLabels(e.Labels, p.labels)
	status := upgradeStatus(e.Status, p.status)
	confidence := maxConfidence(e.Confidence, p.confidence)
	p.content = p.name != e.Name || description != e.Description || len(labels) != len(e.Labels) || !jsonEqual(props, e.Properties)
	p.updated = p.content || status != e.Status || !sameConfidence(confidence, e.Confidence)
	jobChanged := jobID != nil && (e.ExtractionJobID == nil || *e.ExtractionJobID != *jobID)
	p.description, p.props, p.labels, p.status, p.confidence = description, props, labels, status, confidence
	return p.updated || jobChanged
}

// resolveRelationships finds the endpoints of the relationship inputs
// (the batch first, then the live objects of project), records the
// unresolved ones in res, and merges inputs naming the same relationship.
func (s *Service) resolveRelationships(ctx context.Context, tx pgx.Tx, project uuid.UUID, pending []*pendingObject, rels []RelationshipInput, res *ApplyResult) ([]*pendingRel, error) {
	ids := make(map[objKey]uuid.UUID, len(pending))
	for _, p := range pending {
		ids[p.key] = p.id
	}
	var missing []objKey
	asked := map[objKey]bool{}
	keys := make([][2]objKey, len(rels))
	for i, r := range rels {
		keys[i] = [2]objKey{{r.SourceType, NormalizeKey(r.SourceKey)}, {r.TargetType, NormalizeKey(r.TargetKey)}}
		for _, k := range keys[i] {
			if _, ok := ids[k]; !ok && k.typ != "" && k.nkey != "" && !asked[k] {
				asked[k] = true
				missing = append(missing, k)
			}
		}
	}
	if len(missing) > 0 {
		found, err := objectIDsByKeys(ctx, tx, project, missing)
		if err != nil {
			return nil, err
		}
		maps.Copy(ids, found)
	}
	byKey := map[relKey]*pendingRel{}
	var out []*pendingRel
	for i, r := range rels {
		src, ok1 := ids[keys[i][0]]
		tgt, ok2 := ids[keys[i][1]]
		if !ok1 || !ok2 {
			res.UnresolvedRelationships = append(res.UnresolvedRelationships, i)
			continue
		}
		k := relKey{typ: r.Type, source: src, target: tgt}
		if prev, ok := byKey[k]; ok {
			prev.props = mergeProps(prev.props, r.Properties)
			prev.confidence = maxConfidence(prev.confidence, r.Confidence)
			prev.chunks = unionIDs(prev.chunks, r.ChunkIDs)
			prev.inputs = append(prev.inputs, i)
			continue
		}
		p := &pendingRel{key: k, props: r.Properties, confidence: r.Confidence, chunks: r.ChunkIDs, inputs: []int{i}}
		byKey[k] = p
		out = append(out, p)
	}
	return out, nil
}

// applyRelationships writes the pending relationships like applyObjects.
func (s *Service) applyRelationships(ctx context.Context, tx pgx.Tx, project uuid.UUID, jobID *uuid.UUID, pending []*pendingRel, now time.Time) error {
	slices.SortStableFunc(pending, func(a, b *pendingRel) int {
		if c := strings.Compare(a.key.typ, b.key.typ); c != 0 {
			return c
		}
		if c := strings.Compare(a.key.source.String(), b.key.source.String()); c != 0 {
			return c
		}
		return strings.Compare(a.key.target.String(), b.key.target.String())
	})
	remaining := pending
	var updates []*pendingRel
	for round := 0; len(remaining) > 0; round++ {
		if round == applyAttempts {
			return fmt.Errorf("apply relationships: %d relationships still conflict after %d rounds", len(remaining), applyAttempts)
		}
		existing, err := relationshipsLockByKeys(ctx, tx, project, remaining)
		if err != nil {
			return err
		}
		var inserts []*pendingRel
		for _, p := range remaining {
			e, ok := existing[p.key]
			if !ok {
				p.id, p.created = newID(), true
				inserts = append(inserts, p)
				continue
			}
			p.id = e.ID
			props := mergeProps(e.Properties, p.props)
			confidence := maxConfidence(e.Confidence, p.confidence)
			p.updated = !jsonEqual(props, e.Properties) || !sameConfidence(confidence, e.Confidence)
			p.props, p.confidence = props, confidence
			if p.updated || (jobID != nil && (e.ExtractionJobID == nil || *e.ExtractionJobID != *jobID)) {
				updates = append(updates, p)
			}
		}
		inserted, err := relationshipsInsertBatch(ctx, tx, project, jobID, inserts, now)
		if err != nil {
			return err
		}
		remaining = remaining[:0:0]
		for _, p := range inserts {
			if !inserted[p.id] {
				p.created = false
				remaining = append(remaining, p)
			}
		}
	}
	return relationshipsUpdateBatch(ctx, tx, project, jobID, updates, now)
}
