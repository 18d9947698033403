package integration_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/integration"
)

// TestCreateChecksConfig: the provider type must be available, the name
// unique in the project, required fields present, no unknown field, each
// value of its type; the domain's own fields have their bounds.
func TestCreateChecksConfig(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	ctx := context.Background()
	tests := []struct {
		name, provider, detail string
		cfg                    map[string]json.RawMessage
	}{
		{name: "Bad Name", provider: "mem", detail: "name must be", cfg: b.cfg(nil)},
		// GET /api/integrations/available is the catalog: an integration of
		// that name could never be read in full.
		{name: "available", provider: "mem", detail: "name available is taken by GET /api/integrations/available", cfg: b.cfg(nil)},
		{name: "x", provider: "nope", detail: `provider_type "nope" is not an available integration`, cfg: b.cfg(nil)},
		{name: "x", provider: "mem", detail: "config field url is required for mem", cfg: map[string]json.RawMessage{"token": raw("t")}},
		{name: "x", provider: "mem", detail: "config field url is required for mem", cfg: map[string]json.RawMessage{"url": raw("")}},
		{name: "x", provider: "mem", detail: `config field "colour" is not a field of mem`, cfg: b.cfg(map[string]any{"colour": "red"})},
		{name: "x", provider: "mem", detail: "config field url must be an absolute URL", cfg: map[string]json.RawMessage{"url": raw("not a url")}},
		{name: "x", provider: "mem", detail: "config field url must be a URL string", cfg: map[string]json.RawMessage{"url": raw(5)}},
		{name: "x", provider: "mem", detail: "config field tags must be an array of strings", cfg: b.cfg(map[string]any{"tags": []int{1}})},
		{name: "x", provider: "mem", detail: "config field max_items must be an integer", cfg: b.cfg(map[string]any{"max_items": 1.5})},
		{name: "x", provider: "mem", detail: "config field verbose must be a boolean", cfg: b.cfg(map[string]any{"verbose": "yes"})},
		{name: "x", provider: "mem", detail: "max_items must be at least 1", cfg: b.cfg(map[string]any{"max_items": 0})},
		{name: "x", provider: "mem", detail: "sync_interval_minutes must be an integer from 5 to 525600 (minutes)", cfg: b.cfg(map[string]any{"sync_interval_minutes": 4})},
		// An integer of at least 5, past a year: the detail names the bound it breaks.
		{name: "x", provider: "mem", detail: "sync_interval_minutes must be an integer from 5 to 525600 (minutes)", cfg: b.cfg(map[string]any{"sync_interval_minutes": 153722868})},
		{name: "x", provider: "mem", detail: "config field max_items must be an integer from -2147483647 to 2147483647", cfg: b.cfg(map[string]any{"max_items": 10000000000})},
		{name: "x", provider: "mem", detail: "max_delete_fraction must be a number greater than 0 and at most 1", cfg: b.cfg(map[string]any{"max_delete_fraction": 1.5})},
	}
	for _, tt := range tests {
		_, err := b.svc.Create(ctx, b.project, nil, integration.CreateParams{Name: tt.name, DisplayName: "X", ProviderType: tt.provider, Config: tt.cfg})
		require.Equal(t, errs.Invalid, errs.CodeOf(err), "%s: %v", tt.detail, err)
		require.ErrorContains(t, err, tt.detail)
	}
	require.Zero(t, count(t, b.pool, `SELECT count(*) FROM integrations`), "nothing refused was stored")

	i := b.create(t, "docs", map[string]any{"sync_interval_minutes": 15, "tags": []string{"a"}})
	require.Equal(t, integration.StatusActive, i.Status)
	require.NotNil(t, i.NextSyncAt, "a schedule shows its next run")
	_, err := b.svc.Create(ctx, b.project, nil, integration.CreateParams{Name: "docs", DisplayName: "Again", ProviderType: "mem", Config: b.cfg(nil)})
	require.Equal(t, errs.Conflict, errs.CodeOf(err))
	// Another project may use the name.
	other := newProject(t, b.pool)
	_, err = b.svc.Create(ctx, other, nil, integration.CreateParams{Name: "docs", DisplayName: "Other", ProviderType: "mem", Config: b.cfg(nil)})
	require.NoError(t, err)
}

// TestConfigSealedAndMasked: the config is sealed at rest (the secret is
// nowhere in the row), the full view masks secrets to their first four
// characters and ***, the public view and the list carry no config.
func TestConfigSealedAndMasked(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	ctx := context.Background()
	created := b.create(t, "docs", nil)
	require.Equal(t, "tok-***", created.Config["token"])

	var row string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT row_to_json(i)::text FROM integrations i`).Scan(&row))
	require.NotContains(t, row, "tok-SECRET-123456")
	require.NotContains(t, row, "/list", "the whole config is sealed")

	full, err := b.svc.Get(ctx, b.project, "docs")
	require.NoError(t, err)
	require.Equal(t, "tok-***", full.Config["token"])
	require.JSONEq(t, `"`+b.site.URL+`/list"`, string(full.Config["url"].(json.RawMessage)))
	require.InDelta(t, 0.5, full.Config["max_delete_fraction"], 0)
	body, err := json.Marshal(full)
	require.NoError(t, err)
	require.NotContains(t, string(body), "SECRET")

	pub, err := b.svc.GetPublic(ctx, b.project, "docs")
	require.NoError(t, err)
	body, err = json.Marshal(pub)
	require.NoError(t, err)
	require.NotContains(t, string(body), "config")
	list, total, err := b.svc.List(ctx, b.project, 50, 0)
	require.NoError(t, err)
	require.Equal(t, 1, total)
	require.Nil(t, list[0].Config)

	_, err = b.svc.Get(ctx, newProject(t, b.pool), "docs")
	require.Equal(t, errs.NotFound, errs.CodeOf(err), "another project's integration is not found")
}

// TestUpdateKeepsMaskedSecret: a masked secret sent back keeps the stored
// one; a changed target needs the secret again (400 otherwise); a new
// secret replaces it.
func TestUpdateKeepsMaskedSecret(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	ctx := context.Background()
	b.create(t, "docs", nil)
	stored := func() string {
		t.Helper()
		res, err := b.svc.Test(ctx, b.project, "docs")
		require.NoError(t, err)
		require.True(t, res.Success, res.Message)
		b.hits.mu.Lock()
		defer b.hits.mu.Unlock()
		return b.hits.tokens[len(b.hits.tokens)-1]
	}

	// The full view sent back as it was: the secret is kept.
	name := "Renamed"
	_, err := b.svc.Update(ctx, b.project, "docs", integration.UpdateParams{DisplayName: &name, Config: map[string]json.RawMessage{
		"url": raw(b.site.URL + "/list"), "token": raw("tok-***"), "verbose": raw(true),
	}})
	require.NoError(t, err)
	require.Equal(t, "Bearer tok-SECRET-123456", stored())

	// A new target with the masked secret: refused, nothing changed.
	_, err = b.svc.Update(ctx, b.project, "docs", integration.UpdateParams{Config: map[string]json.RawMessage{
		"url": raw("https://elsewhere.test/list"), "token": raw("tok-***"),
	}})
	require.Equal(t, errs.Invalid, errs.CodeOf(err))
	require.ErrorContains(t, err, "changing config field url requires token again")
	full, err := b.svc.Get(ctx, b.project, "docs")
	require.NoError(t, err)
	require.JSONEq(t, `"`+b.site.URL+`/list"`, string(full.Config["url"].(json.RawMessage)))
	require.Equal(t, "Renamed", full.DisplayName)

	// A new target with the secret given again, and a new secret.
	_, err = b.svc.Update(ctx, b.project, "docs", integration.UpdateParams{Config: map[string]json.RawMessage{
		"url": raw(b.site.URL + "/other"), "token": raw("tok-NEW-SECRET-99"),
	}})
	require.NoError(t, err)
	require.Equal(t, "Bearer tok-NEW-SECRET-99", stored())

	// Status: only the three values.
	bad := "paused"
	_, err = b.svc.Update(ctx, b.project, "docs", integration.UpdateParams{Status: &bad})
	require.Equal(t, errs.Invalid, errs.CodeOf(err))
	inactive := integration.StatusInactive
	got, err := b.svc.Update(ctx, b.project, "docs", integration.UpdateParams{Status: &inactive})
	require.NoError(t, err)
	require.Equal(t, integration.StatusInactive, got.Status)
	_, err = b.svc.Sync(ctx, b.project, "docs", integration.TriggerManual, integration.SyncOptions{})
	require.Equal(t, errs.FailedPrecondition, errs.CodeOf(err), "an inactive integration does not sync")
}

// TestTestNeverEchoesSecrets: a failing test reports the connector's
// message with the secret redacted.
func TestTestNeverEchoesSecrets(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	ctx := context.Background()
	_, err := b.svc.Create(ctx, b.project, nil, integration.CreateParams{
		Name: "denied", DisplayName: "D", ProviderType: "mem",
		Config: map[string]json.RawMessage{"url": raw(b.site.URL + "/denied"), "token": raw("tok-SECRET-123456")},
	})
	require.NoError(t, err)
	res, err := b.svc.Test(ctx, b.project, "denied")
	require.NoError(t, err)
	require.False(t, res.Success)
	require.Equal(t, "listing answered 401 for token ***", res.Message)
}

// TestEgressRefusesPrivateAddress: a tenant's config pointing at a
// loopback address is refused by the egress guard, at test and at sync;
// the site is never reached.
func TestEgressRefusesPrivateAddress(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{allow: []string{}, start: true})
	ctx := context.Background()
	b.src.put("a", "# A\n\nalpha")
	b.create(t, "docs", nil)
	res, err := b.svc.Test(ctx, b.project, "docs")
	require.NoError(t, err)
	require.False(t, res.Success)
	require.Contains(t, res.Message, "refusing to connect")
	r := b.syncAndWait(t, "docs", integration.SyncOptions{})
	require.Equal(t, "failed", r.Status, "a refused destination fails at once")
	require.Contains(t, r.Error, "refusing to connect")
	require.Empty(t, b.synced(t))
	b.hits.mu.Lock()
	defer b.hits.mu.Unlock()
	require.Empty(t, b.hits.tokens, "the private address was never reached")
}
