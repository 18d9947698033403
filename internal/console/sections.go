package console

import "github.com/google/uuid"

// link is a page's label and address.
type link struct{ Label, URL string }

// contentSections are the project's sections on its content: the
// landing page links them for a token bound to the project.
func contentSections(project uuid.UUID) [][]link {
	p := projectURL(project)
	return [][]link{
		{{"Documents", p + "/documents"}},
		{{"Extraction jobs", p + "/jobs"}},
		{{"Review tasks", p + "/tasks"}},
		{{"Search", p + "/search"}},
	}
}

// projectSections are the items of the project page's section list: a
// page each, or related pages together ("Members and tokens").
func projectSections(project uuid.UUID) [][]link {
	p := projectURL(project)
	return append(contentSections(project),
		[]link{{"Graph", p + "/graph"}},
		[]link{{"Chat", chatURL(project)}},
		[]link{{"Agents", agentsURL(project)}},
		[]link{{"MCP servers", p + "/mcp"}},
		[]link{{"Integrations", p + "/integrations"}},
		[]link{{"Schema discovery", p + "/discovery"}},
		[]link{{"Members", p + "/members"}, {"tokens", p + "/tokens"}},
		[]link{{"Extraction monitoring", p + "/monitoring"}},
		[]link{{"Providers", p + "/providers"}, {"usage", p + "/usage"}},
	)
}
