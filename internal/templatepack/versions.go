package templatepack

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/postgres"
)

// ErrVersionNotFound answers a version a pack does not have.
var ErrVersionNotFound = errs.New(errs.NotFound, "template pack version not found")

// PackVersion is one version in a pack's history: what changed from the
// version before, when and by whom.
type PackVersion struct {
	Version   string     `json:"version"`
	CreatedAt time.Time  `json:"createdAt"`
	CreatedBy *uuid.UUID `json:"createdBy,omitempty" doc:"The user who wrote the version; absent when the server did (the built-in packs)."`
	Changelog Changelog  `json:"changelog"`
}

// PackVersionDetail is a version with the pack's full definition as of
// that version.
type PackVersionDetail struct {
	PackVersion
	Name              string             `json:"name"`
	Description       string             `json:"description,omitempty"`
	Source            string             `json:"source" enum:"builtin,discovery,manual"`
	ObjectTypes       []ObjectType       `json:"objectTypes"`
	RelationshipTypes []RelationshipType `json:"relationshipTypes"`
}

// ListVersions pages the history of a pack p can see, newest first.
// Errors: not_found.
func (s *Service) ListVersions(ctx context.Context, p *auth.Principal, id uuid.UUID, limit, offset int) ([]PackVersion, int, error) {
	if err := s.checkVisible(ctx, p, id); err != nil {
		return nil, 0, err
	}
	return versionList(ctx, s.pool, id, limit, offset)
}

// GetVersion returns version of a pack p can see, with its definition.
// Errors: not_found.
func (s *Service) GetVersion(ctx context.Context, p *auth.Principal, id uuid.UUID, version string) (PackVersionDetail, error) {
	if err := s.checkVisible(ctx, p, id); err != nil {
		return PackVersionDetail{}, err
	}
	return versionGet(ctx, s.pool, id, version)
}

type versionRow struct {
	Version   string     `db:"version"`
	CreatedAt time.Time  `db:"created_at"`
	CreatedBy *uuid.UUID `db:"created_by"`
	Changelog []byte     `db:"changelog"`
}

func (r versionRow) toVersion() (PackVersion, error) {
	v := PackVersion{Version: r.Version, CreatedAt: r.CreatedAt.UTC(), CreatedBy: r.CreatedBy, Changelog: newChangelog()}
	if err := json.Unmarshal(r.Changelog, &v.Changelog); err != nil {
		return PackVersion{}, fmt.Errorf("decode changelog of version %s: %w", r.Version, err)
	}
	return v, nil
}

type versionListRow struct {
	versionRow
	postgres.Total
}

type versionDetailRow struct {
	versionRow
	Name              string  `db:"name"`
	Description       *string `db:"description"`
	Source            string  `db:"source"`
	ObjectTypes       []byte  `db:"object_types"`
	RelationshipTypes []byte  `db:"relationship_types"`
}

func (r versionDetailRow) toDetail() (PackVersionDetail, error) {
	v, err := r.toVersion()
	if err != nil {
		return PackVersionDetail{}, err
	}
	p, err := packRow{Name: r.Name, Description: r.Description, Source: r.Source, ObjectTypes: r.ObjectTypes, RelationshipTypes: r.RelationshipTypes}.toPack()
	if err != nil {
		return PackVersionDetail{}, err
	}
	return PackVersionDetail{
		PackVersion: v, Name: p.Name, Description: p.Description, Source: p.Source,
		ObjectTypes: p.ObjectTypes, RelationshipTypes: p.RelationshipTypes,
	}, nil
}

const versionColumns = `v.version, v.created_at, v.created_by, v.changelog`

// versionInsert records p (as stored: version and updatedAt set) as its
// pack's next version. The caller holds the pack's row lock (or created
// it in this transaction).
func versionInsert(ctx context.Context, db postgres.DBTX, p Pack, log Changelog, by *uuid.UUID) error {
	ot, rt, err := encodeTypes(p)
	if err != nil {
		return err
	}
	cl, err := json.Marshal(log)
	if err != nil {
		return fmt.Errorf("encode changelog: %w", err)
	}
	_, err = db.Exec(ctx, `INSERT INTO template_pack_versions (pack_id, number, version, name, description, source,
			object_types, relationship_types, changelog, created_at, created_by)
		SELECT $1, coalesce(max(number), 0) + 1, $2, $3, $4, $5, $6, $7, $8, $9, $10
		FROM template_pack_versions WHERE pack_id = $1`,
		p.ID, p.Version, p.Name, postgres.NullIfEmpty(p.Description), p.Source, ot, rt, cl, p.UpdatedAt, by)
	if err != nil {
		return fmt.Errorf("insert template pack version: %w", err)
	}
	return nil
}

// versionList pages pack id's versions, newest first.
func versionList(ctx context.Context, db postgres.DBTX, id uuid.UUID, limit, offset int) ([]PackVersion, int, error) {
	rows, _ := db.Query(ctx, `SELECT `+versionColumns+`, count(*) OVER () AS total FROM template_pack_versions v
		WHERE v.pack_id = $1 ORDER BY v.number DESC LIMIT $2 OFFSET $3`, id, limit, offset)
	out, total, err := postgres.TryCollectPage(rows, versionListRow.toVersion)
	if err == nil {
		total, err = postgres.TotalPastEnd(ctx, db, len(out), offset, total, `SELECT count(*) FROM template_pack_versions WHERE pack_id = $1`, id)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("list template pack versions: %w", err)
	}
	return out, total, nil
}

// versionGet returns version of pack id with its definition.
func versionGet(ctx context.Context, db postgres.DBTX, id uuid.UUID, version string) (PackVersionDetail, error) {
	r, err := postgres.One[versionDetailRow](ctx, db, ErrVersionNotFound, `SELECT `+versionColumns+`,
		v.name, v.description, v.source, v.object_types, v.relationship_types
		FROM template_pack_versions v WHERE v.pack_id = $1 AND v.version = $2`, id, version)
	if err != nil {
		return PackVersionDetail{}, fmt.Errorf("get template pack version: %w", err)
	}
	return r.toDetail()
}
