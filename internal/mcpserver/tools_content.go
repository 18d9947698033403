package mcpserver

import (
	"context"
	"errors"
	"path"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/document"
	"github.com/graphmill/graphmill/internal/search"
)

type (
	uploadTextIn struct {
		Filename string `json:"filename" jsonschema:"file name; its extension helps pick the parser (.txt, .md, .html)"`
		Content  string `json:"content" jsonschema:"the document's text"`
		MimeType string `json:"mimeType,omitempty" jsonschema:"media type of the content; by default from the file name's extension (.md, .html), else text/plain"`
	}
	listDocumentsIn struct {
		Limit  int `json:"limit,omitempty" jsonschema:"page size"`
		Offset int `json:"offset,omitempty" jsonschema:"documents to skip"`
	}
	documentPage struct {
		Documents []document.Document `json:"documents"`
		pageInfo
	}
	getDocumentIn struct {
		ID          string `json:"id" jsonschema:"the document's id"`
		ChunkLimit  int    `json:"chunkLimit,omitempty" jsonschema:"how many chunks to include, in order (0: none)"`
		ChunkOffset int    `json:"chunkOffset,omitempty" jsonschema:"chunks to skip"`
	}
	documentWithChunks struct {
		Document    document.Document      `json:"document"`
		Chunks      []document.StoredChunk `json:"chunks"`
		ChunksTotal int                    `json:"chunksTotal"`
		ChunkLimit  int                    `json:"chunkLimit"`
		ChunkOffset int                    `json:"chunkOffset"`
	}
	searchIn struct {
		Query       string   `json:"query" jsonschema:"what to look for; keyword mode takes web search syntax (quotes, or, -)"`
		Mode        string   `json:"mode,omitempty" jsonschema:"keyword, vector or hybrid (both fused by reciprocal rank)"`
		Targets     []string `json:"targets,omitempty" jsonschema:"what to search: document chunks, graph objects or both (default both)"`
		ObjectTypes []string `json:"objectTypes,omitempty" jsonschema:"only objects of these types"`
		DocumentIDs []string `json:"documentIds,omitempty" jsonschema:"only chunks of these documents"`
		Limit       int      `json:"limit,omitempty" jsonschema:"number of results"`
	}
	registryListIn struct {
		Server string `json:"server,omitempty" jsonschema:"only tools of the server of this name"`
	}
	registryToolList struct {
		Tools []RegistryTool `json:"tools"`
	}
	registryCallIn struct {
		Server    string         `json:"server" jsonschema:"the server's name, as mcp-servers/list shows it"`
		Tool      string         `json:"tool" jsonschema:"the tool's name on that server"`
		Arguments map[string]any `json:"arguments,omitempty" jsonschema:"the tool's arguments, as its inputSchema describes them"`
	}
	webSearchIn struct {
		Query string `json:"query" jsonschema:"the web search query"`
		Count int    `json:"count,omitempty" jsonschema:"number of results"`
	}
	webResults struct {
		Results []WebResult `json:"results"`
	}
)

// Bounds of the search and registry tool inputs.
const (
	searchQueryMax  = 2000
	searchFilterMax = 100
	nameMax         = 200
	webQueryMax     = 400
	webCountDefault = 5
	documentListMax = 200
	mimeTypeMax     = 200
	filenameMax     = 500
)

func (s *Server) addDocumentTools() error {
	read := toolRule{scope: auth.DocumentsRead, role: auth.ProjectViewer}
	write := toolRule{scope: auth.DocumentsWrite, role: auth.ProjectEditor}
	return errors.Join(
		addTool(s, &mcp.Tool{
			Name: ToolDocumentsUploadText, Title: "Upload a text document",
			Description: "Add a text document (plain text, Markdown or HTML) to the project. It is parsed into chunks, " +
				"embedded and extracted into the graph in the background; documents_get shows its status. The same " +
				"content uploaded again returns the existing document with duplicate set.",
		}, write, map[string][]prop{
			"filename": {strLen(1, filenameMax)}, "content": {strLen(1, UploadTextMax)},
			"mimeType": {enum("text/plain", "text/markdown", "text/html")},
		}, (*Server).uploadText),
		addTool(s, &mcp.Tool{
			Name: ToolDocumentsList, Title: "List documents",
			Description: "List the project's documents, newest first, with their pipeline status.",
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
		}, read, map[string][]prop{
			"limit": {intRange(1, documentListMax, ListLimitDefault)}, "offset": {minimum(0)},
		}, (*Server).listDocuments),
		addTool(s, &mcp.Tool{
			Name: ToolDocumentsGet, Title: "Get a document",
			Description: "Get a document with its pipeline status and a page of its chunks, in order.",
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
		}, read, map[string][]prop{
			"id": {uuidFormat}, "chunkLimit": {intRange(0, documentListMax, ListLimitDefault)}, "chunkOffset": {minimum(0)},
		}, (*Server).getDocument),
	)
}

// uploadText is documents_upload_text.
func (s *Server) uploadText(ctx context.Context, c *caller, in uploadTextIn) (any, error) {
	mt := in.MimeType
	if mt == "" {
		mt = textMimeType(in.Filename)
	}
	return s.cfg.Documents.Upload(ctx, document.Upload{
		ProjectID: c.project, UserID: c.principal.UserID, Filename: in.Filename, MimeType: mt, Data: []byte(in.Content),
	})
}

// listDocuments is documents_list.
func (s *Server) listDocuments(ctx context.Context, c *caller, in listDocumentsIn) (any, error) {
	limit := orDefault(in.Limit, ListLimitDefault)
	list, total, err := s.cfg.Documents.List(ctx, c.project, limit, in.Offset)
	if err != nil {
		return nil, err
	}
	return documentPage{Documents: nonNil(list), pageInfo: pageInfo{Total: total, Limit: limit, Offset: in.Offset}}, nil
}

// getDocument is documents_get.
func (s *Server) getDocument(ctx context.Context, c *caller, in getDocumentIn) (any, error) {
	id, err := parseID("id", in.ID)
	if err != nil {
		return nil, err
	}
	doc, err := s.cfg.Documents.Get(ctx, c.project, id)
	if err != nil {
		return nil, notFound(err, "document", id)
	}
	out := documentWithChunks{Document: doc, Chunks: []document.StoredChunk{}, ChunkLimit: in.ChunkLimit, ChunkOffset: in.ChunkOffset}
	chunks, total, err := s.cfg.Documents.Chunks(ctx, c.project, id, in.ChunkLimit, in.ChunkOffset)
	if err != nil {
		return nil, err
	}
	out.Chunks, out.ChunksTotal = nonNil(chunks), total
	return out, nil
}

func (s *Server) addSearchTools() error {
	err := addTool(s, &mcp.Tool{
		Name: ToolSearch, Title: "Search the project",
		Description: "Unified search over the project's document chunks and graph objects: keyword (PostgreSQL " +
			"full-text, ranked, with highlighted snippets), vector (semantic) or hybrid (both, fused by reciprocal rank).",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
	}, toolRule{scope: auth.SearchRead, role: auth.ProjectViewer}, map[string][]prop{
		"query":       {strLen(1, searchQueryMax)},
		"mode":        {enum(search.ModeKeyword, search.ModeVector, search.ModeHybrid), defaultString(search.ModeHybrid)},
		"targets":     {items(2, true, enum(search.TargetChunks, search.TargetObjects))},
		"objectTypes": {items(searchFilterMax, true, strLen(1, nameMax))},
		"documentIds": {items(searchFilterMax, true, uuidFormat)},
		"limit":       {intRange(1, search.LimitMax, search.LimitDefault)},
	}, (*Server).searchProject)
	if err == nil && s.cfg.Registry != nil {
		err = s.addRegistryTools()
	}
	if err == nil && s.cfg.Web != nil {
		err = addTool(s, &mcp.Tool{
			Name: ToolWebSearch, Title: "Search the web",
			Description: "Search the web; returns titles, URLs and descriptions.",
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(true)},
		}, toolRule{scope: auth.SearchRead, role: auth.ProjectViewer, enabled: s.cfg.Web.WebSearchEnabled}, map[string][]prop{
			"query": {strLen(1, webQueryMax)}, "count": {intRange(1, WebSearchCountMax, webCountDefault)},
		}, (*Server).webSearch)
	}
	return err
}

// searchProject is the search tool.
func (s *Server) searchProject(ctx context.Context, c *caller, in searchIn) (any, error) {
	req := search.Request{
		Query: strings.TrimSpace(in.Query), Mode: in.Mode, Targets: in.Targets, ObjectTypes: in.ObjectTypes, Limit: in.Limit,
	}
	for _, raw := range in.DocumentIDs {
		id, err := parseID("documentIds", raw)
		if err != nil {
			return nil, err
		}
		req.DocumentIDs = append(req.DocumentIDs, id)
	}
	if err := req.Normalize(); err != nil {
		return nil, err
	}
	res, err := s.cfg.Search.Search(ctx, c.project, req)
	if err != nil {
		return nil, err
	}
	res.Data = nonNil(res.Data)
	return res, nil
}

// webSearch is web_search.
func (s *Server) webSearch(ctx context.Context, c *caller, in webSearchIn) (any, error) {
	list, err := s.cfg.Web.WebSearch(ctx, c.project, in.Query, orDefault(in.Count, webCountDefault))
	if err != nil {
		return nil, err
	}
	return webResults{Results: nonNil(list)}, nil
}

func (s *Server) addRegistryTools() error {
	// Agents get each external tool by name instead (Server.Tools).
	rule := toolRule{scope: auth.MCPUse, role: auth.ProjectViewer, notInToolbox: true}
	return errors.Join(
		addTool(s, &mcp.Tool{
			Name: ToolRegistryList, Title: "List external MCP tools",
			Description: "List the enabled tools of the project's enabled external MCP servers, with their input schemas; " +
				"call one with mcp-servers/call.",
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
		}, rule, map[string][]prop{"server": {strLen(0, nameMax)}}, (*Server).registryList),
		addTool(s, &mcp.Tool{
			Name: ToolRegistryCall, Title: "Call an external MCP tool",
			Description: "Call a tool of one of the project's external MCP servers (see mcp-servers/list) and return its result.",
			Annotations: &mcp.ToolAnnotations{OpenWorldHint: ptr(true)},
		}, rule, map[string][]prop{"server": {strLen(1, nameMax)}, "tool": {strLen(1, nameMax)}}, (*Server).registryCall),
	)
}

// registryList is mcp-servers/list.
func (s *Server) registryList(ctx context.Context, c *caller, in registryListIn) (any, error) {
	list, err := s.cfg.Registry.ListTools(ctx, c.project)
	if err != nil {
		return nil, err
	}
	out := registryToolList{Tools: []RegistryTool{}}
	for _, t := range list {
		if in.Server == "" || t.Server == in.Server {
			out.Tools = append(out.Tools, t)
		}
	}
	return out, nil
}

// registryCall is mcp-servers/call.
func (s *Server) registryCall(ctx context.Context, c *caller, in registryCallIn) (any, error) {
	args := in.Arguments
	if args == nil {
		args = map[string]any{}
	}
	res, err := s.cfg.Registry.CallTool(ctx, c.project, in.Server, in.Tool, args)
	if err != nil {
		return nil, err
	}
	if res == nil {
		return &mcp.CallToolResult{Content: []mcp.Content{}}, nil
	}
	return res, nil
}

// textMimeType picks the media type of a text upload from its file name.
func textMimeType(filename string) string {
	switch strings.ToLower(path.Ext(filename)) {
	case ".md", ".markdown":
		return "text/markdown"
	case ".html", ".htm":
		return "text/html"
	}
	return "text/plain"
}

func ptr[T any](v T) *T { return &v }
