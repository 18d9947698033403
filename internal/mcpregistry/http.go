package mcpregistry

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"github.com/graphmill/graphmill/internal/auth"
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
	liveTools struct {
		Tools []LiveTool `json:"tools"`
	}
)

// replyPage answers the window p of items, the whole list a service call
// returned, or err when the call failed.
func replyPage[T any](items []T, p httpapi.PageParams, err error) (*httpapi.Out[httpapi.List[T]], error) {
	if err != nil {
		return nil, err
	}
	total := len(items)
	lo := min(p.Offset, total)
	hi := min(lo+p.Limit, total)
	return httpapi.ReplyList(items[lo:hi], total, p, nil)
}

// Rules of the routes. Reading a project's servers and tools needs mcp:use
// (agents use them); changing them, inspecting and syncing (which start
// processes and open connections) need mcp:admin and the project admin
// role; stdio servers also pass CheckStdio. Organization defaults need
// mcp:admin and the organization admin role; a project's tool settings
// are changed through its built-in server's tools and removed by
// DELETE /api/admin/projects/{projectId}/tool-settings/{toolName}. Routes
// by server id take the server's project.
func rules(svc *Service) (read, write, readServer, writeServer, registry, org auth.Rule) {
	read = auth.Rule{Scope: auth.MCPUse, Resource: auth.Project, ProjectRole: auth.ProjectViewer}
	write = auth.Rule{Scope: auth.MCPAdmin, Resource: auth.Project, ProjectRole: auth.ProjectAdmin}
	server := &auth.Owner{Param: "serverId", Kind: "mcp-server", Resolve: auth.InProject(svc.ServerProject), NotFound: ErrServerNotFound}
	readServer, writeServer = read.WithOwner(server), write.WithOwner(server)
	registry = auth.Rule{Scope: auth.MCPAdmin, Resource: auth.Authenticated}
	org = auth.Rule{Scope: auth.MCPAdmin, Resource: auth.Org, OrgRole: auth.OrgAdmin}
	return read, write, readServer, writeServer, registry, org
}

// callerOf is the request's caller as the stdio policy sees it.
func callerOf(ctx context.Context) Caller {
	return CallerOf(auth.PrincipalFrom(ctx), auth.AccessFrom(ctx))
}

// CallerOf is p, authorised with a, as the stdio policy sees it (the
// console's pages use it as the routes do).
func CallerOf(p *auth.Principal, a auth.Access) Caller {
	r := p.OrgRole(a.OrgID)
	return Caller{Superadmin: p.Superadmin, OrgAdmin: r == auth.OrgAdmin || r == auth.OrgOwner}
}

// Register adds the MCP server registry, official registry and tool
// settings routes.
func Register(api huma.API, svc *Service) {
	read, write, readServer, writeServer, registry, org := rules(svc)
	h := handlers{svc: svc}

	huma.Register(api, httpapi.Op("mcp-servers-list", http.MethodGet, "/api/admin/mcp-servers",
		"List the project's MCP servers (the built-in one is created on first list)", read), h.listServers)
	huma.Register(api, httpapi.Op("mcp-servers-create", http.MethodPost, "/api/admin/mcp-servers",
		"Register an MCP server in the project (project admins; stdio per GRAPHMILL_MCP_STDIO)", write), h.createServer)
	huma.Register(api, httpapi.Op("mcp-servers-update", http.MethodPatch, "/api/admin/mcp-servers/{serverId}",
		"Change an MCP server; absent fields are unchanged (project admins)", writeServer), h.updateServer)
	huma.Register(api, httpapi.Op("mcp-servers-delete", http.MethodDelete, "/api/admin/mcp-servers/{serverId}",
		"Delete an MCP server with its tools, stopping its process (project admins)", writeServer), h.deleteServer)
	huma.Register(api, httpapi.Op("mcp-servers-inspect", http.MethodPost, "/api/admin/mcp-servers/{serverId}/inspect",
		"List the live server's tools without recording them (project admins)", writeServer), h.inspectServer)
	huma.Register(api, httpapi.Op("mcp-servers-sync", http.MethodPost, "/api/admin/mcp-servers/{serverId}/sync",
		"Mirror the live server's tools into the catalogue; idempotent (project admins)", writeServer), h.syncServer)
	huma.Register(api, httpapi.Op("mcp-servers-tools", http.MethodGet, "/api/admin/mcp-servers/{serverId}/tools",
		"List a server's tools (built-in server: with inheritedFrom)", readServer), h.serverTools)
	huma.Register(api, httpapi.Op("mcp-servers-tool-update", http.MethodPatch, "/api/admin/mcp-servers/{serverId}/tools/{toolId}",
		"Enable or disable a tool; for built-in tools set the project's setting (project admins)", writeServer.WithKeys("toolId")), h.updateTool)
	huma.Register(api, httpapi.Op("mcp-registry-search", http.MethodGet, "/api/admin/mcp-registry/search",
		"Search the official MCP registry (latest versions)", registry), h.searchRegistry)

	huma.Register(api, httpapi.Op("mcp-registry-server", http.MethodGet, "/api/admin/mcp-registry/servers/{name}",
		"A registry server's latest version; the name percent-encoded", registry.WithKeys("name")), h.registryServerByName)
	huma.Register(api, httpapi.Op("mcp-registry-server-path", http.MethodGet, "/api/admin/mcp-registry/servers/{namespace}/{name}",
		"A registry server's latest version; the name as the rest of the path", registry.WithKeys("namespace", "name")), h.registryServerByPath)
	huma.Register(api, httpapi.Op("mcp-registry-install", http.MethodPost, "/api/admin/mcp-registry/install",
		"Install a registry server into the project and sync it (project admins; stdio per GRAPHMILL_MCP_STDIO)", write), h.installFromRegistry)
	huma.Register(api, httpapi.Op("project-tool-settings-delete", http.MethodDelete, "/api/admin/projects/{projectId}/tool-settings/{toolName}",
		"Remove the project's setting of a built-in tool; the project falls back to its organization's default, else the global setting (project admins)",
		write.WithKeys("toolName")), h.deleteProjectToolSetting)
	huma.Register(api, httpapi.Op("org-tool-settings-list", http.MethodGet, "/api/admin/orgs/{orgId}/tool-settings",
		"The organization's default built-in tool settings (organization admins)", org), h.listOrgToolSettings)
	huma.Register(api, httpapi.Op("org-tool-settings-put", http.MethodPut, "/api/admin/orgs/{orgId}/tool-settings/{toolName}",
		"Set the organization's default for a built-in tool (organization admins)", org.WithKeys("toolName")), h.putOrgToolSetting)
	huma.Register(api, httpapi.Op("org-tool-settings-delete", http.MethodDelete, "/api/admin/orgs/{orgId}/tool-settings/{toolName}",
		"Remove the organization's default; projects fall back to the global setting (organization admins)", org.WithKeys("toolName")), h.deleteOrgToolSetting)
}

// handlers are the MCP registry routes' handlers: each decodes, calls the
// service with what the middleware authorised (auth.Access), and encodes.
type handlers struct {
	svc *Service
}

func (h handlers) listServers(ctx context.Context, in *listIn) (*httpapi.Out[httpapi.List[Server]], error) {
	list, total, err := h.svc.ListServers(ctx, auth.AccessFrom(ctx).ProjectID, in.Limit, in.Offset)
	return httpapi.ReplyList(list, total, in.PageParams, err)
}

func (h handlers) createServer(ctx context.Context, in *createIn) (*httpapi.Created[Server], error) {
	return httpapi.ReplyCreated(h.svc.CreateServer(ctx, auth.AccessFrom(ctx).ProjectID, ServerInput(in.Body), callerOf(ctx)))
}

func (h handlers) updateServer(ctx context.Context, in *patchIn) (*httpapi.Out[Server], error) {
	b, a := in.Body, auth.AccessFrom(ctx)
	u := ServerUpdate{Type: b.Type, Name: b.Name, Enabled: b.Enabled, Command: b.Command, Args: b.Args, Env: b.Env, URL: b.URL, Headers: b.Headers}
	return httpapi.Reply(h.svc.UpdateServer(ctx, a.ProjectID, a.ResourceID, u, callerOf(ctx)))
}

func (h handlers) deleteServer(ctx context.Context, _ *serverIn) (*httpapi.NoContent, error) {
	a := auth.AccessFrom(ctx)
	return nil, h.svc.DeleteServer(ctx, a.ProjectID, a.ResourceID)
}

func (h handlers) inspectServer(ctx context.Context, _ *serverIn) (*httpapi.Out[liveTools], error) {
	a := auth.AccessFrom(ctx)
	tools, err := h.svc.Inspect(ctx, a.ProjectID, a.ResourceID)
	if err != nil {
		return nil, err
	}
	return &httpapi.Out[liveTools]{Body: liveTools{Tools: tools}}, nil
}

func (h handlers) syncServer(ctx context.Context, _ *serverIn) (*httpapi.Out[SyncResult], error) {
	a := auth.AccessFrom(ctx)
	return httpapi.Reply(h.svc.Sync(ctx, a.ProjectID, a.ResourceID))
}

func (h handlers) serverTools(ctx context.Context, in *toolsIn) (*httpapi.Out[httpapi.List[Tool]], error) {
	a := auth.AccessFrom(ctx)
	tools, err := h.svc.Tools(ctx, a.ProjectID, a.ResourceID)
	return replyPage(tools, in.PageParams, err)
}

func (h handlers) updateTool(ctx context.Context, in *toolPatchIn) (*httpapi.Out[Tool], error) {
	a := auth.AccessFrom(ctx)
	return httpapi.Reply(h.svc.UpdateTool(ctx, a.ProjectID, a.ResourceID, in.ToolID, ToolUpdate{Enabled: in.Body.Enabled, Config: in.Body.Config}))
}

func (h handlers) searchRegistry(ctx context.Context, in *searchIn) (*httpapi.Out[RegistryServers], error) {
	return httpapi.Reply(h.svc.SearchRegistry(ctx, in.Q, in.Cursor))
}

func (h handlers) registryServerByName(ctx context.Context, in *registryNameIn) (*httpapi.Out[RegistryServer], error) {
	return h.registryServer(ctx, in.Name)
}

func (h handlers) registryServerByPath(ctx context.Context, in *registryPathIn) (*httpapi.Out[RegistryServer], error) {
	return h.registryServer(ctx, in.Namespace+"/"+in.Name)
}

func (h handlers) installFromRegistry(ctx context.Context, in *installIn) (*httpapi.Created[InstallResult], error) {
	return httpapi.ReplyCreated(h.svc.Install(ctx, auth.AccessFrom(ctx).ProjectID, InstallInput{
		ServerName: in.Body.ServerName, Env: in.Body.Config.Env, Caller: callerOf(ctx),
	}))
}

func (h handlers) deleteProjectToolSetting(ctx context.Context, in *projectToolIn) (*httpapi.NoContent, error) {
	return nil, h.svc.DeleteProjectToolSetting(ctx, auth.AccessFrom(ctx).ProjectID, in.ToolName)
}

func (h handlers) listOrgToolSettings(ctx context.Context, in *orgIn) (*httpapi.Out[httpapi.List[ToolSetting]], error) {
	list, err := h.svc.OrgToolSettings(ctx, auth.AccessFrom(ctx).OrgID)
	return replyPage(list, in.PageParams, err)
}

func (h handlers) putOrgToolSetting(ctx context.Context, in *orgToolPutIn) (*httpapi.Out[ToolSetting], error) {
	return httpapi.Reply(h.svc.PutOrgToolSetting(ctx, auth.AccessFrom(ctx).OrgID, in.ToolName, in.Body.Enabled, in.Body.Config))
}

func (h handlers) deleteOrgToolSetting(ctx context.Context, in *orgToolIn) (*httpapi.NoContent, error) {
	return nil, h.svc.DeleteOrgToolSetting(ctx, auth.AccessFrom(ctx).OrgID, in.ToolName)
}

// registryServer answers a registry server's latest version.
func (h handlers) registryServer(ctx context.Context, name string) (*httpapi.Out[RegistryServer], error) {
	return httpapi.Reply(h.svc.RegistryServer(ctx, name))
}
