// Package clickup is the connector for the tasks and docs of ClickUp
// workspaces.
//
// Tasks come from the REST API v2: GET /api/v2/team (the workspaces the
// key can see), /team/{id}/space, /space/{id}/folder, /folder/{id}/list,
// /space/{id}/list (folderless lists) and /list/{id}/task, paged with
// page=0,1,... until the answer says last_page (ClickUp fixes 100 tasks a
// page). Docs only exist in the API v3: GET
// /api/v3/workspaces/{id}/docs (limit, cursor, next_cursor) and
// /api/v3/workspaces/{id}/docs/{doc}/pages (max_page_depth=-1,
// content_format=text/md: every page with its Markdown, nested).
//
// Each task and each doc page is one item, versioned by its date_updated
// so that an unchanged one is reported without being re-parsed. Archived
// tasks, docs and pages (and those in archived spaces, folders and lists)
// are only synced with the sync option includeArchived; deleted docs and
// pages never are.
package clickup

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/graphmill/graphmill/internal/connector"
	"github.com/graphmill/graphmill/internal/errs"
)

// DefaultBaseURL is ClickUp's API host.
const DefaultBaseURL = "https://api.clickup.com"

// Config field names.
const (
	FieldAPIKey      = "api_key"
	FieldWorkspaceID = "workspace_id"
)

// Source types (the sync option source_types).
const (
	SourceDocs  = "docs"
	SourceTasks = "tasks"
)

// batchSizeDefault and batchSizeMax bound the docs fetched per request.
const (
	batchSizeDefault = 50
	batchSizeMax     = 100
)

// Connector is the clickup connector.
type Connector struct {
	baseURL string
}

// New returns the clickup connector talking to baseURL (DefaultBaseURL
// when empty). The base URL is wiring, never tenant config: a tenant
// cannot send its API key to another host.
func New(baseURL string) *Connector {
	if baseURL == "" {
		baseURL = DefaultBaseURL
	}
	return &Connector{baseURL: strings.TrimRight(baseURL, "/")}
}

// Descriptor implements connector.Connector.
func (c *Connector) Descriptor() connector.Descriptor {
	return connector.Descriptor{
		Name:        "clickup",
		DisplayName: "ClickUp",
		Description: "Tasks and docs of ClickUp workspaces; the sync options space_ids, includeArchived, batchSize and source_types (docs, tasks) apply.",
		Category:    "productivity",
		AuthType:    "api_key",
		RequiredFields: []connector.Field{
			{Name: FieldAPIKey, Type: connector.TypeString, Secret: true, Description: "Personal API token (pk_...) or OAuth access token."},
		},
		OptionalFields: []connector.Field{
			{Name: FieldWorkspaceID, Type: connector.TypeString, Description: "Id of the workspace to sync; every workspace the key can see when absent."},
		},
		DocumentationURL: "https://developer.clickup.com/reference",
		SourceTypes:      []string{SourceDocs, SourceTasks},
		Spaces:           true,
	}
}

// Validate implements connector.Connector.
func (c *Connector) Validate(cfg connector.Config) error {
	key := cfg.String(FieldAPIKey)
	if strings.TrimSpace(key) == "" || strings.ContainsAny(key, "\r\n") {
		return errs.Errorf(errs.Invalid, "%s must be a ClickUp API token", FieldAPIKey)
	}
	if ws := cfg.String(FieldWorkspaceID); ws != "" && !isDigits(ws) {
		return errs.Errorf(errs.Invalid, "%s must be the numeric id of a ClickUp workspace", FieldWorkspaceID)
	}
	return nil
}

// Test implements connector.Connector: it authenticates, finds the
// workspace and lists its spaces.
func (c *Connector) Test(ctx context.Context, env connector.Env, cfg connector.Config) error {
	cl, teams, err := c.open(ctx, env, cfg)
	if err != nil {
		return err
	}
	var spaces spacesAnswer
	return cl.get(ctx, "/api/v2/team/"+url.PathEscape(teams[0].ID)+"/space", url.Values{"archived": {"false"}}, &spaces)
}

// Walk implements connector.Connector.
func (c *Connector) Walk(ctx context.Context, env connector.Env, cfg connector.Config, opts connector.Options, w connector.Walker) error {
	types, err := sourceTypes(opts.SourceTypes)
	if err != nil {
		return err
	}
	cl, teams, err := c.open(ctx, env, cfg)
	if err != nil {
		return err
	}
	for _, t := range teams {
		s := &walk{cl: cl, w: w, opts: opts, team: t, seen: map[string]bool{}}
		if types[SourceTasks] || (types[SourceDocs] && len(opts.SpaceIDs) > 0) {
			if err := s.hierarchy(ctx, types[SourceTasks]); err != nil {
				return err
			}
		}
		if types[SourceDocs] {
			if err := s.docs(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}

// open authenticates and returns a client with the workspaces to sync:
// the configured one, or every one the key can see.
func (c *Connector) open(ctx context.Context, env connector.Env, cfg connector.Config) (*client, []team, error) {
	if env.HTTP == nil {
		return nil, nil, errors.New("clickup: no network access given to the connector")
	}
	cl := &client{http: env.HTTP, base: c.baseURL, key: cfg.String(FieldAPIKey)}
	var ans teamsAnswer
	if err := cl.get(ctx, "/api/v2/team", nil, &ans); err != nil {
		return nil, nil, err
	}
	want := cfg.String(FieldWorkspaceID)
	if want == "" {
		if len(ans.Teams) == 0 {
			return nil, nil, errors.New("the API key has access to no ClickUp workspace")
		}
		return cl, ans.Teams, nil
	}
	for _, t := range ans.Teams {
		if t.ID == want {
			return cl, []team{t}, nil
		}
	}
	return nil, nil, fmt.Errorf("workspace %s is not accessible with this API key", want)
}

// sourceTypes is the set of source types to sync (both when none given).
func sourceTypes(given []string) (map[string]bool, error) {
	if len(given) == 0 {
		return map[string]bool{SourceDocs: true, SourceTasks: true}, nil
	}
	out := map[string]bool{}
	for _, t := range given {
		if t != SourceDocs && t != SourceTasks {
			return nil, errs.Errorf(errs.Invalid, "source_types: unknown type %q (docs, tasks)", t)
		}
		out[t] = true
	}
	return out, nil
}

// walk walks one workspace.
type walk struct {
	cl   *client
	w    connector.Walker
	opts connector.Options
	team team
	// containers holds the ids of the synced spaces, folders and lists,
	// which docs filtered by space_ids must have as parent.
	containers map[string]bool
	seen       map[string]bool
}

// archivedPasses are the values of the "archived" query parameter to
// list with: ClickUp lists either the archived or the other ones.
func (s *walk) archivedPasses() []string {
	if s.opts.IncludeArchived {
		return []string{"false", "true"}
	}
	return []string{"false"}
}

// listAll lists the containers at path in every archived pass; pick
// returns those of one answer.
func listAll[A any](ctx context.Context, s *walk, path string, pick func(*A) []container) ([]container, error) {
	var out []container
	for _, archived := range s.archivedPasses() {
		var ans A
		if err := s.cl.get(ctx, path, url.Values{"archived": {archived}}, &ans); err != nil {
			return nil, err
		}
		for _, c := range pick(&ans) {
			if c.Archived && !s.opts.IncludeArchived {
				continue
			}
			out = append(out, c)
		}
	}
	return out, nil
}

func (s *walk) spaces(ctx context.Context) ([]container, error) {
	all, err := listAll(ctx, s, "/api/v2/team/"+url.PathEscape(s.team.ID)+"/space",
		func(a *spacesAnswer) []container { return a.Spaces })
	if err != nil || len(s.opts.SpaceIDs) == 0 {
		return all, err
	}
	return slices.DeleteFunc(all, func(c container) bool { return !slices.Contains(s.opts.SpaceIDs, c.ID) }), nil
}

func (s *walk) folders(ctx context.Context, spaceID string) ([]container, error) {
	return listAll(ctx, s, "/api/v2/space/"+url.PathEscape(spaceID)+"/folder",
		func(a *foldersAnswer) []container { return a.Folders })
}

func (s *walk) lists(ctx context.Context, path string) ([]container, error) {
	return listAll(ctx, s, path, func(a *listsAnswer) []container { return a.Lists })
}

// hierarchy walks the spaces, folders and lists of the workspace,
// recording them as containers and, when withTasks, reporting their tasks.
func (s *walk) hierarchy(ctx context.Context, withTasks bool) error {
	s.containers = map[string]bool{}
	spaces, err := s.spaces(ctx)
	if err != nil {
		return err
	}
	for _, sp := range spaces {
		s.containers[sp.ID] = true
		folders, err := s.folders(ctx, sp.ID)
		if err != nil {
			return err
		}
		lists, err := s.lists(ctx, "/api/v2/space/"+url.PathEscape(sp.ID)+"/list")
		if err != nil {
			return err
		}
		for _, f := range folders {
			s.containers[f.ID] = true
			inFolder, err := s.lists(ctx, "/api/v2/folder/"+url.PathEscape(f.ID)+"/list")
			if err != nil {
				return err
			}
			lists = append(lists, inFolder...)
		}
		for _, l := range lists {
			s.containers[l.ID] = true
			if !withTasks {
				continue
			}
			if err := s.tasks(ctx, l.ID); err != nil {
				return err
			}
		}
	}
	return nil
}

// tasks reports the tasks of one list, page by page.
func (s *walk) tasks(ctx context.Context, listID string) error {
	path := "/api/v2/list/" + url.PathEscape(listID) + "/task"
	for _, archived := range s.archivedPasses() {
		for pageNo := 0; ; pageNo++ {
			var ans tasksAnswer
			q := url.Values{
				"archived":                     {archived},
				"include_closed":               {"true"},
				"subtasks":                     {"true"},
				"include_markdown_description": {"true"},
				"page":                         {strconv.Itoa(pageNo)},
			}
			if err := s.cl.get(ctx, path, q, &ans); err != nil {
				return err
			}
			for i := range ans.Tasks {
				if err := s.task(ctx, &ans.Tasks[i]); err != nil {
					return err
				}
			}
			if ans.LastPage || len(ans.Tasks) == 0 {
				break
			}
		}
	}
	return nil
}

func (s *walk) task(ctx context.Context, t *task) error {
	if t.Archived && !s.opts.IncludeArchived {
		return nil
	}
	id := "task/" + t.ID
	if s.seen[id] {
		return nil // a task in several lists is reported once
	}
	s.seen[id] = true
	return s.report(ctx, t.DateUpdated, connector.Item{
		ExternalID: id,
		Version:    t.DateUpdated,
		Title:      t.Name,
		URL:        t.URL,
		Filename:   "task-" + t.ID + ".md",
		MimeType:   "text/markdown",
		Content:    []byte(taskMarkdown(t)),
		Modified:   millis(t.DateUpdated),
	})
}

// report reports it, or only its id when the stored version is current.
func (s *walk) report(ctx context.Context, version string, it connector.Item) error {
	if err := ctx.Err(); err != nil {
		return err // cancelled: stop between items, not only at the next request
	}
	if known, ok := s.w.Known(it.ExternalID); ok && version != "" && known == version {
		return s.w.Unchanged(ctx, it.ExternalID)
	}
	if err := s.w.Item(ctx, it); err != nil && !errors.Is(err, connector.ErrSkipItem) {
		return err
	}
	return nil
}

// docs reports the pages of the workspace's docs.
func (s *walk) docs(ctx context.Context) error {
	base := "/api/v3/workspaces/" + url.PathEscape(s.team.ID) + "/docs"
	limit := s.opts.BatchSize
	if limit <= 0 {
		limit = batchSizeDefault
	}
	limit = min(limit, batchSizeMax)
	for _, archived := range s.archivedPasses() {
		cursor := ""
		for {
			q := url.Values{"archived": {archived}, "deleted": {"false"}, "limit": {strconv.Itoa(limit)}}
			if cursor != "" {
				q.Set("cursor", cursor)
			}
			var ans docsAnswer
			if err := s.cl.get(ctx, base, q, &ans); err != nil {
				return err
			}
			for _, d := range ans.Docs {
				if err := s.doc(ctx, base, d); err != nil {
					return err
				}
			}
			if ans.NextCursor == "" || ans.NextCursor == cursor {
				break
			}
			cursor = ans.NextCursor
		}
	}
	return nil
}

func (s *walk) doc(ctx context.Context, base string, d doc) error {
	if d.Deleted || (d.Archived && !s.opts.IncludeArchived) || s.seen["doc/"+d.ID] {
		return nil
	}
	s.seen["doc/"+d.ID] = true
	if len(s.opts.SpaceIDs) > 0 && !s.containers[d.Parent.ID] {
		return nil // not in a synced space
	}
	var pages []page
	q := url.Values{"max_page_depth": {"-1"}, "content_format": {"text/md"}}
	if err := s.cl.get(ctx, base+"/"+url.PathEscape(d.ID)+"/pages", q, &pages); err != nil {
		return err
	}
	return s.pages(ctx, d, pages)
}

func (s *walk) pages(ctx context.Context, d doc, pages []page) error {
	for i := range pages {
		p := &pages[i]
		if p.Deleted || (p.Archived && !s.opts.IncludeArchived) {
			continue // nor its sub-pages: they are archived with it
		}
		version := ""
		if updated := max(p.DateUpdated, p.DateEdited); updated > 0 {
			version = strconv.FormatInt(updated, 10)
		}
		title := p.Name
		if p.Name != d.Name {
			title = d.Name + " / " + p.Name
		}
		err := s.report(ctx, version, connector.Item{
			ExternalID: "doc/" + d.ID + "/" + p.ID,
			Version:    version,
			Title:      title,
			URL:        "https://app.clickup.com/" + s.team.ID + "/v/dc/" + d.ID + "/" + p.ID,
			Filename:   "doc-" + d.ID + "-" + p.ID + ".md",
			MimeType:   "text/markdown",
			Content:    []byte(pageMarkdown(p)),
			Modified:   millis(version),
		})
		if err != nil {
			return err
		}
		if err := s.pages(ctx, d, p.Pages); err != nil {
			return err
		}
	}
	return nil
}

// taskMarkdown is the document of a task: its name, status, assignees,
// list and link, then its description.
func taskMarkdown(t *task) string {
	var b strings.Builder
	b.WriteString("# " + oneLine(t.Name) + "\n\n")
	if t.Status.Status != "" {
		b.WriteString("- Status: " + oneLine(t.Status.Status) + "\n")
	}
	if len(t.Assignees) > 0 {
		names := make([]string, 0, len(t.Assignees))
		for _, a := range t.Assignees {
			name := a.Username
			if a.Email != "" {
				name += " <" + a.Email + ">"
			}
			names = append(names, oneLine(name))
		}
		b.WriteString("- Assignees: " + strings.Join(names, ", ") + "\n")
	}
	if t.List.Name != "" {
		b.WriteString("- List: " + oneLine(t.List.Name) + "\n")
	}
	if t.URL != "" {
		b.WriteString("- URL: " + t.URL + "\n")
	}
	desc := t.MarkdownDescription
	if desc == "" {
		desc = t.TextContent
	}
	if desc == "" {
		desc = t.Description
	}
	if desc = strings.TrimSpace(desc); desc != "" {
		b.WriteString("\n" + desc + "\n")
	}
	return b.String()
}

// pageMarkdown is the document of a doc page: its name as the heading,
// then its Markdown.
func pageMarkdown(p *page) string {
	content := strings.TrimSpace(p.Content)
	if strings.HasPrefix(content, "# ") {
		return content + "\n"
	}
	return "# " + oneLine(p.Name) + "\n\n" + content + "\n"
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// millis parses a Unix time in milliseconds (zero when it is not one).
func millis(s string) time.Time {
	ms, err := strconv.ParseInt(s, 10, 64)
	if err != nil || ms <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

func isDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}
