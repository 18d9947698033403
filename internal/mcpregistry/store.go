package mcpregistry

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/graphmill/graphmill/internal/postgres"
)

type serverRow struct {
	ID            uuid.UUID `db:"id"`
	ProjectID     uuid.UUID `db:"project_id"`
	Name          string    `db:"name"`
	Enabled       bool      `db:"enabled"`
	Type          string    `db:"type"`
	Command       *string   `db:"command"`
	Args          []string  `db:"args"`
	EnvSealed     *string   `db:"env_sealed"`
	URL           *string   `db:"url"`
	HeadersSealed *string   `db:"headers_sealed"`
	VarsSealed    *string   `db:"vars_sealed"`
	CreatedAt     time.Time `db:"created_at"`
	UpdatedAt     time.Time `db:"updated_at"`
}

const serverColumns = `id, project_id, name, enabled, type, command, args, env_sealed, url, headers_sealed, vars_sealed, created_at, updated_at`

func serversList(ctx context.Context, db postgres.DBTX, project uuid.UUID, limit, offset int) ([]serverRow, int, error) {
	var total int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM mcp_servers WHERE project_id = $1`, project).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count mcp servers: %w", err)
	}
	rows, _ := db.Query(ctx, `SELECT `+serverColumns+` FROM mcp_servers WHERE project_id = $1
		ORDER BY type <> 'builtin', created_at, id LIMIT $2 OFFSET $3`, project, limit, offset)
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[serverRow])
	if err != nil {
		return nil, 0, fmt.Errorf("list mcp servers: %w", err)
	}
	return list, total, nil
}

// serverGet returns a project's server; lock takes its row lock for the
// rest of db's transaction. Errors: not_found.
func serverGet(ctx context.Context, db postgres.DBTX, project, id uuid.UUID, lock bool) (serverRow, error) {
	q := `SELECT ` + serverColumns + ` FROM mcp_servers WHERE id = $1 AND project_id = $2`
	if lock {
		q += ` FOR UPDATE`
	}
	r, err := postgres.One[serverRow](ctx, db, ErrServerNotFound, q, id, project)
	if err != nil {
		return serverRow{}, fmt.Errorf("get mcp server: %w", err)
	}
	return r, nil
}

// serverGetByName finds a project's server by name (the oldest of that
// name).
func serverGetByName(ctx context.Context, db postgres.DBTX, project uuid.UUID, name string) (serverRow, error) {
	r, err := postgres.One[serverRow](ctx, db, ErrServerNotFound, `SELECT `+serverColumns+` FROM mcp_servers
		WHERE project_id = $1 AND name = $2 ORDER BY created_at, id LIMIT 1`, project, name)
	if err != nil {
		return serverRow{}, fmt.Errorf("get mcp server: %w", err)
	}
	return r, nil
}

// serverProject returns the project of a server.
func serverProject(ctx context.Context, db postgres.DBTX, id uuid.UUID) (uuid.UUID, error) {
	return postgres.One[uuid.UUID](ctx, db, ErrServerNotFound, `SELECT project_id FROM mcp_servers WHERE id = $1`, id)
}

// serverInsert adds a server and returns the row written.
func serverInsert(ctx context.Context, db postgres.DBTX, r serverRow) (serverRow, error) {
	if r.Args == nil {
		r.Args = []string{}
	}
	out, err := postgres.One[serverRow](ctx, db, nil, `INSERT INTO mcp_servers (`+serverColumns+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) RETURNING `+serverColumns,
		r.ID, r.ProjectID, r.Name, r.Enabled, r.Type, r.Command, r.Args, r.EnvSealed, r.URL, r.HeadersSealed, r.VarsSealed, r.CreatedAt, r.UpdatedAt)
	if err != nil {
		return serverRow{}, fmt.Errorf("insert mcp server: %w", err)
	}
	return out, nil
}

// builtinEnsure creates the project's built-in record unless it exists.
func builtinEnsure(ctx context.Context, db postgres.DBTX, project uuid.UUID, now time.Time) error {
	_, err := db.Exec(ctx, `INSERT INTO mcp_servers (id, project_id, name, enabled, type, created_at, updated_at)
		VALUES ($1, $2, $3, true, 'builtin', $4, $4) ON CONFLICT (project_id) WHERE type = 'builtin' DO NOTHING`,
		uuid.Must(uuid.NewV7()), project, BuiltinName, now)
	if err != nil {
		return fmt.Errorf("create built-in mcp server: %w", err)
	}
	return nil
}

// serverUpdate writes a server's changeable columns and returns the row
// written.
func serverUpdate(ctx context.Context, db postgres.DBTX, r serverRow) (serverRow, error) {
	if r.Args == nil {
		r.Args = []string{}
	}
	out, err := postgres.One[serverRow](ctx, db, ErrServerNotFound, `UPDATE mcp_servers SET name = $2, enabled = $3, command = $4,
		args = $5, env_sealed = $6, url = $7, headers_sealed = $8, vars_sealed = $9, updated_at = $10 WHERE id = $1
		RETURNING `+serverColumns,
		r.ID, r.Name, r.Enabled, r.Command, r.Args, r.EnvSealed, r.URL, r.HeadersSealed, r.VarsSealed, r.UpdatedAt)
	if err != nil {
		return serverRow{}, fmt.Errorf("update mcp server: %w", err)
	}
	return out, nil
}

func serverDelete(ctx context.Context, db postgres.DBTX, id uuid.UUID) error {
	if _, err := db.Exec(ctx, `DELETE FROM mcp_servers WHERE id = $1`, id); err != nil {
		return fmt.Errorf("delete mcp server: %w", err)
	}
	return nil
}

type toolRow struct {
	ID          uuid.UUID `db:"id"`
	ServerID    uuid.UUID `db:"server_id"`
	ToolName    string    `db:"tool_name"`
	Description string    `db:"description"`
	InputSchema []byte    `db:"input_schema"`
	Enabled     bool      `db:"enabled"`
	CreatedAt   time.Time `db:"created_at"`
}

func (r toolRow) toTool() Tool {
	t := Tool{
		ID: r.ID, ServerID: r.ServerID, ToolName: r.ToolName, Description: r.Description,
		Enabled: r.Enabled, CreatedAt: r.CreatedAt.UTC(), InputSchema: map[string]any{},
	}
	_ = json.Unmarshal(r.InputSchema, &t.InputSchema)
	return t
}

const toolColumns = `id, server_id, tool_name, description, input_schema, enabled, created_at`

func toolsList(ctx context.Context, db postgres.DBTX, server uuid.UUID) ([]Tool, error) {
	rows, _ := db.Query(ctx, `SELECT `+toolColumns+` FROM mcp_server_tools WHERE server_id = $1 ORDER BY tool_name`, server)
	list, err := postgres.CollectAs(rows, toolRow.toTool)
	if err != nil {
		return nil, fmt.Errorf("list mcp tools: %w", err)
	}
	return list, nil
}

// toolGet returns a server's tool by id or (byName) by name. Errors:
// not_found.
func toolGet(ctx context.Context, db postgres.DBTX, server uuid.UUID, byName bool, key any) (Tool, error) {
	col := "id"
	if byName {
		col = "tool_name"
	}
	r, err := postgres.One[toolRow](ctx, db, ErrToolNotFound, `SELECT `+toolColumns+` FROM mcp_server_tools WHERE server_id = $1 AND `+col+` = $2`, server, key)
	if err != nil {
		return Tool{}, fmt.Errorf("get mcp tool: %w", err)
	}
	return r.toTool(), nil
}

// toolSetEnabled sets a server's tool's enabled flag and returns the tool.
// Errors: not_found.
func toolSetEnabled(ctx context.Context, db postgres.DBTX, server, id uuid.UUID, enabled bool) (Tool, error) {
	r, err := postgres.One[toolRow](ctx, db, ErrToolNotFound, `UPDATE mcp_server_tools SET enabled = $3 WHERE server_id = $1 AND id = $2
		RETURNING `+toolColumns, server, id, enabled)
	if err != nil {
		return Tool{}, fmt.Errorf("update mcp tool: %w", err)
	}
	return r.toTool(), nil
}

// toolsUpsert mirrors a server's catalogue: listed tools are added (enabled)
// or refreshed (their enabled choice kept), the others removed. It takes
// the server's row first (key share: an update of the server goes on), as
// the server's deletion does before its cascade takes the tools': a new
// tool's reference would otherwise wait for the deletion while holding a
// refreshed tool the deletion waits for (a deadlock). Errors: not_found
// (the server was deleted).
func toolsUpsert(ctx context.Context, db postgres.DBTX, server uuid.UUID, live []LiveTool, now time.Time) (added, updated, removed int, err error) {
	if _, err := postgres.One[int](ctx, db, ErrServerNotFound, `SELECT 1 FROM mcp_servers WHERE id = $1 FOR KEY SHARE`, server); err != nil {
		return 0, 0, 0, fmt.Errorf("lock mcp server: %w", err)
	}
	names := make([]string, len(live))
	for i, t := range live {
		names[i] = t.ToolName
		schema, err := json.Marshal(t.InputSchema)
		if err != nil {
			return 0, 0, 0, fmt.Errorf("encode input schema of %s: %w", t.ToolName, err)
		}
		schema = postgres.JSONB(schema)
		hints, err := json.Marshal(t.Hints)
		if err != nil {
			return 0, 0, 0, fmt.Errorf("encode annotations of %s: %w", t.ToolName, err)
		}
		var inserted bool
		var changed bool
		err = db.QueryRow(ctx, `WITH old AS (SELECT description, input_schema FROM mcp_server_tools WHERE server_id = $2 AND tool_name = $3)
			INSERT INTO mcp_server_tools (id, server_id, tool_name, description, input_schema, enabled, created_at, annotations)
			VALUES ($1, $2, $3, $4, $5, true, $6, $7)
			ON CONFLICT (server_id, tool_name) DO UPDATE SET description = EXCLUDED.description, input_schema = EXCLUDED.input_schema,
				annotations = EXCLUDED.annotations
			RETURNING (xmax = 0), COALESCE((SELECT description <> $4 OR input_schema <> $5::jsonb FROM old), false)`,
			uuid.Must(uuid.NewV7()), server, t.ToolName, t.Description, schema, now, hints).Scan(&inserted, &changed)
		if err != nil {
			return 0, 0, 0, fmt.Errorf("record mcp tool %s: %w", t.ToolName, err)
		}
		switch {
		case inserted:
			added++
		case changed:
			updated++
		}
	}
	tag, err := db.Exec(ctx, `DELETE FROM mcp_server_tools WHERE server_id = $1 AND NOT (tool_name = ANY($2))`, server, names)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("remove vanished mcp tools: %w", err)
	}
	return added, updated, int(tag.RowsAffected()), nil
}

// toolRefsList lists the enabled tools of a project's enabled external
// servers.
func toolRefsList(ctx context.Context, db postgres.DBTX, project uuid.UUID) ([]ToolRef, error) {
	rows, err := db.Query(ctx, `SELECT s.id, s.name, t.id, t.tool_name, t.description, t.input_schema, t.annotations
		FROM mcp_servers s JOIN mcp_server_tools t ON t.server_id = s.id
		WHERE s.project_id = $1 AND s.enabled AND t.enabled AND s.type <> 'builtin'
		ORDER BY s.name, s.id, t.tool_name`, project)
	if err != nil {
		return nil, fmt.Errorf("list tool refs: %w", err)
	}
	defer rows.Close()
	out := []ToolRef{}
	for rows.Next() {
		var r ToolRef
		var schema, hints []byte
		if err := rows.Scan(&r.ServerID, &r.ServerName, &r.ToolID, &r.ToolName, &r.Description, &schema, &hints); err != nil {
			return nil, fmt.Errorf("scan tool ref: %w", err)
		}
		r.InputSchema = map[string]any{}
		_ = json.Unmarshal(schema, &r.InputSchema)
		_ = json.Unmarshal(hints, &r.Hints)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list tool refs: %w", err)
	}
	return out, nil
}

// settingRow is a built-in tool setting at the project or organization
// level (owner is the project or organization id).
type settingRow struct {
	ID           uuid.UUID `db:"id"`
	ToolName     string    `db:"tool_name"`
	Enabled      bool      `db:"enabled"`
	ConfigSealed *string   `db:"config_sealed"`
	CreatedAt    time.Time `db:"created_at"`
	UpdatedAt    time.Time `db:"updated_at"`
}

// settingTable names the table and owner column of a level.
func settingTable(level string) (table, owner string) {
	if level == LevelOrg {
		return "mcp_org_tool_settings", "org_id"
	}
	return "mcp_project_tool_settings", "project_id"
}

func settingsList(ctx context.Context, db postgres.DBTX, level string, owner uuid.UUID) ([]settingRow, error) {
	table, col := settingTable(level)
	rows, _ := db.Query(ctx, `SELECT id, tool_name, enabled, config_sealed, created_at, updated_at FROM `+table+
		` WHERE `+col+` = $1 ORDER BY tool_name`, owner)
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[settingRow])
	if err != nil {
		return nil, fmt.Errorf("list tool settings: %w", err)
	}
	return list, nil
}

// settingGet returns the setting of tool, found false when there is none.
func settingGet(ctx context.Context, db postgres.DBTX, level string, owner uuid.UUID, tool string) (settingRow, bool, error) {
	table, col := settingTable(level)
	r, err := postgres.One[settingRow](ctx, db, nil, `SELECT id, tool_name, enabled, config_sealed, created_at, updated_at FROM `+table+
		` WHERE `+col+` = $1 AND tool_name = $2`, owner, tool)
	if err != nil {
		return settingRow{}, false, fmt.Errorf("get tool setting: %w", err)
	}
	return r, r.ID != uuid.Nil, nil
}

func settingPut(ctx context.Context, db postgres.DBTX, level string, owner uuid.UUID, r settingRow) error {
	table, col := settingTable(level)
	_, err := db.Exec(ctx, `INSERT INTO `+table+` (id, `+col+`, tool_name, enabled, config_sealed, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $6)
		ON CONFLICT (`+col+`, tool_name) DO UPDATE SET enabled = EXCLUDED.enabled, config_sealed = EXCLUDED.config_sealed,
			updated_at = EXCLUDED.updated_at`,
		r.ID, owner, r.ToolName, r.Enabled, r.ConfigSealed, r.UpdatedAt)
	if err != nil {
		return fmt.Errorf("save tool setting: %w", err)
	}
	return nil
}

func settingDelete(ctx context.Context, db postgres.DBTX, level string, owner uuid.UUID, tool string) (bool, error) {
	table, col := settingTable(level)
	return postgres.ExecOne(ctx, db, "delete tool setting", `DELETE FROM `+table+` WHERE `+col+` = $1 AND tool_name = $2`, owner, tool)
}

// projectOrg returns the organization of a project.
func projectOrg(ctx context.Context, db postgres.DBTX, project uuid.UUID) (uuid.UUID, error) {
	var org uuid.UUID
	if err := db.QueryRow(ctx, `SELECT org_id FROM projects WHERE id = $1`, project).Scan(&org); err != nil {
		return uuid.Nil, fmt.Errorf("get project organization: %w", err)
	}
	return org, nil
}
