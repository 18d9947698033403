package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/notification"
	"github.com/graphmill/graphmill/internal/templatepack"
)

// TestListTotalPastTheEnd: every list whose total is a window count (the
// agents, agent runs, chat sessions, discovery jobs, review tasks,
// notifications, template packs and their versions, graph objects found
// by a search, relationships, document chunks, extraction logs and LLM
// calls) and every other list (MCP servers, the superadmin job list of
// every queue) answers the real total on an empty page past its end, not
// 0 (the window count of a page that holds no row).
func TestListTotalPastTheEnd(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	hp := header{"X-Project-ID", project}

	agent := s.agentCreate(s.admin, project, map[string]any{"name": "a", "instructions": "i", "tools": []string{}})
	s.agentCreate(s.admin, project, map[string]any{"name": "b", "instructions": "i", "tools": []string{}})
	for range 2 {
		s.agentStart(s.admin, agent, "hello")
	}
	for range 3 {
		s.chatSession(s.admin, project)
	}
	var doc idBody
	s.uploadFile(s.admin, project, "a.txt", "text/plain", []byte("Ada Lovelace worked with Charles Babbage in London.\n")).Decode(t, &doc)
	s.waitDocument(project, doc.ID)
	s.discStart(s.admin, project, map[string]any{"document_ids": []string{doc.ID}})
	for _, title := range []string{"one", "two"} {
		s.createTask(project, title, "review", "", nil)
	}
	s.extractionWaitJob(s.extractionJobOf(doc.ID), "completed", "failed", "requires_review")
	job := s.extractionJobOf(doc.ID)
	pid := uuid.MustParse(project)
	for _, title := range []string{"one", "two"} {
		s.notify(s.adminID(), notification.Params{ProjectID: &pid, Title: title, Message: "m"})
	}
	a := s.graphCreateObject(s.admin, project, map[string]any{"type": "Person", "name": "Zyxwv one"})
	for _, name := range []string{"Zyxwv two", "Zyxwv three"} {
		b := s.graphCreateObject(s.admin, project, map[string]any{"type": "Person", "name": name})
		s.must(201, "POST", "/api/graph/relationships", s.admin, map[string]any{"type": "RELATED_TO", "sourceId": a, "targetId": b}, hp)
	}
	pack := s.graphCreatePack(project, graphPack("Widgets"))
	s.graphExtendPack(project, pack, s.adminID(), templatepack.PackInput{ObjectTypes: []templatepack.ObjectType{{Name: "Sprocket"}}})
	s.must(201, "POST", "/api/projects/"+project+"/template-packs/"+pack, s.admin, nil)
	s.must(200, "GET", "/api/admin/mcp-servers", s.admin, nil, hp) // adds the built-in servers
	s.emailInsert(emailJob("x@example.com", "Join Atlas"), "")
	count := func(sql string, args ...any) int {
		n := s.extractionCount(sql, args...)
		require.Positive(t, n, sql)
		return n
	}

	var list struct {
		Data  []json.RawMessage `json:"data"`
		Total *int              `json:"total"`
		Meta  *struct {
			Total int `json:"total"`
		} `json:"meta"`
	}
	for path, total := range map[string]int{
		"/api/notifications":                                    2,
		"/api/template-packs":                                   count(`SELECT count(*) FROM template_packs`),
		"/api/projects/" + project + "/template-packs":          count(`SELECT count(*) FROM project_template_packs WHERE project_id = $1`, project),
		"/api/template-packs/" + pack + "/versions":             2,
		"/api/graph/objects?q=zyxwv":                            3,
		"/api/graph/relationships":                              count(`SELECT count(*) FROM graph_relationships WHERE project_id = $1`, project),
		"/api/graph/relationships?type=RELATED_TO":              count(`SELECT count(*) FROM graph_relationships WHERE project_id = $1 AND type = $2`, project, "RELATED_TO"),
		"/api/graph/objects/" + a + "/relationships":            2,
		"/api/documents/" + doc.ID + "/chunks":                  count(`SELECT count(*) FROM document_chunks WHERE document_id = $1`, doc.ID),
		"/api/admin/extraction-jobs/" + job + "/logs":           count(`SELECT count(*) FROM extraction_job_logs WHERE job_id = $1`, job),
		"/api/monitoring/extraction-jobs/" + job + "/logs":      count(`SELECT count(*) FROM extraction_job_logs WHERE job_id = $1`, job),
		"/api/monitoring/extraction-jobs/" + job + "/llm-calls": count(`SELECT count(*) FROM extraction_llm_calls WHERE job_id = $1`, job),
		"/api/admin/mcp-servers":                                count(`SELECT count(*) FROM mcp_servers WHERE project_id = $1`, project),
		"/api/superadmin/extraction-jobs":                       count(`SELECT count(*) FROM object_extraction_jobs`),
		"/api/superadmin/document-parsing-jobs":                 count(`SELECT count(*) FROM document_parsing_jobs`),
		"/api/superadmin/embedding-jobs":                        count(`SELECT (SELECT count(*) FROM chunk_embedding_jobs) + (SELECT count(*) FROM graph_embedding_jobs)`),
		"/api/superadmin/email-jobs":                            1,
		"/api/superadmin/sync-jobs":                             0,
		"/api/agents":                                           2,
		"/api/agents/" + agent + "/runs":                        2,
		"/api/chat/sessions":                                    3,
		"/api/discovery-jobs":                                   1,
		"/api/tasks":                                            2,
		"/api/tasks/all":                                        2,
		"/api/tasks?status=pending":                             2,
		"/api/tasks/all?type=review":                            2,
		"/api/tasks?type=suggestion":                            0,
	} {
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		pages := []string{"offset=0", "offset=1", "offset=50", "limit=1&offset=9223372036854775806"}
		if strings.HasPrefix(path, "/api/superadmin/") {
			pages = []string{"page=1", "page=2", "page=50", "limit=1&page=999999"}
		}
		for _, page := range pages {
			list.Data, list.Total, list.Meta = nil, nil, nil
			s.must(200, "GET", path+sep+page, s.admin, nil, hp).Decode(t, &list)
			if list.Meta != nil {
				list.Total = &list.Meta.Total
			}
			require.NotNil(t, list.Total, path)
			require.Equal(t, total, *list.Total, "%s %s", path, page)
		}
	}
}
