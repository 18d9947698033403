-- +goose Up
-- The version history of template packs (issue 16): one row per version,
-- with the pack's full definition as of that version, what changed from
-- the previous one (changelog: {typesAdded, typesChanged, typesRemoved,
-- relationshipTypesAdded, relationshipTypesChanged,
-- relationshipTypesRemoved, packFieldsChanged}), who wrote it (NULL: the
-- server, e.g. the built-in pack's seeding) and when. number counts the
-- pack's versions from 1; version is the pack's version string then.
-- Versions are only ever added; they go with their pack.
CREATE TABLE template_pack_versions (
    pack_id             uuid NOT NULL REFERENCES template_packs (id) ON DELETE CASCADE,
    number              integer NOT NULL CHECK (number >= 1),
    version             text NOT NULL,
    name                text NOT NULL,
    description         text,
    source              text NOT NULL,
    object_types        jsonb NOT NULL,
    relationship_types  jsonb NOT NULL,
    changelog           jsonb NOT NULL,
    created_at          timestamptz NOT NULL,
    created_by          uuid REFERENCES users (id),
    PRIMARY KEY (pack_id, number),
    UNIQUE (pack_id, version)
);

-- Every existing pack gets its current definition as version 1, its
-- changelog listing every type as added (the earlier history is unknown).
INSERT INTO template_pack_versions (pack_id, number, version, name, description, source,
                                    object_types, relationship_types, changelog, created_at)
SELECT p.id, 1, p.version, p.name, p.description, p.source, p.object_types, p.relationship_types,
       jsonb_build_object(
           'typesAdded', coalesce((SELECT jsonb_agg(o ->> 'name' ORDER BY i) FROM jsonb_array_elements(p.object_types) WITH ORDINALITY AS t (o, i)), '[]'),
           'typesChanged', '[]'::jsonb,
           'typesRemoved', '[]'::jsonb,
           'relationshipTypesAdded', coalesce((SELECT jsonb_agg(jsonb_build_object('name', r ->> 'name', 'sourceType', r ->> 'sourceType', 'targetType', r ->> 'targetType') ORDER BY i)
                                               FROM jsonb_array_elements(p.relationship_types) WITH ORDINALITY AS t (r, i)), '[]'),
           'relationshipTypesChanged', '[]'::jsonb,
           'relationshipTypesRemoved', '[]'::jsonb,
           'packFieldsChanged', '[]'::jsonb),
       p.updated_at
FROM template_packs p;

-- +goose Down
DROP TABLE template_pack_versions;
