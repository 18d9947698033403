package mcpserver

import (
	"context"
	"encoding/json"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/agent"
	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/graph"
	"github.com/graphmill/graphmill/internal/llm"
)

// projectDirectory knows which organization each project belongs to.
type projectDirectory struct {
	auth.Directory
	orgs map[uuid.UUID]uuid.UUID
}

func (d projectDirectory) ProjectOrg(_ context.Context, project uuid.UUID) (uuid.UUID, error) {
	if org, ok := d.orgs[project]; ok {
		return org, nil
	}
	return uuid.Nil, auth.ErrNoProject
}

func (d projectDirectory) OrgLive(context.Context, uuid.UUID) (bool, error) { return true, nil }

// recordingGraph creates objects (of type Person) and relationships,
// unique by type and key or by type and ends as the graph's, and records
// each creation.
type recordingGraph struct {
	Graph
	mu      sync.Mutex
	created []graph.CreateObjectParams
	objects []graph.Object
	rels    []graph.Relationship
	effects map[string]uuid.UUID // call key -> what it created
}

func (g *recordingGraph) CreateObject(_ context.Context, project uuid.UUID, p graph.CreateObjectParams) (graph.Object, error) {
	if p.Type != "Person" {
		return graph.Object{}, errs.Errorf(errs.Invalid, "unknown object type %q", p.Type)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	key := p.Key
	if key == "" {
		key = p.Name
	}
	for _, o := range g.objects {
		if o.Type == p.Type && graph.NormalizeKey(o.Key) == graph.NormalizeKey(key) {
			return graph.Object{}, errs.Errorf(errs.Conflict, "an object of type %s with this key already exists: %s", o.Type, o.ID)
		}
	}
	g.created = append(g.created, p)
	o := graph.Object{ID: uuid.New(), ProjectID: project, Type: p.Type, Name: p.Name, Key: key, CreatedBy: p.CreatedBy}
	g.objects = append(g.objects, o)
	g.remember(p.CallKey, o.ID)
	return o, nil
}

// remember records what call key created.
func (g *recordingGraph) remember(key string, id uuid.UUID) {
	if key == "" {
		return
	}
	if g.effects == nil {
		g.effects = map[string]uuid.UUID{}
	}
	g.effects[key] = id
}

func (g *recordingGraph) ObjectOfCall(_ context.Context, _ uuid.UUID, key string) (graph.Object, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, o := range g.objects {
		if id, ok := g.effects[key]; ok && o.ID == id {
			return o, nil
		}
	}
	return graph.Object{}, errs.New(errs.NotFound, "object not found")
}

func (g *recordingGraph) CreateRelationship(_ context.Context, project uuid.UUID, p graph.CreateRelationshipParams) (graph.Relationship, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, r := range g.rels {
		if r.Type == p.Type && r.SourceID == p.SourceID && r.TargetID == p.TargetID {
			return graph.Relationship{}, errs.Errorf(errs.Conflict, "this relationship already exists: %s", r.ID)
		}
	}
	r := graph.Relationship{ID: uuid.New(), ProjectID: project, Type: p.Type, SourceID: p.SourceID, TargetID: p.TargetID}
	g.rels = append(g.rels, r)
	g.remember(p.CallKey, r.ID)
	return r, nil
}

func (g *recordingGraph) RelationshipOfCall(_ context.Context, _ uuid.UUID, key string) (graph.Relationship, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, r := range g.rels {
		if id, ok := g.effects[key]; ok && r.ID == id {
			return r, nil
		}
	}
	return graph.Relationship{}, errs.New(errs.NotFound, "relationship not found")
}

// settings disables the named built-in tools.
type settings struct{ disabled []string }

func (s settings) EnabledTools(context.Context, uuid.UUID) (map[string]bool, error) {
	out := map[string]bool{}
	for _, name := range []string{
		ToolGraphSearchObjects, ToolGraphGetObject, ToolGraphCreateObject, ToolGraphUpdateObject, ToolGraphCreateRelationship,
		ToolGraphListRelationships, ToolGraphNeighbors, ToolDocumentsUploadText, ToolDocumentsList, ToolDocumentsGet,
		ToolSearch, ToolRegistryList, ToolRegistryCall, ToolWebSearch,
	} {
		out[name] = true
	}
	for _, name := range s.disabled {
		out[name] = false
	}
	return out, nil
}

type boxBundle struct {
	srv            *Server
	graph          *recordingGraph
	reg            *fakeRegistry
	web            *fakeWeb
	project, other uuid.UUID
}

// boxSetup builds a server whose tool settings disable the named tools,
// over two projects of one organization.
func boxSetup(t testing.TB, registry Registry, disabled ...string) *boxBundle {
	t.Helper()
	b := &boxBundle{graph: &recordingGraph{}, web: &fakeWeb{enabled: true}, project: uuid.New(), other: uuid.New()}
	org := uuid.New()
	guard := auth.NewGuard(auth.GuardConfig{Directory: projectDirectory{orgs: map[uuid.UUID]uuid.UUID{b.project: org, b.other: org}}})
	if registry == nil {
		b.reg = &fakeRegistry{tools: []RegistryTool{
			{ServerID: uuid.New(), Server: "weather", Name: "forecast", Description: "Forecast a city's weather."},
			{ServerID: uuid.New(), Server: "My Notes", Name: "find/all", Description: "Find notes."},
		}}
		registry = b.reg
	}
	srv, err := New(Config{
		Graph: b.graph, Documents: fakeDocuments{}, Search: fakeSearch{}, Registry: registry, Web: b.web,
		Guard: guard, Watcher: auth.NewWatcher(auth.WatcherConfig{Guard: guard, Logger: slog.New(slog.DiscardHandler)}),
		Logger: slog.New(slog.DiscardHandler), ListenAddr: "127.0.0.1:8080", Settings: settings{disabled: disabled}, Chat: unusedChat{},
	})
	require.NoError(t, err)
	b.srv = srv
	return b
}

// principal holds scopes and role in the bundle's project.
func (b *boxBundle) principal(scopes auth.Scopes, role auth.ProjectRole) *auth.Principal {
	return &auth.Principal{
		UserID: uuid.New(), Kind: auth.KindAPIToken, Scopes: scopes,
		ProjectRoles: map[uuid.UUID]auth.ProjectRole{b.project: role},
	}
}

func toolNamesOf(tools []llm.Tool) []string {
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.Name
	}
	sort.Strings(names)
	return names
}

func TestToolboxListsWhatTheCallerMayUse(t *testing.T) {
	t.Parallel()
	b := boxSetup(t, nil)
	ctx := t.Context()

	tools, err := b.srv.Tools(ctx, b.principal(auth.Scopes(0).With(auth.GraphRead), auth.ProjectViewer), b.project)
	require.NoError(t, err)
	require.Equal(t, []string{
		ToolGraphGetObject, ToolGraphListRelationships, ToolGraphNeighbors, ToolGraphSearchObjects,
	}, toolNamesOf(tools), "graph:read alone: the reading graph tools")

	tools, err = b.srv.Tools(ctx, b.principal(auth.Scopes(0).With(auth.GraphRead).With(auth.GraphWrite), auth.ProjectViewer), b.project)
	require.NoError(t, err)
	require.NotContains(t, toolNamesOf(tools), ToolGraphCreateObject, "graph:write needs the editor role")
	tools, err = b.srv.Tools(ctx, b.principal(auth.Scopes(0).With(auth.GraphWrite), auth.ProjectEditor), b.project)
	require.NoError(t, err)
	require.Equal(t, []string{ToolGraphCreateObject, ToolGraphCreateRelationship, ToolGraphUpdateObject}, toolNamesOf(tools))

	tools, err = b.srv.Tools(ctx, b.principal(auth.AllScopes, auth.ProjectAdmin), b.project)
	require.NoError(t, err)
	want := []string{
		ToolDocumentsGet, ToolDocumentsList, ToolDocumentsUploadText, ToolGraphCreateObject, ToolGraphCreateRelationship,
		ToolGraphGetObject, ToolGraphListRelationships, ToolGraphNeighbors, ToolGraphSearchObjects, ToolGraphUpdateObject,
		"My Notes/find/all", ToolSearch, ToolWebSearch, "weather/forecast",
	}
	sort.Strings(want)
	require.Equal(t, want, toolNamesOf(tools), "every tool, the registry's own two left out, external ones by name")
	for _, tool := range tools {
		require.NotEmpty(t, tool.Description, tool.Name)
		if tool.Name == "weather/forecast" {
			require.Equal(t, "Forecast a city's weather.", tool.Description)
			continue
		}
		if !strings.Contains(tool.Name, "/") {
			require.Equal(t, "object", tool.Parameters["type"], tool.Name)
		}
	}

	// Tools that need a setting follow it.
	b.web.enabled = false
	tools, err = b.srv.Tools(ctx, b.principal(auth.AllScopes, auth.ProjectAdmin), b.project)
	require.NoError(t, err)
	require.NotContains(t, toolNamesOf(tools), ToolWebSearch)
}

func TestToolboxExternalToolsNeedTheRegistryCallTool(t *testing.T) {
	t.Parallel()
	b := boxSetup(t, nil)
	ctx := t.Context()
	tools, err := b.srv.Tools(ctx, b.principal(auth.Scopes(0).With(auth.MCPUse), auth.ProjectViewer), b.project)
	require.NoError(t, err)
	require.Len(t, tools, 2)
	require.Equal(t, []string{"My Notes/find/all", "weather/forecast"}, toolNamesOf(tools))

	b = boxSetup(t, nil, ToolRegistryCall)
	tools, err = b.srv.Tools(ctx, b.principal(auth.AllScopes, auth.ProjectAdmin), b.project)
	require.NoError(t, err)
	require.NotContains(t, toolNamesOf(tools), "weather/forecast", "mcp-servers/call disabled: no external tools")
	_, _, err = b.srv.Call(ctx, b.principal(auth.AllScopes, auth.ProjectAdmin), b.project, "weather/forecast", json.RawMessage(`{}`))
	require.Equal(t, errs.PermissionDenied, errs.CodeOf(err))
	require.Empty(t, b.reg.calls)
}

func TestToolboxDisabledToolNeverListedAndRefused(t *testing.T) {
	t.Parallel()
	b := boxSetup(t, nil, ToolGraphCreateObject)
	ctx := t.Context()
	p := b.principal(auth.AllScopes, auth.ProjectAdmin)
	tools, err := b.srv.Tools(ctx, p, b.project)
	require.NoError(t, err)
	require.NotContains(t, toolNamesOf(tools), ToolGraphCreateObject)

	_, _, err = b.srv.Call(ctx, p, b.project, ToolGraphCreateObject, json.RawMessage(`{"type":"Person","name":"Ada"}`))
	require.Equal(t, errs.PermissionDenied, errs.CodeOf(err))
	require.Equal(t, "tool graph_create_object is not enabled for this project", errs.MessageOf(err))
	require.Empty(t, b.graph.created, "refused unrun")

	// Refused for want of a scope or a role too, with the reason.
	_, _, err = b.srv.Call(ctx, b.principal(auth.AllScopes, auth.ProjectViewer), b.project, ToolGraphUpdateObject, json.RawMessage(`{}`))
	require.Equal(t, errs.PermissionDenied, errs.CodeOf(err))
	require.Equal(t, "tool graph_update_object needs the project role editor or higher; yours is viewer", errs.MessageOf(err))
	_, _, err = b.srv.Call(ctx, p, b.project, ToolRegistryCall, json.RawMessage(`{"server":"weather","tool":"forecast"}`))
	require.Equal(t, errs.PermissionDenied, errs.CodeOf(err))
	require.Equal(t, "tool mcp-servers/call is not offered to agents", errs.MessageOf(err))
	_, _, err = b.srv.Call(ctx, p, b.project, "weather/rain", json.RawMessage(`{}`))
	require.Equal(t, errs.PermissionDenied, errs.CodeOf(err))
	require.Empty(t, b.reg.calls)
}

func TestToolboxCallRunsTheToolAsTheCaller(t *testing.T) {
	t.Parallel()
	b := boxSetup(t, nil)
	ctx := t.Context()
	p := b.principal(auth.AllScopes, auth.ProjectEditor)

	out, isErr, err := b.srv.Call(ctx, p, b.project, ToolGraphCreateObject, json.RawMessage(`{"type":"Person","name":"Ada"}`))
	require.NoError(t, err)
	require.False(t, isErr, string(out))
	var o graph.Object
	require.NoError(t, json.Unmarshal(out, &o))
	require.Equal(t, "Ada", o.Name)
	require.Equal(t, b.project, o.ProjectID)
	require.Len(t, b.graph.created, 1)
	require.Equal(t, p.UserID, *b.graph.created[0].CreatedBy, "created as the caller")

	// The tool's own failures are results, not errors.
	out, isErr, err = b.srv.Call(ctx, p, b.project, ToolGraphCreateObject, json.RawMessage(`{"type":"Robot","name":"R2"}`))
	require.NoError(t, err)
	require.True(t, isErr)
	require.JSONEq(t, `"unknown object type \"Robot\""`, string(out))
	out, isErr, err = b.srv.Call(ctx, p, b.project, ToolGraphCreateObject, json.RawMessage(`{"type":"Person"}`))
	require.NoError(t, err)
	require.True(t, isErr, "the input schema applies: name is required")
	require.Contains(t, string(out), "name")
	out, isErr, err = b.srv.Call(ctx, p, b.project, ToolGraphCreateObject, json.RawMessage(`{"type":"Person","name":"A\u0000"}`))
	require.NoError(t, err)
	require.True(t, isErr, "NUL characters are refused as over the transports")
	require.Contains(t, string(out), "NUL")
	require.Len(t, b.graph.created, 1)

	// External tools by "server/tool", through the registry.
	out, isErr, err = b.srv.Call(ctx, p, b.project, "weather/forecast", json.RawMessage(`{"city":"Paris"}`))
	require.NoError(t, err)
	require.False(t, isErr)
	require.JSONEq(t, `"sunny {\"city\":\"Paris\"}"`, string(out))
	_, _, err = b.srv.Call(ctx, p, b.project, "weather/forecast", json.RawMessage(`{"city":"Oslo"}`))
	require.NoError(t, err)
	require.Equal(t, []string{b.reg.tools[0].ServerID.String() + "/forecast", b.reg.tools[0].ServerID.String() + "/forecast"}, b.reg.calls,
		"the server is named by id")
	out, isErr, err = b.srv.Call(ctx, p, b.project, "weather/forecast", json.RawMessage(`[1]`))
	require.NoError(t, err)
	require.True(t, isErr)
	require.JSONEq(t, `"the arguments must be a JSON object"`, string(out))
}

func TestToolboxAuthorisesTheProject(t *testing.T) {
	t.Parallel()
	b := boxSetup(t, nil)
	ctx := t.Context()
	p := b.principal(auth.AllScopes, auth.ProjectAdmin)
	_, err := b.srv.Tools(ctx, p, b.other)
	require.Equal(t, errs.NotFound, errs.CodeOf(err), "not a member of the other project")
	_, _, err = b.srv.Call(ctx, p, uuid.New(), ToolSearch, json.RawMessage(`{"query":"x"}`))
	require.Equal(t, errs.NotFound, errs.CodeOf(err))

	p.ProjectRoles[b.other] = auth.ProjectAdmin
	p.BoundProject = b.project
	_, err = b.srv.Tools(ctx, p, b.other)
	require.Equal(t, errs.PermissionDenied, errs.CodeOf(err), "a token bound to another project")
}

func TestResultContent(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		res  *mcp.CallToolResult
		want string
	}{
		{&mcp.CallToolResult{StructuredContent: map[string]any{"a": 1}, Content: []mcp.Content{&mcp.TextContent{Text: "ignored"}}}, `{"a":1}`},
		{&mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: ` {"b": [1]} `}}}, `{"b":[1]}`},
		{&mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: `[1, 2]`}}}, `[1,2]`},
		{&mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: `true`}}}, `"true"`},
		{&mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: `{"a":`}}}, `"{\"a\":"`},
		{&mcp.CallToolResult{Content: []mcp.Content{
			&mcp.TextContent{Text: "one"}, &mcp.ImageContent{MIMEType: "image/png", Data: []byte{1}},
			&mcp.ResourceLink{URI: "file:///x"}, &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///y", Text: "embedded"}},
		}}, `"one\n[image image/png]\n[resource file:///x]\nembedded"`},
		{&mcp.CallToolResult{IsError: true, StructuredContent: map[string]any{"a": 1}, Content: []mcp.Content{&mcp.TextContent{Text: "bad"}}}, `"bad"`},
		{&mcp.CallToolResult{}, `""`},
	} {
		got, err := resultContent(tt.res)
		require.NoError(t, err)
		require.JSONEq(t, tt.want, string(got))
	}
}

// created calls the creating tool name as p, as the run's call key
// (none when "") marked resumed or not, and decodes what it created into
// out (nil: it must fail).
func (b *boxBundle) created(t *testing.T, key string, resumed bool, p *auth.Principal, name, args string, out any) string {
	t.Helper()
	ctx := t.Context()
	if key != "" {
		ctx = agent.WithCallKey(ctx, key, resumed)
	}
	content, isErr, err := b.srv.Call(ctx, p, b.project, name, json.RawMessage(args))
	require.NoError(t, err)
	require.Equal(t, out == nil, isErr, string(content))
	if out != nil {
		require.NoError(t, json.Unmarshal(content, out))
	}
	return string(content)
}

// TestToolboxResumedCallReturnsWhatTheCallCreated: a run's create is a
// create (an existing object is a conflict, even the caller's own),
// recorded under its call key; only the resumed call of the same key
// returns what that call created; a resumed call that created nothing
// creates.
func TestToolboxResumedCallReturnsWhatTheCallCreated(t *testing.T) {
	t.Parallel()
	b := boxSetup(t, nil)
	p := b.principal(auth.AllScopes, auth.ProjectEditor)
	args := `{"type":"Person","name":"Ada Lovelace"}`
	var first, again graph.Object
	b.created(t, "run/1", false, p, ToolGraphCreateObject, args, &first)
	require.Equal(t, "run/1", b.graph.created[0].CallKey)

	require.Contains(t, b.created(t, "", false, p, ToolGraphCreateObject, args, nil), "already exists: "+first.ID.String())
	require.Contains(t, b.created(t, "run/2", false, p, ToolGraphCreateObject, args, nil), "already exists: "+first.ID.String(),
		"a new call of a run conflicts with the caller's own object")
	require.Contains(t, b.created(t, "run/3", true, p, ToolGraphCreateObject, args, nil), "already exists: "+first.ID.String(),
		"a resumed call that created nothing creates")
	b.created(t, "run/1", true, p, ToolGraphCreateObject, args, &again)
	require.Equal(t, first.ID, again.ID)
	require.Len(t, b.graph.created, 1, "created once")

	var fresh graph.Object
	b.created(t, "run/4", true, p, ToolGraphCreateObject, `{"type":"Person","name":"Charles Babbage"}`, &fresh)
	require.Len(t, b.graph.created, 2)

	rel := `{"type":"KNOWS","sourceId":"` + first.ID.String() + `","targetId":"` + uuid.NewString() + `"}`
	var r1, r2 graph.Relationship
	b.created(t, "run/5", false, p, ToolGraphCreateRelationship, rel, &r1)
	b.created(t, "run/6", false, p, ToolGraphCreateRelationship, rel, nil)
	b.created(t, "run/6", true, p, ToolGraphCreateRelationship, rel, nil)
	b.created(t, "run/5", true, p, ToolGraphCreateRelationship, rel, &r2)
	require.Equal(t, r1.ID, r2.ID)
	require.Len(t, b.graph.rels, 1)
}

func (g *recordingGraph) ListObjects(context.Context, uuid.UUID, graph.ObjectFilter) ([]graph.Object, int, error) {
	return nil, 0, nil
}

// BenchmarkToolboxCall is one in-process tool call (graph_search_objects
// over a graph that answers at once): the caller's authorisation, the
// listing of the tool box and the in-memory MCP session the call goes
// through, i.e. what the tool box adds to the tool itself.
func BenchmarkToolboxCall(b *testing.B) {
	box := boxSetup(b, &fakeRegistry{})
	p := box.principal(auth.AllScopes, auth.ProjectViewer)
	args := json.RawMessage(`{"text":"ada"}`)
	ctx := b.Context()
	for b.Loop() {
		if _, isErr, err := box.srv.Call(ctx, p, box.project, ToolGraphSearchObjects, args); err != nil || isErr {
			b.Fatal(err, isErr)
		}
	}
}

// TestToolboxResumedExternalCall: a resumed call of an external tool
// (its outcome unknown after a restart) is made again only when the
// tool's annotations say it is read-only or idempotent; otherwise it is
// a tool error saying so, and the server is not called.
func TestToolboxResumedExternalCall(t *testing.T) {
	t.Parallel()
	server := uuid.New()
	reg := &fakeRegistry{tools: []RegistryTool{
		{ServerID: server, Server: "weather", Name: "forecast", Repeatable: true},
		{ServerID: server, Server: "weather", Name: "book"},
	}}
	b := boxSetup(t, reg)
	p := b.principal(auth.AllScopes, auth.ProjectEditor)
	args := json.RawMessage(`{"city":"Paris"}`)
	resumed := agent.WithCallKey(t.Context(), "run/1", true)

	content, isErr, err := b.srv.Call(resumed, p, b.project, "weather/book", args)
	require.NoError(t, err)
	require.True(t, isErr)
	require.Contains(t, string(content), "unknown after a restart; it was not repeated")
	require.Empty(t, reg.calls)

	content, isErr, err = b.srv.Call(resumed, p, b.project, "weather/forecast", args)
	require.NoError(t, err)
	require.False(t, isErr, string(content))
	require.Equal(t, []string{server.String() + "/forecast"}, reg.calls)

	_, isErr, err = b.srv.Call(agent.WithCallKey(t.Context(), "run/2", false), p, b.project, "weather/book", args)
	require.NoError(t, err)
	require.False(t, isErr)
	require.Equal(t, []string{server.String() + "/forecast", server.String() + "/book"}, reg.calls, "a first call is made")
}
