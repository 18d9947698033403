package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestListTotalPastTheEnd: the agents, agent runs, chat sessions,
// discovery jobs and review tasks lists answer the real total on an empty
// page past their end, as the document and graph lists do, not 0 (the
// window count of a page that holds no row).
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

	var list struct {
		Data  []json.RawMessage `json:"data"`
		Total *int              `json:"total"`
	}
	for path, total := range map[string]int{
		"/api/agents":                    2,
		"/api/agents/" + agent + "/runs": 2,
		"/api/chat/sessions":             3,
		"/api/discovery-jobs":            1,
		"/api/tasks":                     2,
		"/api/tasks/all":                 2,
		"/api/tasks?status=pending":      2,
		"/api/tasks/all?type=review":     2,
		"/api/tasks?type=suggestion":     0,
	} {
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		for _, page := range []string{"offset=0", "offset=1", "offset=50", "limit=1&offset=9223372036854775806"} {
			list.Data, list.Total = nil, nil
			s.must(200, "GET", path+sep+page, s.admin, nil, hp).Decode(t, &list)
			require.NotNil(t, list.Total, path)
			require.Equal(t, total, *list.Total, "%s %s", path, page)
		}
	}
}
