package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestConsoleBrowserUploads drives console.js in chromium
// (testdata/console-browser/uploads.mjs): a folder of 10 notes beside a
// .git folder and a .DS_Store is uploaded at most 4 at a time, without
// the hidden entries, one upload refused with 429 and sent again after
// its Retry-After (every note stored once); a chat turn whose stream ends
// without done or error is marked failed (not left streaming); a turn
// answered 401 with HX-Redirect goes to the sign-in page.
func TestConsoleBrowserUploads(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	project, _ := s.defaultProject()
	session := s.chatSession(s.admin, project)
	dir := filepath.Join(t.TempDir(), "notes")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, ".git", "objects"), 0o750))
	const files = 10
	var want []string
	for i := range files {
		name := fmt.Sprintf("note%02d.md", i)
		want = append(want, "notes/"+name)
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), fmt.Appendf(nil, "# Note %d\n\nNote number %d of the folder.\n", i, i), 0o600))
	}
	for _, hidden := range []string{".DS_Store", ".git/config", ".git/objects/ab.md"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, hidden), []byte("# hidden\n"), 0o600))
	}

	out, _ := runConsoleScript(t, s, "uploads.mjs", project, []string{dir, strconv.Itoa(files), session}, func(name string) string {
		t.Errorf("unknown step %q", name)
		return ""
	})
	var report struct {
		Pages       []string `json:"pages"`
		CSP         []string `json:"csp"`
		Errors      []string `json:"errors"`
		MaxInflight int      `json:"maxInflight"`
		Posts       int      `json:"posts"`
		Queued      int      `json:"queued"`
		Names       []string `json:"names"`
		Failed      int      `json:"failed"`
		CutReply    struct {
			Classes string `json:"classes"`
			Text    string `json:"text"`
		} `json:"cutReply"`
		CutFlash     string `json:"cutFlash"`
		SignedOutURL string `json:"signedOutURL"`
	}
	require.NoError(t, json.Unmarshal(out, &report), string(out))
	require.Empty(t, report.CSP)
	require.Empty(t, report.Errors)
	require.Equal(t, []string{"uploads", "chat-cut"}, report.Pages)

	require.Equal(t, want, report.Names, "the hidden entries are not uploaded")
	require.Equal(t, 4, report.MaxInflight, "four at a time")
	require.Positive(t, report.Queued, "the others wait")
	require.Equal(t, files+1, report.Posts, "one sent again after the 429")
	require.Zero(t, report.Failed)
	require.Equal(t, files, s.extractionCount(`SELECT count(*) FROM documents WHERE project_id = $1`, project), "every note stored once")
	require.Zero(t, s.extractionCount(`SELECT count(*) FROM documents WHERE project_id = $1 AND filename NOT LIKE 'note%'`, project))

	require.Contains(t, report.CutReply.Classes, "failed")
	require.NotContains(t, report.CutReply.Classes, "streaming")
	require.Equal(t, "Half an ans", report.CutReply.Text)
	require.Contains(t, report.CutFlash, "the answer was cut off")
	require.Equal(t, s.base+"/signin", report.SignedOutURL)
}
