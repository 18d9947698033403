package mcpregistry

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"
	"github.com/google/uuid"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/httpapi"
)

type (
	listIn struct {
		ProjectID string `query:"projectId" doc:"The project; else X-Project-ID or the token's project."`
		httpapi.PageParams
	}
	// ServerRef names a server in a path; the server's project is checked
	// against the caller, and a project the request names must be that
	// project. It is exported because huma reads only exported embedded
	// structs.
	ServerRef struct {
		ServerID      string `path:"serverId"`
		ProjectQuery  string `query:"projectId" doc:"Optional; must be the server's project."`
		ProjectHeader string `header:"X-Project-ID" doc:"Optional; must be the server's project."`
		OrgHeader     string `header:"X-Org-ID" doc:"Optional; must be the server's organization."`
	}
	serverIn struct {
		ServerRef
	}
	toolsIn struct {
		ServerRef
		httpapi.PageParams
	}
	createBody struct {
		Name    string            `json:"name" maxLength:"200"`
		Type    string            `json:"type" enum:"stdio,sse,http,builtin"`
		Enabled *bool             `json:"enabled,omitempty" doc:"Default true."`
		Command string            `json:"command,omitempty" maxLength:"1024"`
		Args    []string          `json:"args,omitempty" maxItems:"100"`
		Env     map[string]string `json:"env,omitempty" doc:"Stored sealed; returned as ***."`
		URL     string            `json:"url,omitempty" maxLength:"2048"`
		Headers map[string]string `json:"headers,omitempty" doc:"Stored sealed; returned as ***."`
	}
	createIn struct {
		ProjectID string `query:"projectId"`
		Body      createBody
	}
	patchBody struct {
		Name    *string            `json:"name,omitempty" maxLength:"200"`
		Type    *string            `json:"type,omitempty" doc:"Cannot change."`
		Enabled *bool              `json:"enabled,omitempty"`
		Command *string            `json:"command,omitempty" maxLength:"1024"`
		Args    *[]string          `json:"args,omitempty" maxItems:"100"`
		Env     *map[string]string `json:"env,omitempty" doc:"Replaces the env; a value of *** keeps the stored value of that name."`
		URL     *string            `json:"url,omitempty" maxLength:"2048"`
		Headers *map[string]string `json:"headers,omitempty" doc:"Replaces the headers; a value of *** keeps the stored value of that name."`
	}
	patchIn struct {
		ServerRef
		Body patchBody
	}
	toolPatchIn struct {
		ServerRef
		ToolID string `path:"toolId" doc:"The tool's id; for built-in tools also its name."`
		Body   struct {
			Enabled *bool          `json:"enabled,omitempty"`
			Config  map[string]any `json:"config,omitempty" doc:"Built-in configurable tools: api_key (stored sealed, returned as ***; *** keeps it, an empty string removes it)."`
		}
	}
	searchIn struct {
		Q      string `query:"q" maxLength:"200" doc:"Matches server names."`
		Cursor string `query:"cursor" maxLength:"500" doc:"The registry's nextCursor, for the next page."`
	}
	registryNameIn struct {
		Name string `path:"name" doc:"The server name, percent-encoded (io.github.owner%2Fserver)."`
	}
	registryPathIn struct {
		Namespace string `path:"namespace"`
		Name      string `path:"name"`
	}
	installIn struct {
		ProjectID string `query:"projectId"`
		Body      struct {
			ServerName string `json:"serverName" minLength:"3" maxLength:"200"`
			Config     struct {
				Env map[string]string `json:"env,omitempty" doc:"Variables for the server's package or remote; stored sealed."`
			} `json:"config,omitempty"`
		}
	}
	orgIn struct {
		OrgID string `path:"orgId"`
		httpapi.PageParams
	}
	orgToolIn struct {
		OrgID    string `path:"orgId"`
		ToolName string `path:"toolName"`
	}
	orgToolPutIn struct {
		OrgID    string `path:"orgId"`
		ToolName string `path:"toolName"`
		Body     struct {
			Enabled *bool          `json:"enabled,omitempty" doc:"Default true for a new setting."`
			Config  map[string]any `json:"config,omitempty" doc:"api_key for configurable tools; stored sealed, returned as ***."`
		}
	}
	projectToolIn struct {
		ProjectID string `path:"projectId"`
		ToolName  string `path:"toolName"`
	}
	noContent struct {
		Status int
	}
	liveTools struct {
		Tools []LiveTool `json:"tools"`
	}
)

// page cuts a list to the page.
func page[T any](items []T, p httpapi.PageParams) httpapi.List[T] {
	total := len(items)
	lo := min(p.Offset, total)
	hi := min(lo+p.Limit, total)
	return httpapi.NewList(items[lo:hi], total, p)
}

// Rules of the routes. Reading a project's servers and tools needs mcp:use
// (agents use them); changing them, inspecting and syncing (which start
// processes and open connections) need mcp:admin and the project admin
// role; stdio servers also pass CheckStdio. Organization defaults need
// mcp:admin and the organization admin role; a project's tool settings
// are changed through its built-in server's tools and removed by
// DELETE /api/admin/projects/{projectId}/tool-settings/{toolName}.
func rules() (read, write, registry, org auth.Rule) {
	return auth.Rule{Scope: auth.MCPUse, Resource: auth.Project, ProjectRole: auth.ProjectViewer},
		auth.Rule{Scope: auth.MCPAdmin, Resource: auth.Project, ProjectRole: auth.ProjectAdmin},
		auth.Rule{Scope: auth.MCPAdmin, Resource: auth.Authenticated},
		auth.Rule{Scope: auth.MCPAdmin, Resource: auth.Org, OrgRole: auth.OrgAdmin}
}

// orgAdmin reports whether p administers org.
func orgAdmin(p *auth.Principal, org uuid.UUID) bool {
	r := p.OrgRole(org)
	return r == auth.OrgAdmin || r == auth.OrgOwner
}

// Register adds the MCP server registry, official registry and tool
// settings routes.
func Register(api huma.API, svc *Service, guard *auth.Guard) {
	read, write, registry, org := rules()
	// Routes by server id take their project from the server and check it
	// like a project route.
	byID := func(rule auth.Rule) auth.Rule {
		return auth.Rule{Scope: rule.Scope, Resource: auth.Body, ProjectRole: rule.ProjectRole}
	}
	resolve := func(ctx context.Context, ref ServerRef, rule auth.Rule) (auth.Access, uuid.UUID, error) {
		id, err := uuid.Parse(ref.ServerID)
		if err != nil {
			return auth.Access{}, uuid.Nil, ErrServerNotFound
		}
		project, err := svc.ServerProject(ctx, id)
		if err != nil {
			return auth.Access{}, uuid.Nil, err
		}
		acc, err := guard.RequireProject(ctx, auth.PrincipalFrom(ctx), project, rule, ref.OrgHeader)
		if err != nil {
			if errs.CodeOf(err) == errs.NotFound {
				return auth.Access{}, uuid.Nil, ErrServerNotFound
			}
			return auth.Access{}, uuid.Nil, err
		}
		for _, named := range []string{ref.ProjectQuery, ref.ProjectHeader} {
			if named == "" {
				continue
			}
			if pid, err := uuid.Parse(named); err != nil || pid != project {
				return auth.Access{}, uuid.Nil, ErrServerNotFound
			}
		}
		return acc, id, nil
	}
	stdioCheck := func(ctx context.Context, org uuid.UUID) func() error {
		return func() error {
			p := auth.PrincipalFrom(ctx)
			return svc.CheckStdio(p.Superadmin, orgAdmin(p, org))
		}
	}

	huma.Register(api, httpapi.Op("mcp-servers-list", http.MethodGet, "/api/admin/mcp-servers",
		"List the project's MCP servers (the built-in one is created on first list)", read),
		func(ctx context.Context, in *listIn) (*httpapi.Out[httpapi.List[Server]], error) {
			list, total, err := svc.ListServers(ctx, auth.AccessFrom(ctx).ProjectID, in.Limit, in.Offset)
			if err != nil {
				return nil, err
			}
			return &httpapi.Out[httpapi.List[Server]]{Body: httpapi.NewList(list, total, in.PageParams)}, nil
		})

	huma.Register(api, httpapi.Op("mcp-servers-create", http.MethodPost, "/api/admin/mcp-servers",
		"Register an MCP server in the project (project admins; stdio per GRAPHMILL_MCP_STDIO)", write),
		func(ctx context.Context, in *createIn) (*httpapi.Created[Server], error) {
			b := in.Body
			if b.Type == TypeStdio {
				if err := stdioCheck(ctx, auth.AccessFrom(ctx).OrgID)(); err != nil {
					return nil, err
				}
			}
			srv, err := svc.CreateServer(ctx, auth.AccessFrom(ctx).ProjectID, ServerInput(b))
			if err != nil {
				return nil, err
			}
			return &httpapi.Created[Server]{Status: http.StatusCreated, Body: srv}, nil
		})

	huma.Register(api, httpapi.Op("mcp-servers-update", http.MethodPatch, "/api/admin/mcp-servers/{serverId}",
		"Change an MCP server; absent fields are unchanged (project admins)", byID(write)),
		func(ctx context.Context, in *patchIn) (*httpapi.Out[Server], error) {
			acc, id, err := resolve(ctx, in.ServerRef, write)
			if err != nil {
				return nil, err
			}
			b := in.Body
			cur, err := svc.Server(ctx, acc.ProjectID, id)
			if err != nil {
				return nil, err
			}
			if cur.Type == TypeBuiltin {
				return nil, ErrBuiltinFixed
			}
			if b.Type != nil && *b.Type != cur.Type {
				return nil, errs.New(errs.Invalid, "type cannot be changed: create a new server")
			}
			u := ServerUpdate{Name: b.Name, Enabled: b.Enabled, Command: b.Command, Args: b.Args, Env: b.Env, URL: b.URL, Headers: b.Headers}
			if cur.Type == TypeStdio && u.TouchesCommand() {
				if err := stdioCheck(ctx, acc.OrgID)(); err != nil {
					return nil, err
				}
			}
			srv, err := svc.UpdateServer(ctx, acc.ProjectID, id, u)
			if err != nil {
				return nil, err
			}
			return &httpapi.Out[Server]{Body: srv}, nil
		})

	huma.Register(api, httpapi.Op("mcp-servers-delete", http.MethodDelete, "/api/admin/mcp-servers/{serverId}",
		"Delete an MCP server with its tools, stopping its process (project admins)", byID(write)),
		func(ctx context.Context, in *serverIn) (*noContent, error) {
			acc, id, err := resolve(ctx, in.ServerRef, write)
			if err != nil {
				return nil, err
			}
			if err := svc.DeleteServer(ctx, acc.ProjectID, id); err != nil {
				return nil, err
			}
			return &noContent{Status: http.StatusNoContent}, nil
		})

	huma.Register(api, httpapi.Op("mcp-servers-inspect", http.MethodPost, "/api/admin/mcp-servers/{serverId}/inspect",
		"List the live server's tools without recording them (project admins)", byID(write)),
		func(ctx context.Context, in *serverIn) (*httpapi.Out[liveTools], error) {
			acc, id, err := resolve(ctx, in.ServerRef, write)
			if err != nil {
				return nil, err
			}
			tools, err := svc.Inspect(ctx, acc.ProjectID, id)
			if err != nil {
				return nil, err
			}
			return &httpapi.Out[liveTools]{Body: liveTools{Tools: tools}}, nil
		})

	huma.Register(api, httpapi.Op("mcp-servers-sync", http.MethodPost, "/api/admin/mcp-servers/{serverId}/sync",
		"Mirror the live server's tools into the catalogue; idempotent (project admins)", byID(write)),
		func(ctx context.Context, in *serverIn) (*httpapi.Out[SyncResult], error) {
			acc, id, err := resolve(ctx, in.ServerRef, write)
			if err != nil {
				return nil, err
			}
			res, err := svc.Sync(ctx, acc.ProjectID, id)
			if err != nil {
				return nil, err
			}
			return &httpapi.Out[SyncResult]{Body: res}, nil
		})

	huma.Register(api, httpapi.Op("mcp-servers-tools", http.MethodGet, "/api/admin/mcp-servers/{serverId}/tools",
		"List a server's tools (built-in server: with inheritedFrom)", byID(read)),
		func(ctx context.Context, in *toolsIn) (*httpapi.Out[httpapi.List[Tool]], error) {
			acc, id, err := resolve(ctx, in.ServerRef, read)
			if err != nil {
				return nil, err
			}
			tools, err := svc.Tools(ctx, acc.ProjectID, id)
			if err != nil {
				return nil, err
			}
			return &httpapi.Out[httpapi.List[Tool]]{Body: page(tools, in.PageParams)}, nil
		})

	huma.Register(api, httpapi.Op("mcp-servers-tool-update", http.MethodPatch, "/api/admin/mcp-servers/{serverId}/tools/{toolId}",
		"Enable or disable a tool; for built-in tools set the project's setting (project admins)", byID(write)),
		func(ctx context.Context, in *toolPatchIn) (*httpapi.Out[Tool], error) {
			acc, id, err := resolve(ctx, in.ServerRef, write)
			if err != nil {
				return nil, err
			}
			t, err := svc.UpdateTool(ctx, acc.ProjectID, id, in.ToolID, ToolUpdate{Enabled: in.Body.Enabled, Config: in.Body.Config})
			if err != nil {
				return nil, err
			}
			return &httpapi.Out[Tool]{Body: t}, nil
		})

	huma.Register(api, httpapi.Op("mcp-registry-search", http.MethodGet, "/api/admin/mcp-registry/search",
		"Search the official MCP registry (latest versions)", registry),
		func(ctx context.Context, in *searchIn) (*httpapi.Out[RegistryServers], error) {
			list, err := svc.SearchRegistry(ctx, in.Q, in.Cursor)
			if err != nil {
				return nil, err
			}
			return &httpapi.Out[RegistryServers]{Body: list}, nil
		})

	details := func(ctx context.Context, name string) (*httpapi.Out[RegistryServer], error) {
		s, err := svc.RegistryServer(ctx, name)
		if err != nil {
			return nil, err
		}
		return &httpapi.Out[RegistryServer]{Body: s}, nil
	}
	huma.Register(api, httpapi.Op("mcp-registry-server", http.MethodGet, "/api/admin/mcp-registry/servers/{name}",
		"A registry server's latest version; the name percent-encoded", registry),
		func(ctx context.Context, in *registryNameIn) (*httpapi.Out[RegistryServer], error) {
			return details(ctx, in.Name)
		})
	huma.Register(api, httpapi.Op("mcp-registry-server-path", http.MethodGet, "/api/admin/mcp-registry/servers/{namespace}/{name}",
		"A registry server's latest version; the name as the rest of the path", registry),
		func(ctx context.Context, in *registryPathIn) (*httpapi.Out[RegistryServer], error) {
			return details(ctx, in.Namespace+"/"+in.Name)
		})

	huma.Register(api, httpapi.Op("mcp-registry-install", http.MethodPost, "/api/admin/mcp-registry/install",
		"Install a registry server into the project and sync it (project admins; stdio per GRAPHMILL_MCP_STDIO)", write),
		func(ctx context.Context, in *installIn) (*httpapi.Created[InstallResult], error) {
			res, err := svc.Install(ctx, auth.AccessFrom(ctx).ProjectID, InstallInput{
				ServerName: in.Body.ServerName, Env: in.Body.Config.Env, CheckStdio: stdioCheck(ctx, auth.AccessFrom(ctx).OrgID),
			})
			if err != nil {
				return nil, err
			}
			return &httpapi.Created[InstallResult]{Status: http.StatusCreated, Body: res}, nil
		})

	huma.Register(api, httpapi.Op("project-tool-settings-delete", http.MethodDelete, "/api/admin/projects/{projectId}/tool-settings/{toolName}",
		"Remove the project's setting of a built-in tool; the project falls back to its organization's default, else the global setting (project admins)", write),
		func(ctx context.Context, in *projectToolIn) (*noContent, error) {
			if err := svc.DeleteProjectToolSetting(ctx, auth.AccessFrom(ctx).ProjectID, in.ToolName); err != nil {
				return nil, err
			}
			return &noContent{Status: http.StatusNoContent}, nil
		})

	huma.Register(api, httpapi.Op("org-tool-settings-list", http.MethodGet, "/api/admin/orgs/{orgId}/tool-settings",
		"The organization's default built-in tool settings (organization admins)", org),
		func(ctx context.Context, in *orgIn) (*httpapi.Out[httpapi.List[ToolSetting]], error) {
			list, err := svc.OrgToolSettings(ctx, auth.AccessFrom(ctx).OrgID)
			if err != nil {
				return nil, err
			}
			return &httpapi.Out[httpapi.List[ToolSetting]]{Body: page(list, in.PageParams)}, nil
		})

	huma.Register(api, httpapi.Op("org-tool-settings-put", http.MethodPut, "/api/admin/orgs/{orgId}/tool-settings/{toolName}",
		"Set the organization's default for a built-in tool (organization admins)", org),
		func(ctx context.Context, in *orgToolPutIn) (*httpapi.Out[ToolSetting], error) {
			st, err := svc.PutOrgToolSetting(ctx, auth.AccessFrom(ctx).OrgID, in.ToolName, in.Body.Enabled, in.Body.Config)
			if err != nil {
				return nil, err
			}
			return &httpapi.Out[ToolSetting]{Body: st}, nil
		})

	huma.Register(api, httpapi.Op("org-tool-settings-delete", http.MethodDelete, "/api/admin/orgs/{orgId}/tool-settings/{toolName}",
		"Remove the organization's default; projects fall back to the global setting (organization admins)", org),
		func(ctx context.Context, in *orgToolIn) (*noContent, error) {
			if err := svc.DeleteOrgToolSetting(ctx, auth.AccessFrom(ctx).OrgID, in.ToolName); err != nil {
				return nil, err
			}
			return &noContent{Status: http.StatusNoContent}, nil
		})
}
