package templatepack

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/graphmill/graphmill/internal/postgres"
)

type packRow struct {
	ID                uuid.UUID  `db:"id"`
	ProjectID         *uuid.UUID `db:"project_id"`
	Name              string     `db:"name"`
	Version           string     `db:"version"`
	Description       *string    `db:"description"`
	Source            string     `db:"source"`
	ObjectTypes       []byte     `db:"object_types"`
	RelationshipTypes []byte     `db:"relationship_types"`
	CreatedAt         time.Time  `db:"created_at"`
	UpdatedAt         time.Time  `db:"updated_at"`
}

func (r packRow) toPack() (Pack, error) {
	p := Pack{
		ID: r.ID, ProjectID: r.ProjectID, Name: r.Name, Version: r.Version, Source: r.Source,
		CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(),
	}
	if r.Description != nil {
		p.Description = *r.Description
	}
	if err := json.Unmarshal(r.ObjectTypes, &p.ObjectTypes); err != nil {
		return Pack{}, fmt.Errorf("decode object types of pack %s: %w", r.ID, err)
	}
	if err := json.Unmarshal(r.RelationshipTypes, &p.RelationshipTypes); err != nil {
		return Pack{}, fmt.Errorf("decode relationship types of pack %s: %w", r.ID, err)
	}
	p.fillLists()
	return p, nil
}

type installedRow struct {
	packRow
	InstalledAt time.Time  `db:"installed_at"`
	InstalledBy *uuid.UUID `db:"installed_by"`
	postgres.Total
}

func (r installedRow) toInstalled() (InstalledPack, error) {
	p, err := r.toPack()
	if err != nil {
		return InstalledPack{}, err
	}
	return InstalledPack{Pack: p, InstalledAt: r.InstalledAt.UTC(), InstalledBy: r.InstalledBy}, nil
}

type listRow struct {
	packRow
	postgres.Total
}

const packColumns = `p.id, p.project_id, p.name, p.version, p.description, p.source, p.object_types, p.relationship_types, p.created_at, p.updated_at`

// packGet returns a pack by id.
func packGet(ctx context.Context, db postgres.DBTX, id uuid.UUID) (Pack, error) {
	r, err := postgres.One[packRow](ctx, db, ErrNotFound, `SELECT `+packColumns+` FROM template_packs p WHERE p.id = $1`, id)
	if err != nil {
		return Pack{}, fmt.Errorf("get template pack: %w", err)
	}
	return r.toPack()
}

// packGetForUpdate returns pack id, locked.
func packGetForUpdate(ctx context.Context, db postgres.DBTX, id uuid.UUID) (Pack, error) {
	r, err := postgres.One[packRow](ctx, db, ErrNotFound, `SELECT `+packColumns+` FROM template_packs p WHERE p.id = $1 FOR UPDATE`, id)
	if err != nil {
		return Pack{}, fmt.Errorf("lock template pack: %w", err)
	}
	return r.toPack()
}

// packGetBuiltinForUpdate returns the built-in pack called name, locked.
func packGetBuiltinForUpdate(ctx context.Context, db postgres.DBTX, name string) (Pack, error) {
	r, err := postgres.One[packRow](ctx, db, ErrNotFound, `SELECT `+packColumns+` FROM template_packs p WHERE p.project_id IS NULL AND lower(p.name) = lower($1) FOR UPDATE`, name)
	if err != nil {
		return Pack{}, fmt.Errorf("get built-in template pack: %w", err)
	}
	return r.toPack()
}

// packVisibleFilter is the SQL condition of packs visible from the
// projects in $1: built-in packs and the packs of those projects'
// organizations.
const packVisibleFilter = `(p.project_id IS NULL OR p.project_id IN (
	SELECT o.id FROM projects o WHERE o.deleted_at IS NULL AND o.org_id IN (SELECT v.org_id FROM projects v WHERE v.id = ANY($1))))`

// packList pages the packs visible from projects: built-in first, then by
// name.
func packList(ctx context.Context, db postgres.DBTX, projects []uuid.UUID, limit, offset int) ([]Pack, int, error) {
	rows, _ := db.Query(ctx, `SELECT `+packColumns+`, count(*) OVER () AS total FROM template_packs p
		WHERE `+packVisibleFilter+`
		ORDER BY p.project_id IS NOT NULL, lower(p.name), p.id LIMIT $2 OFFSET $3`, projects, limit, offset)
	out, total, err := postgres.TryCollectPage(rows, listRow.toPack)
	if err == nil {
		total, err = postgres.TotalPastEnd(ctx, db, len(out), offset, total, `SELECT count(*) FROM template_packs p WHERE `+packVisibleFilter, projects)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("list template packs: %w", err)
	}
	return out, total, nil
}

// packVisible reports whether pack id is visible from projects.
func packVisible(ctx context.Context, db postgres.DBTX, projects []uuid.UUID, id uuid.UUID) (bool, error) {
	var ok bool
	err := db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM template_packs p WHERE p.id = $2 AND `+packVisibleFilter+`)`, projects, id).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("check template pack: %w", err)
	}
	return ok, nil
}

// packInsert stores a new pack.
func packInsert(ctx context.Context, db postgres.DBTX, p Pack) error {
	ot, rt, err := encodeTypes(p)
	if err != nil {
		return err
	}
	_, err = db.Exec(ctx, `INSERT INTO template_packs (id, project_id, name, version, description, source, object_types, relationship_types, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9)`,
		p.ID, p.ProjectID, p.Name, p.Version, postgres.NullIfEmpty(p.Description), p.Source, ot, rt, p.CreatedAt)
	if postgres.IsUniqueViolation(err, "template_packs_project_name") {
		return ErrNameTaken
	}
	if err != nil {
		return fmt.Errorf("insert template pack: %w", err)
	}
	return nil
}

// packUpdate replaces a pack's definition and version.
func packUpdate(ctx context.Context, db postgres.DBTX, p Pack) error {
	ot, rt, err := encodeTypes(p)
	if err != nil {
		return err
	}
	_, err = db.Exec(ctx, `UPDATE template_packs SET name = $2, version = $3, description = $4, source = $5,
		object_types = $6, relationship_types = $7, updated_at = $8 WHERE id = $1`,
		p.ID, p.Name, p.Version, postgres.NullIfEmpty(p.Description), p.Source, ot, rt, p.UpdatedAt)
	if postgres.IsUniqueViolation(err, "template_packs_project_name") {
		return ErrNameTaken
	}
	if err != nil {
		return fmt.Errorf("update template pack: %w", err)
	}
	return nil
}

// encodeTypes is the JSON of p's object and relationship types.
func encodeTypes(p Pack) (objects, rels []byte, err error) {
	if objects, err = json.Marshal(p.ObjectTypes); err != nil {
		return nil, nil, fmt.Errorf("encode object types: %w", err)
	}
	if rels, err = json.Marshal(p.RelationshipTypes); err != nil {
		return nil, nil, fmt.Errorf("encode relationship types: %w", err)
	}
	return objects, rels, nil
}

// installedList pages the packs installed in project, in install order.
func installedList(ctx context.Context, db postgres.DBTX, project uuid.UUID, limit, offset int) ([]InstalledPack, int, error) {
	const from = `FROM project_template_packs i JOIN template_packs p ON p.id = i.pack_id WHERE i.project_id = $1`
	rows, _ := db.Query(ctx, `SELECT `+packColumns+`, i.installed_at, i.installed_by, count(*) OVER () AS total
		`+from+` ORDER BY i.installed_at, p.id LIMIT $2 OFFSET $3`, project, limit, offset)
	out, total, err := postgres.TryCollectPage(rows, installedRow.toInstalled)
	if err == nil {
		total, err = postgres.TotalPastEnd(ctx, db, len(out), offset, total, `SELECT count(*) `+from, project)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("list installed template packs: %w", err)
	}
	return out, total, nil
}

// installedGet returns pack id as installed in project.
func installedGet(ctx context.Context, db postgres.DBTX, project, id uuid.UUID) (InstalledPack, error) {
	r, err := postgres.One[installedRow](ctx, db, ErrNotInstalled, `SELECT `+packColumns+`, i.installed_at, i.installed_by, 0 AS total
		FROM project_template_packs i JOIN template_packs p ON p.id = i.pack_id
		WHERE i.project_id = $1 AND i.pack_id = $2`, project, id)
	if err != nil {
		return InstalledPack{}, fmt.Errorf("get installed template pack: %w", err)
	}
	return r.toInstalled()
}

// installedPacks returns every pack installed in project, in install
// order (for the effective types).
func installedPacks(ctx context.Context, db postgres.DBTX, project uuid.UUID) ([]Pack, error) {
	rows, _ := db.Query(ctx, `SELECT `+packColumns+`
		FROM project_template_packs i JOIN template_packs p ON p.id = i.pack_id
		WHERE i.project_id = $1 ORDER BY i.installed_at, p.id`, project)
	out, err := postgres.TryCollectAs(rows, packRow.toPack)
	if err != nil {
		return nil, fmt.Errorf("load installed template packs: %w", err)
	}
	return out, nil
}

// install records pack id as installed in project; it reports false when
// it already was.
func install(ctx context.Context, db postgres.DBTX, project, id uuid.UUID, by *uuid.UUID, now time.Time) (bool, error) {
	return postgres.ExecOne(ctx, db, "install template pack", `INSERT INTO project_template_packs (project_id, pack_id, installed_by, installed_at)
		VALUES ($1, $2, $3, $4) ON CONFLICT (project_id, pack_id) DO NOTHING`, project, id, by, now)
}

// uninstall removes pack id from project; false when it was not installed.
func uninstall(ctx context.Context, db postgres.DBTX, project, id uuid.UUID) (bool, error) {
	return postgres.ExecOne(ctx, db, "uninstall template pack", `DELETE FROM project_template_packs WHERE project_id = $1 AND pack_id = $2`, project, id)
}

// projectOrgOf returns the organization of a live project.
func projectOrgOf(ctx context.Context, db postgres.DBTX, project uuid.UUID) (uuid.UUID, error) {
	org, err := postgres.One[uuid.UUID](ctx, db, ErrProjectRequired, `SELECT org_id FROM projects WHERE id = $1 AND deleted_at IS NULL`, project)
	if err != nil {
		return uuid.Nil, fmt.Errorf("get project: %w", err)
	}
	return org, nil
}

func packOrg(ctx context.Context, db postgres.DBTX, id uuid.UUID) (uuid.UUID, error) {
	org, err := postgres.One[*uuid.UUID](ctx, db, ErrNotFound,
		`SELECT o.org_id FROM template_packs p LEFT JOIN projects o ON o.id = p.project_id WHERE p.id = $1`, id)
	return postgres.Value(org), err
}

// fillLists makes p's nil lists empty, so that they are [] in JSON.
func (p *Pack) fillLists() {
	if p.ObjectTypes == nil {
		p.ObjectTypes = []ObjectType{}
	}
	if p.RelationshipTypes == nil {
		p.RelationshipTypes = []RelationshipType{}
	}
	for i := range p.ObjectTypes {
		if p.ObjectTypes[i].Examples == nil {
			p.ObjectTypes[i].Examples = []map[string]any{}
		}
	}
}
