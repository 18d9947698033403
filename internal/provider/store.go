package provider

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/graphmill/graphmill/internal/postgres"
)

type modelRow struct {
	ID               uuid.UUID  `db:"id"`
	Provider         string     `db:"provider"`
	ModelName        string     `db:"model_name"`
	ModelType        string     `db:"model_type"`
	DisplayName      *string    `db:"display_name"`
	Dimension        *int       `db:"dimension"`
	InputTokenLimit  *int       `db:"input_token_limit"`
	OutputTokenLimit *int       `db:"output_token_limit"`
	PriceText        *float64   `db:"price_text"`
	PriceImage       *float64   `db:"price_image"`
	PriceVideo       *float64   `db:"price_video"`
	PriceAudio       *float64   `db:"price_audio"`
	PriceOutput      *float64   `db:"price_output"`
	RPM              *int       `db:"rpm"`
	TPM              *int       `db:"tpm"`
	IsDefault        bool       `db:"is_default"`
	LastSynced       time.Time  `db:"last_synced"`
	OrgID            *uuid.UUID `db:"org_id"`
}

func (r modelRow) toModel() Model {
	m := Model{
		ID: r.ID, Provider: r.Provider, ModelName: r.ModelName, ModelType: r.ModelType, DisplayName: postgres.Value(r.DisplayName),
		Dimension: postgres.Value(r.Dimension), InputTokenLimit: postgres.Value(r.InputTokenLimit), OutputTokenLimit: postgres.Value(r.OutputTokenLimit),
		IsDefault: r.IsDefault, LastSynced: r.LastSynced.UTC(), rpm: postgres.Value(r.RPM), tpm: postgres.Value(r.TPM),
		org: postgres.Value(r.OrgID),
	}
	if r.PriceText != nil || r.PriceOutput != nil {
		m.Prices = &Prices{
			Text: postgres.Value(r.PriceText), Image: postgres.Value(r.PriceImage), Video: postgres.Value(r.PriceVideo),
			Audio: postgres.Value(r.PriceAudio), Output: postgres.Value(r.PriceOutput),
		}
	}
	return m
}

const modelColumns = `id, provider, model_name, model_type, display_name, dimension, input_token_limit, output_token_limit,
	price_text, price_image, price_video, price_audio, price_output, rpm, tpm, is_default, last_synced, org_id`

// modelsList lists the models of provider seen by org: the shared catalog
// and org's own rows (uuid.Nil: the shared catalog only), an org row
// replacing a shared one of the same name.
func modelsList(ctx context.Context, db postgres.DBTX, org uuid.UUID, provider, modelType string) ([]Model, error) {
	rows, _ := db.Query(ctx, `SELECT `+modelColumns+` FROM (
			SELECT DISTINCT ON (model_name) * FROM provider_models
			WHERE provider = $1 AND ($2 = '' OR model_type = $2) AND (org_id IS NULL OR org_id = $3)
			ORDER BY model_name, org_id NULLS LAST) m
		ORDER BY model_type, is_default DESC, model_name`, provider, modelType, org)
	out, err := postgres.CollectAs(rows, modelRow.toModel)
	if err != nil {
		return nil, fmt.Errorf("list models: %w", err)
	}
	return out, nil
}

// modelGet finds a model as org sees it (its own row first, else the
// shared one); found is false when neither exists.
func modelGet(ctx context.Context, db postgres.DBTX, org uuid.UUID, provider, name string) (Model, bool, error) {
	return modelWhere(ctx, db, `model_name = $2 AND (org_id IS NULL OR org_id = $3) ORDER BY org_id NULLS LAST LIMIT 1`, provider, name, org)
}

// modelDefault finds a provider's default model of a type (only shared
// rows are defaults); found is false when it has none.
func modelDefault(ctx context.Context, db postgres.DBTX, provider, modelType string) (Model, bool, error) {
	return modelWhere(ctx, db, `model_type = $2 AND is_default`, provider, modelType)
}

// modelWhere finds the one model of provider ($1) that cond matches.
func modelWhere(ctx context.Context, db postgres.DBTX, cond string, args ...any) (Model, bool, error) {
	r, err := postgres.One[modelRow](ctx, db, nil, `SELECT `+modelColumns+` FROM provider_models WHERE provider = $1 AND `+cond, args...)
	if err != nil {
		return Model{}, false, fmt.Errorf("get model: %w", err)
	}
	return r.toModel(), r.ID != uuid.Nil, nil
}

// syncedModel is one entry of a provider's model list.
type syncedModel struct {
	Name, DisplayName, Type string
	InputLimit, OutputLimit int
	Dimension               int
}

// modelsUpsert records a provider's model list in org's rows (uuid.Nil:
// the shared catalog): new models are added, known ones get their names
// and limits refreshed (prices and rates are kept), and every listed
// model's lastSynced moves to now.
func modelsUpsert(ctx context.Context, db postgres.DBTX, org uuid.UUID, provider string, list []syncedModel, now time.Time) (int, error) {
	for _, m := range list {
		_, err := db.Exec(ctx, `INSERT INTO provider_models (id, provider, model_name, model_type, display_name, dimension, input_token_limit, output_token_limit, last_synced, org_id)
			VALUES ($1, $2, $3, $4, NULLIF($5, ''), NULLIF($6, 0), NULLIF($7, 0), NULLIF($8, 0), $9, NULLIF($10, '00000000-0000-0000-0000-000000000000'::uuid))
			ON CONFLICT ON CONSTRAINT provider_models_name DO UPDATE SET
				model_type = CASE WHEN provider_models.type_fixed THEN provider_models.model_type ELSE EXCLUDED.model_type END,
				display_name = COALESCE(EXCLUDED.display_name, provider_models.display_name),
				dimension = COALESCE(EXCLUDED.dimension, provider_models.dimension),
				input_token_limit = COALESCE(EXCLUDED.input_token_limit, provider_models.input_token_limit),
				output_token_limit = COALESCE(EXCLUDED.output_token_limit, provider_models.output_token_limit),
				last_synced = EXCLUDED.last_synced`,
			uuid.Must(uuid.NewV7()), provider, m.Name, m.Type, m.DisplayName, m.Dimension, m.InputLimit, m.OutputLimit, now, org)
		if err != nil {
			return 0, fmt.Errorf("record model %s: %w", m.Name, err)
		}
	}
	return len(list), nil
}

// modelFixType records name, in org's rows (uuid.Nil: the shared
// catalog), as a model of modelType whose type a refresh keeps
// (type_fixed), adding it when they lack it.
func modelFixType(ctx context.Context, db postgres.DBTX, org uuid.UUID, provider, name, modelType string, now time.Time) error {
	_, err := db.Exec(ctx, `INSERT INTO provider_models (id, provider, model_name, model_type, display_name, type_fixed, last_synced, org_id)
		VALUES ($1, $2, $3, $4, $3, true, $5, NULLIF($6, '00000000-0000-0000-0000-000000000000'::uuid))
		ON CONFLICT ON CONSTRAINT provider_models_name DO UPDATE SET model_type = EXCLUDED.model_type, type_fixed = true`,
		uuid.Must(uuid.NewV7()), provider, name, modelType, now, org)
	if err != nil {
		return fmt.Errorf("set model type of %s: %w", name, err)
	}
	return nil
}

// credentialRow is a credential with its sealed secret (pgx matches the
// columns to Credential's fields by name).
type credentialRow struct {
	Credential
	Secret string `db:"secret"`
}

//nolint:gosec // G101: column names, not a credential
const credentialColumns = `id, org_id, provider, secret, COALESCE(gcp_project, '') AS gcp_project, COALESCE(location, '') AS location,
	created_at, updated_at`

// credentialID returns the id of an organization's credential row, a new
// one when there is none: the id is sealed into the secret's additional
// data, so it must be known before the secret is sealed.
func credentialID(ctx context.Context, db postgres.DBTX, org uuid.UUID, provider string) (uuid.UUID, error) {
	id, err := postgres.One[uuid.UUID](ctx, db, nil, `SELECT id FROM org_provider_credentials WHERE org_id = $1 AND provider = $2`, org, provider)
	if err != nil {
		return uuid.Nil, fmt.Errorf("look up credential: %w", err)
	}
	if id == uuid.Nil {
		return uuid.Must(uuid.NewV7()), nil
	}
	return id, nil
}

func credentialPut(ctx context.Context, db postgres.DBTX, id, org uuid.UUID, provider, sealed, gcpProject, location string, now time.Time) error {
	_, err := db.Exec(ctx, `INSERT INTO org_provider_credentials (id, org_id, provider, secret, gcp_project, location, created_at, updated_at)
		VALUES ($1, $2, $3, $4, NULLIF($5, ''), NULLIF($6, ''), $7, $7)
		ON CONFLICT (org_id, provider) DO UPDATE SET secret = EXCLUDED.secret, gcp_project = EXCLUDED.gcp_project,
			location = EXCLUDED.location, updated_at = EXCLUDED.updated_at`,
		id, org, provider, sealed, gcpProject, location, now)
	if err != nil {
		return fmt.Errorf("store credential: %w", err)
	}
	return nil
}

func credentialDelete(ctx context.Context, db postgres.DBTX, org uuid.UUID, provider string) (bool, error) {
	return postgres.ExecOne(ctx, db, "delete credential", `DELETE FROM org_provider_credentials WHERE org_id = $1 AND provider = $2`, org, provider)
}

func credentialsList(ctx context.Context, db postgres.DBTX, org uuid.UUID) ([]credentialRow, error) {
	rows, _ := db.Query(ctx, `SELECT `+credentialColumns+` FROM org_provider_credentials WHERE org_id = $1 ORDER BY provider`, org)
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[credentialRow])
	if err != nil {
		return nil, fmt.Errorf("list credentials: %w", err)
	}
	return list, nil
}

func orgModelsPut(ctx context.Context, db postgres.DBTX, org uuid.UUID, provider, embedding, generative string, now time.Time) (OrgModels, error) {
	var m OrgModels
	var emb, gen *string
	err := db.QueryRow(ctx, `INSERT INTO org_provider_models (org_id, provider, embedding_model, generative_model, created_at, updated_at)
		VALUES ($1, $2, NULLIF($3, ''), NULLIF($4, ''), $5, $5)
		ON CONFLICT (org_id, provider) DO UPDATE SET
			embedding_model = COALESCE(EXCLUDED.embedding_model, org_provider_models.embedding_model),
			generative_model = COALESCE(EXCLUDED.generative_model, org_provider_models.generative_model),
			updated_at = EXCLUDED.updated_at
		RETURNING org_id, provider, embedding_model, generative_model, created_at, updated_at`,
		org, provider, embedding, generative, now).Scan(&m.OrgID, &m.Provider, &emb, &gen, &m.CreatedAt, &m.UpdatedAt)
	if err != nil {
		return OrgModels{}, fmt.Errorf("store default models: %w", err)
	}
	m.EmbeddingModel, m.GenerativeModel = postgres.Value(emb), postgres.Value(gen)
	m.CreatedAt, m.UpdatedAt = m.CreatedAt.UTC(), m.UpdatedAt.UTC()
	return m, nil
}

func orgModelsGet(ctx context.Context, db postgres.DBTX, org uuid.UUID, provider string) (embedding, generative string, err error) {
	type row struct {
		Embedding  *string `db:"embedding_model"`
		Generative *string `db:"generative_model"`
	}
	r, err := postgres.One[row](ctx, db, nil, `SELECT embedding_model, generative_model FROM org_provider_models WHERE org_id = $1 AND provider = $2`,
		org, provider)
	if err != nil {
		return "", "", fmt.Errorf("get default models: %w", err)
	}
	return postgres.Value(r.Embedding), postgres.Value(r.Generative), nil
}

// policyRow is a policy with the project's sealed credentials (nil when
// it has none; pgx matches the columns to Policy's fields by name).
type policyRow struct {
	Policy
	Secret *string `db:"secret"`
}

const (
	policyInsertColumns = `id, project_id, provider, policy, secret, gcp_project, location, embedding_model, generative_model, created_at, updated_at`
	policyColumns       = `id, project_id, provider, policy, secret, COALESCE(gcp_project, '') AS gcp_project, COALESCE(location, '') AS location,
	COALESCE(embedding_model, '') AS embedding_model, COALESCE(generative_model, '') AS generative_model, created_at, updated_at`
)

func policiesList(ctx context.Context, db postgres.DBTX, project uuid.UUID) ([]policyRow, error) {
	rows, _ := db.Query(ctx, `SELECT `+policyColumns+` FROM project_provider_policies WHERE project_id = $1 ORDER BY provider`, project)
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[policyRow])
	if err != nil {
		return nil, fmt.Errorf("list policies: %w", err)
	}
	return list, nil
}

// policyForUpdate locks project's policy row for provider; found is false
// when there is none.
func policyForUpdate(ctx context.Context, db postgres.DBTX, project uuid.UUID, provider string) (policyRow, bool, error) {
	r, err := postgres.One[policyRow](ctx, db, nil, `SELECT `+policyColumns+` FROM project_provider_policies
		WHERE project_id = $1 AND provider = $2 FOR UPDATE`, project, provider)
	if err != nil {
		return policyRow{}, false, fmt.Errorf("look up policy: %w", err)
	}
	return r, r.ID != uuid.Nil, nil
}

func policyPut(ctx context.Context, db postgres.DBTX, r policyRow) (Policy, error) {
	out, err := postgres.One[policyRow](ctx, db, nil, `INSERT INTO project_provider_policies (`+policyInsertColumns+`)
		VALUES ($1, $2, $3, $4, $5, NULLIF($6, ''), NULLIF($7, ''), NULLIF($8, ''), NULLIF($9, ''), $10, $10)
		ON CONFLICT (project_id, provider) DO UPDATE SET policy = EXCLUDED.policy, secret = EXCLUDED.secret,
			gcp_project = EXCLUDED.gcp_project, location = EXCLUDED.location, embedding_model = EXCLUDED.embedding_model,
			generative_model = EXCLUDED.generative_model, updated_at = EXCLUDED.updated_at
		RETURNING `+policyColumns,
		r.ID, r.ProjectID, r.Provider, r.Policy.Policy, r.Secret, r.GCPProject, r.Location, r.EmbeddingModel, r.GenerativeModel, r.CreatedAt)
	if err != nil {
		return Policy{}, fmt.Errorf("store policy: %w", err)
	}
	return out.Policy, nil
}

func projectOrg(ctx context.Context, db postgres.DBTX, project uuid.UUID) (uuid.UUID, error) {
	var org uuid.UUID
	err := db.QueryRow(ctx, `SELECT org_id FROM projects WHERE id = $1`, project).Scan(&org)
	if err != nil {
		return uuid.Nil, fmt.Errorf("look up project %s: %w", project, err)
	}
	return org, nil
}

// ledgerEntry is one provider call.
type ledgerEntry struct {
	OrgID, ProjectID  uuid.UUID
	Provider, Model   string
	Operation, Source string
	JobID             *uuid.UUID
	Items             int
	Text, Image       int64
	Video, Audio      int64
	Output            int64
	Duration          time.Duration
	Err               string
	Cost              float64
	At                time.Time
}

func ledgerInsert(ctx context.Context, db postgres.DBTX, e ledgerEntry) error {
	status := "ok"
	var errText *string
	if e.Err != "" {
		status, errText = "error", &e.Err
	}
	_, err := db.Exec(ctx, `INSERT INTO provider_usage (id, org_id, project_id, provider, model, operation, source, job_id, items,
			text_tokens, image_tokens, video_tokens, audio_tokens, output_tokens, duration_ms, status, error, estimated_cost_usd, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)`,
		uuid.Must(uuid.NewV7()), e.OrgID, e.ProjectID, e.Provider, e.Model, e.Operation, e.Source, e.JobID, e.Items,
		e.Text, e.Image, e.Video, e.Audio, e.Output, e.Duration.Milliseconds(), status, errText, e.Cost, e.At)
	if err != nil {
		return fmt.Errorf("record usage: %w", err)
	}
	return nil
}

// usageSum sums the ledger of a project or (project nil) an organization.
func usageSum(ctx context.Context, db postgres.DBTX, org uuid.UUID, project *uuid.UUID, since, until *time.Time) ([]UsageRow, error) {
	rows, _ := db.Query(ctx, `SELECT provider, model, sum(text_tokens)::bigint, sum(image_tokens)::bigint, sum(video_tokens)::bigint,
			sum(audio_tokens)::bigint, sum(output_tokens)::bigint, sum(estimated_cost_usd)::float8
		FROM provider_usage
		WHERE org_id = $1 AND ($2::uuid IS NULL OR project_id = $2)
		  AND ($3::timestamptz IS NULL OR created_at >= $3) AND ($4::timestamptz IS NULL OR created_at < $4)
		GROUP BY provider, model ORDER BY provider, model`, org, project, since, until)
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (UsageRow, error) {
		var u UsageRow
		err := row.Scan(&u.Provider, &u.Model, &u.TotalText, &u.TotalImage, &u.TotalVideo, &u.TotalAudio, &u.TotalOutput, &u.EstimatedCostUSD)
		return u, err
	})
	if err != nil {
		return nil, fmt.Errorf("sum usage: %w", err)
	}
	return out, nil
}
