package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestConsoleBrowserGraph is the newcomer's path in Debian's chromium
// (graph.mjs): sign in, drop a folder of three documents in nested
// folders on the documents page and watch them parse and their
// extraction (the default local provider) end without a reload; the same
// folder by the "upload a folder" input is all already uploaded; the
// project page counts the graph; the explorer finds the object with the
// most relationships, shows its provenance quotes and draws its
// neighbours (Cytoscape.js); a click on a neighbour's node and a
// relationship's link open other objects. Screenshots of each page.
func TestConsoleBrowserGraph(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	folder := filepath.Join(t.TempDir(), "notes")
	for path, name := range map[string]string{
		"orbit.md": "orbit.md", "space/lantern.md": "lantern.md", "space/ports/harbor.md": "harbor.md",
	} {
		p := filepath.Join(folder, filepath.FromSlash(path))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o700))
		require.NoError(t, os.WriteFile(p, []byte(extractionReadFile(t, name)), 0o600))
	}

	var center consoleGraphObject
	var mine []consoleGraphRel
	out, shots := runConsoleScript(t, s, "graph.mjs", project, []string{folder}, func(name string) string {
		if name != "object" {
			t.Errorf("unknown step %q", name)
			return ""
		}
		center, mine = consoleBusiestObject(t, s, project)
		return center.ID + "\t" + center.Name
	})

	type upload struct{ Path, State string }
	var report struct {
		Pages         []string                        `json:"pages"`
		Dropped       []upload                        `json:"dropped"`
		FolderInput   []upload                        `json:"folderInput"`
		Documents     []struct{ Name, Status string } `json:"documents"`
		NotReloaded   bool                            `json:"notReloaded"`
		JobsNotReload bool                            `json:"jobsNotReloaded"`
		Jobs          []string                        `json:"jobs"`
		GraphCount    string                          `json:"graphCount"`
		Listed        int                             `json:"listed"`
		SearchURL     string                          `json:"searchURL"`
		Found         []string                        `json:"found"`
		ObjectURL     string                          `json:"objectURL"`
		ObjectType    string                          `json:"objectType"`
		Provenance    string                          `json:"provenanceText"`
		Quotes        []string                        `json:"quotes"`
		QuoteMarks    []string                        `json:"quoteMarks"`
		Sources       []string                        `json:"sources"`
		Relationships []string                        `json:"relationships"`
		Drawn         struct {
			Nodes []struct {
				ID, Label string
				Center    bool
			} `json:"nodes"`
			Edges    int `json:"edges"`
			Canvases int `json:"canvases"`
		} `json:"drawn"`
		Clicked  struct{ ID, URL, Name string }   `json:"clicked"`
		Followed struct{ Href, URL, Name string } `json:"followed"`
	}
	require.NoError(t, json.Unmarshal(out, &report), "report: %s", out)

	// The drop: every file of the nested folders, with its path.
	dropped := map[string]string{}
	for _, u := range report.Dropped {
		dropped[u.Path] = u.State
	}
	require.Equal(t, map[string]string{
		"notes/orbit.md": "uploaded", "notes/space/lantern.md": "uploaded", "notes/space/ports/harbor.md": "uploaded",
	}, dropped)
	again := map[string]string{}
	for _, u := range report.FolderInput {
		again[u.Path] = u.State
	}
	require.Equal(t, map[string]string{
		"notes/orbit.md": "already uploaded", "notes/space/lantern.md": "already uploaded", "notes/space/ports/harbor.md": "already uploaded",
	}, again)
	require.True(t, report.NotReloaded, "the documents page was reloaded")
	require.True(t, report.JobsNotReload, "the jobs page was reloaded")
	require.Len(t, report.Documents, 3)
	for _, d := range report.Documents {
		require.Equal(t, "parsed", d.Status, d.Name)
	}
	require.Len(t, report.Jobs, 3)

	// The server's state: three parsed documents, their jobs ended, the
	// graph the project page counted.
	var docs struct {
		Data []struct{ Filename, Status string } `json:"data"`
	}
	s.must(200, "GET", "/api/documents", s.admin, nil, header{"X-Project-ID", project}).Decode(t, &docs)
	got := map[string]string{}
	for _, d := range docs.Data {
		got[d.Filename] = d.Status
	}
	require.Equal(t, map[string]string{"orbit.md": "parsed", "lantern.md": "parsed", "harbor.md": "parsed"}, got)
	require.Zero(t, s.extractionCount(`SELECT count(*) FROM object_extraction_jobs WHERE project_id = $1
		AND status NOT IN ('completed', 'requires_review')`, project))
	objects := s.extractionCount(`SELECT count(*) FROM graph_objects WHERE project_id = $1 AND deleted_at IS NULL`, project)
	rels := s.extractionCount(`SELECT count(*) FROM graph_relationships WHERE project_id = $1`, project)
	require.Positive(t, objects)
	require.Positive(t, rels)
	require.Equal(t, strconv.Itoa(objects)+" objects, "+strconv.Itoa(rels)+" relationships", report.GraphCount)
	require.Equal(t, min(objects, 50), report.Listed)

	// The object found, opened, quoted and drawn.
	require.Contains(t, report.Found, center.Name)
	require.Contains(t, report.SearchURL, "q=")
	require.Equal(t, "/projects/"+project+"/graph/objects/"+center.ID, report.ObjectURL)
	require.Equal(t, center.Type, report.ObjectType)
	require.NotEmpty(t, report.Quotes, "the object has %d provenance rows now; its page said: %s",
		s.extractionCount(`SELECT count(*) FROM graph_object_provenance WHERE object_id = $1`, center.ID), report.Provenance)
	require.NotEmpty(t, report.QuoteMarks)
	for _, m := range report.QuoteMarks {
		require.True(t, strings.EqualFold(center.Name, m), "quote mark %q", m)
	}
	for _, src := range report.Sources {
		require.Contains(t, src, "/projects/"+project+"/documents/")
		require.Contains(t, src, "/chunks/")
	}
	require.Len(t, report.Relationships, len(mine))
	require.Equal(t, len(mine), report.Drawn.Edges)
	require.Positive(t, report.Drawn.Canvases, "Cytoscape drew on canvases")
	ends := map[string]bool{center.ID: true}
	for _, r := range mine {
		ends[r.SourceID], ends[r.TargetID] = true, true
	}
	require.Len(t, report.Drawn.Nodes, len(ends))
	for _, n := range report.Drawn.Nodes {
		require.True(t, ends[n.ID], "node %s is the object or a neighbour", n.Label)
		require.Equal(t, n.ID == center.ID, n.Center)
	}
	// The node clicked opened its object; the relationship followed too.
	require.True(t, ends[report.Clicked.ID])
	require.Equal(t, "/projects/"+project+"/graph/objects/"+report.Clicked.ID, report.Clicked.URL)
	require.NotEmpty(t, report.Clicked.Name)
	require.Equal(t, report.Followed.Href, report.Followed.URL)
	require.Contains(t, report.Followed.URL, "/projects/"+project+"/graph/objects/")
	require.NotEmpty(t, report.Followed.Name)

	require.Equal(t, []string{"graph-documents", "graph-jobs", "graph-project", "graph-search", "graph-object", "graph-neighbour"}, report.Pages)
	requireScreenshots(t, shots, report.Pages)
}
