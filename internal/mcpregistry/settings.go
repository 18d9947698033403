package mcpregistry

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/postgres"
	"github.com/graphmill/graphmill/internal/secrets"
)

// toolConfig is what a setting's sealed config holds.
type toolConfig struct {
	APIKey string `json:"api_key,omitempty"`
}

// settingPlace binds a setting's sealed config to its natural key (level,
// owner and tool), which concurrent first writes of one setting share; a
// row id would differ between them, and the loser's upsert would store
// a config sealed for an id that is not its row's.
func settingPlace(level string, owner uuid.UUID, tool string) []byte {
	table, _ := settingTable(level)
	return secrets.Place(table, "config", owner.String()+"/"+tool)
}

// settingRowPlace is where configs were sealed before issue 11: bound to
// the row id. They still open, and are sealed for settingPlace when the
// setting is next written.
func settingRowPlace(level string, id uuid.UUID) []byte {
	table, _ := settingTable(level)
	return secrets.Place(table, "config", id.String())
}

func (s *Service) openConfig(level string, owner uuid.UUID, r settingRow) (toolConfig, error) {
	var c toolConfig
	if r.ConfigSealed == nil {
		return c, nil
	}
	raw, err := s.cfg.Box.Open(*r.ConfigSealed, settingPlace(level, owner, r.ToolName))
	if err != nil {
		raw, err = s.cfg.Box.Open(*r.ConfigSealed, settingRowPlace(level, r.ID))
	}
	if err != nil {
		return c, fmt.Errorf("open tool setting %s: %w", r.ID, err)
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return c, fmt.Errorf("decode tool setting %s: %w", r.ID, err)
	}
	return c, nil
}

func maskedConfig(c toolConfig) map[string]any {
	out := map[string]any{}
	if c.APIKey != "" {
		out[ConfigAPIKey] = Masked
	}
	return out
}

// globalKey is the deployment's key for a configurable tool.
func (s *Service) globalKey(tool string) string {
	if tool == WebSearchTool {
		return s.cfg.WebSearchAPIKey
	}
	return ""
}

// levelSettings are the tool settings of a project and of its
// organization, by tool name.
type levelSettings struct {
	projectID, orgID uuid.UUID
	project, org     map[string]settingRow
}

// settingsOf loads every tool setting of project and of its organization
// org (two queries, whatever the number of tools).
func settingsOf(ctx context.Context, db postgres.DBTX, project, org uuid.UUID) (levelSettings, error) {
	ls := levelSettings{projectID: project, orgID: org, project: map[string]settingRow{}, org: map[string]settingRow{}}
	for _, l := range []struct {
		level string
		owner uuid.UUID
		into  map[string]settingRow
	}{{LevelProject, project, ls.project}, {LevelOrg, org, ls.org}} {
		rows, err := settingsList(ctx, db, l.level, l.owner)
		if err != nil {
			return levelSettings{}, err
		}
		for _, r := range rows {
			l.into[r.ToolName] = r
		}
	}
	return ls, nil
}

// effective resolves built-in tool bt's setting from ls.
func (s *Service) effective(ls levelSettings, bt BuiltinTool) (Effective, error) {
	pr, pok := ls.project[bt.Name]
	or, ook := ls.org[bt.Name]
	e := Effective{InheritedFrom: LevelGlobal, Enabled: true}
	switch {
	case pok:
		e.InheritedFrom, e.Enabled = LevelProject, pr.Enabled
	case ook:
		e.InheritedFrom, e.Enabled = LevelOrg, or.Enabled
	}
	if !bt.Configurable {
		return e, nil
	}
	// The key comes from the nearest level that holds one.
	if pok {
		c, err := s.openConfig(LevelProject, ls.projectID, pr)
		if err != nil {
			return Effective{}, err
		}
		e.APIKey, e.keyFrom = c.APIKey, LevelProject
	}
	if e.APIKey == "" && ook {
		c, err := s.openConfig(LevelOrg, ls.orgID, or)
		if err != nil {
			return Effective{}, err
		}
		e.APIKey, e.keyFrom = c.APIKey, LevelOrg
	}
	if e.APIKey == "" {
		e.APIKey, e.keyFrom = s.globalKey(bt.Name), LevelGlobal
	}
	if e.APIKey == "" {
		e.Enabled = false
	}
	return e, nil
}

// projectSettings loads the settings that apply in project.
func (s *Service) projectSettings(ctx context.Context, db postgres.DBTX, project uuid.UUID) (levelSettings, error) {
	org, err := projectOrg(ctx, db, project)
	if err != nil {
		return levelSettings{}, err
	}
	return settingsOf(ctx, db, project, org)
}

// EnabledBuiltinTools reports, for every built-in tool, whether it is
// enabled in project (three queries for the whole catalogue).
func (s *Service) EnabledBuiltinTools(ctx context.Context, project uuid.UUID) (map[string]bool, error) {
	ls, err := s.projectSettings(ctx, s.cfg.Pool, project)
	if err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(s.builtin))
	for name, bt := range s.builtin {
		e, err := s.effective(ls, bt)
		if err != nil {
			return nil, err
		}
		out[name] = e.Enabled
	}
	return out, nil
}

// EffectiveSetting returns the setting a project's built-in tool runs
// with. Errors: not_found (unknown tool).
func (s *Service) EffectiveSetting(ctx context.Context, project uuid.UUID, tool string) (Effective, error) {
	bt, ok := s.builtin[tool]
	if !ok {
		return Effective{}, ErrUnknownBuiltin
	}
	ls, err := s.projectSettings(ctx, s.cfg.Pool, project)
	if err != nil {
		return Effective{}, err
	}
	return s.effective(ls, bt)
}

// builtinTools lists the built-in catalogue with each tool's effective
// setting, mirroring the catalogue into the server's tool rows so that
// every tool has a stable id.
func (s *Service) builtinTools(ctx context.Context, srv Server) ([]Tool, error) {
	live := make([]LiveTool, 0, len(s.cfg.Builtin))
	for _, bt := range s.cfg.Builtin {
		schema := bt.InputSchema
		if schema == nil {
			schema = map[string]any{"type": "object"}
		}
		live = append(live, LiveTool{ToolName: bt.Name, Description: bt.Description, InputSchema: schema})
	}
	var out []Tool
	err := postgres.WithTx(ctx, s.cfg.Pool, func(tx pgx.Tx) error {
		if _, _, _, err := toolsUpsert(ctx, tx, srv.ID, live, s.cfg.Now()); err != nil {
			return err
		}
		ls, err := s.projectSettings(ctx, tx, srv.ProjectID)
		if err != nil {
			return err
		}
		if out, err = toolsList(ctx, tx, srv.ID); err != nil {
			return err
		}
		for i := range out {
			if out[i], err = s.builtinTool(out[i], ls, s.builtin[out[i].ToolName]); err != nil {
				return err
			}
		}
		return nil
	})
	return out, err
}

// builtinTool is a built-in tool with its effective setting.
func (s *Service) builtinTool(t Tool, ls levelSettings, bt BuiltinTool) (Tool, error) {
	e, err := s.effective(ls, bt)
	if err != nil {
		return Tool{}, err
	}
	t.Enabled, t.InheritedFrom = e.Enabled, e.InheritedFrom
	configurable := bt.Configurable
	t.Configurable = &configurable
	if configurable {
		t.Config = maskedConfig(toolConfig{APIKey: e.APIKey})
	}
	return t, nil
}

// parseConfig reads a setting's config for tool bt, keeping the stored key
// where the given one is ***; an empty api_key removes it.
func parseConfig(bt BuiltinTool, given map[string]any, old toolConfig) (toolConfig, error) {
	if given == nil {
		return old, nil
	}
	if !bt.Configurable {
		return toolConfig{}, errs.Errorf(errs.Invalid, "the tool %s takes no config", bt.Name)
	}
	c := old
	for k, v := range given {
		if k != ConfigAPIKey {
			return toolConfig{}, errs.Errorf(errs.Invalid, "unknown config field %q: the only field is api_key", k)
		}
		str, ok := v.(string)
		if !ok && v != nil {
			return toolConfig{}, errs.New(errs.Invalid, "config.api_key must be a string")
		}
		switch {
		case str == Masked:
		case strings.ContainsAny(str, " \t\r\n") || len(str) > 1024:
			return toolConfig{}, errs.New(errs.Invalid, "config.api_key must be at most 1024 characters without whitespace")
		default:
			c.APIKey = str
		}
	}
	return c, nil
}

// putSetting saves a setting at level for owner (a project or an org).
func (s *Service) putSetting(ctx context.Context, level string, owner uuid.UUID, bt BuiltinTool, enabled *bool, config map[string]any) (ToolSetting, error) {
	var out ToolSetting
	err := postgres.WithTx(ctx, s.cfg.Pool, func(tx pgx.Tx) error {
		old, found, err := settingGet(ctx, tx, level, owner, bt.Name)
		if err != nil {
			return err
		}
		var oldConfig toolConfig
		id := old.ID
		if found {
			if oldConfig, err = s.openConfig(level, owner, old); err != nil {
				return err
			}
		} else {
			id = uuid.Must(uuid.NewV7())
			if s.cfg.beforeFirstWrite != nil {
				s.cfg.beforeFirstWrite(level)
			}
		}
		c, err := parseConfig(bt, config, oldConfig)
		if err != nil {
			return err
		}
		en := true
		if found {
			en = old.Enabled
		}
		if enabled != nil {
			en = *enabled
		}
		row := settingRow{ID: id, ToolName: bt.Name, Enabled: en, UpdatedAt: s.cfg.Now()}
		if c.APIKey != "" {
			raw, _ := json.Marshal(c) //nolint:gosec // G117: sealed right after, never sent or logged
			sealed := s.cfg.Box.Seal(raw, settingPlace(level, owner, bt.Name))
			row.ConfigSealed = &sealed
		}
		if err := settingPut(ctx, tx, level, owner, row); err != nil {
			return err
		}
		saved, _, err := settingGet(ctx, tx, level, owner, bt.Name)
		if err != nil {
			return err
		}
		out = ToolSetting{ToolName: bt.Name, Enabled: saved.Enabled, Config: maskedConfig(c), CreatedAt: saved.CreatedAt.UTC(), UpdatedAt: saved.UpdatedAt.UTC()}
		return nil
	})
	return out, err
}

func (s *Service) updateBuiltinTool(ctx context.Context, srv Server, toolID string, u ToolUpdate) (Tool, error) {
	// Make sure the catalogue rows exist, then find the tool by id or name.
	if _, err := s.builtinTools(ctx, srv); err != nil {
		return Tool{}, err
	}
	var r Tool
	var err error
	if tid, perr := uuid.Parse(toolID); perr == nil {
		r, err = toolGet(ctx, s.cfg.Pool, srv.ID, false, tid)
	} else {
		r, err = toolGet(ctx, s.cfg.Pool, srv.ID, true, toolID)
	}
	if err != nil {
		return Tool{}, err
	}
	bt, ok := s.builtin[r.ToolName]
	if !ok {
		return Tool{}, ErrToolNotFound
	}
	if u.Enabled == nil && u.Config == nil {
		return Tool{}, errs.New(errs.Invalid, "give enabled, config or both")
	}
	if _, err := s.putSetting(ctx, LevelProject, srv.ProjectID, bt, u.Enabled, u.Config); err != nil {
		return Tool{}, err
	}
	ls, err := s.projectSettings(ctx, s.cfg.Pool, srv.ProjectID)
	if err != nil {
		return Tool{}, err
	}
	return s.builtinTool(r, ls, bt)
}

// OrgToolSettings lists an organization's default tool settings.
func (s *Service) OrgToolSettings(ctx context.Context, org uuid.UUID) ([]ToolSetting, error) {
	rows, err := settingsList(ctx, s.cfg.Pool, LevelOrg, org)
	if err != nil {
		return nil, err
	}
	out := make([]ToolSetting, 0, len(rows))
	for _, r := range rows {
		c, err := s.openConfig(LevelOrg, org, r)
		if err != nil {
			return nil, err
		}
		out = append(out, ToolSetting{ToolName: r.ToolName, Enabled: r.Enabled, Config: maskedConfig(c), CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC()})
	}
	return out, nil
}

// PutOrgToolSetting sets an organization's default for a built-in tool
// (enabled nil: true for a new setting, else unchanged). Errors: not_found
// (unknown tool), invalid_argument.
func (s *Service) PutOrgToolSetting(ctx context.Context, org uuid.UUID, tool string, enabled *bool, config map[string]any) (ToolSetting, error) {
	bt, ok := s.builtin[tool]
	if !ok {
		return ToolSetting{}, ErrUnknownBuiltin
	}
	return s.putSetting(ctx, LevelOrg, org, bt, enabled, config)
}

// DeleteOrgToolSetting removes an organization's default; its projects
// fall back to the global setting. Errors: not_found.
func (s *Service) DeleteOrgToolSetting(ctx context.Context, org uuid.UUID, tool string) error {
	return s.deleteSetting(ctx, LevelOrg, org, tool, "organization")
}

// DeleteProjectToolSetting removes a project's setting of a built-in
// tool; the project falls back to its organization's default, else the
// global setting. Errors: not_found.
func (s *Service) DeleteProjectToolSetting(ctx context.Context, project uuid.UUID, tool string) error {
	return s.deleteSetting(ctx, LevelProject, project, tool, "project")
}

// deleteSetting removes the setting of a built-in tool at a level; noun
// names the owner in the not-found message.
func (s *Service) deleteSetting(ctx context.Context, level string, owner uuid.UUID, tool, noun string) error {
	if _, ok := s.builtin[tool]; !ok {
		return ErrUnknownBuiltin
	}
	ok, err := settingDelete(ctx, s.cfg.Pool, level, owner, tool)
	if err != nil {
		return err
	}
	if !ok {
		return errs.Errorf(errs.NotFound, "the %s has no setting for %s", noun, tool)
	}
	return nil
}

// MaxSearchResults bounds count in WebSearch.
const MaxSearchResults = 20

// braveResponse is the part of the Brave Search web API answer used.
type braveResponse struct {
	Web struct {
		Results []SearchResult `json:"results"`
	} `json:"web"`
}

// WebSearch runs a web search for a project with its effective web_search
// setting (count 0: 10). Errors: invalid_argument, failed_precondition (the
// tool is disabled, no key at any level, or the key was rejected),
// rate_limited, bad_gateway (the search API failed).
func (s *Service) WebSearch(ctx context.Context, project uuid.UUID, query string, count int) ([]SearchResult, error) {
	query = strings.TrimSpace(query)
	if query == "" || len(query) > 400 {
		return nil, errs.New(errs.Invalid, "query must be 1 to 400 characters")
	}
	if count == 0 {
		count = 10
	}
	if count < 1 || count > MaxSearchResults {
		return nil, errs.Errorf(errs.Invalid, "count must be between 1 and %d", MaxSearchResults)
	}
	e, err := s.EffectiveSetting(ctx, project, WebSearchTool)
	if err != nil {
		return nil, err
	}
	if !e.Enabled {
		if e.APIKey == "" {
			return nil, ErrNoSearchKey
		}
		return nil, errs.Errorf(errs.FailedPrecondition, "web_search is disabled by the %s setting", e.InheritedFrom)
	}
	u := strings.TrimRight(s.cfg.WebSearchBaseURL, "/") + "/res/v1/web/search?" +
		url.Values{"q": {query}, "count": {strconv.Itoa(count)}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("web search request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("X-Subscription-Token", e.APIKey)
	res, err := s.http.Do(req)
	if err != nil {
		if errs.CodeOf(err) == errs.FailedPrecondition {
			return nil, err
		}
		return nil, errs.New(errs.BadGateway, "the web search API is unreachable")
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, 4<<20))
	switch {
	case res.StatusCode == http.StatusUnauthorized || res.StatusCode == http.StatusForbidden:
		return nil, errs.Errorf(errs.FailedPrecondition, "the web search API rejected the API key of the %s setting (%d)", e.keyFrom, res.StatusCode)
	case res.StatusCode == http.StatusTooManyRequests:
		return nil, errs.New(errs.RateLimited, "the web search API's rate limit or quota is exhausted; try again later")
	case res.StatusCode >= 500:
		return nil, errs.Errorf(errs.BadGateway, "the web search API failed (%d)", res.StatusCode)
	case res.StatusCode != http.StatusOK:
		return nil, errs.Errorf(errs.BadGateway, "the web search API answered %d", res.StatusCode)
	}
	var br braveResponse
	if err := json.Unmarshal(body, &br); err != nil {
		return nil, errs.New(errs.BadGateway, "the web search API answered something that is not its JSON")
	}
	out := br.Web.Results
	if out == nil {
		out = []SearchResult{}
	}
	if len(out) > count {
		out = out[:count]
	}
	return out, nil
}
