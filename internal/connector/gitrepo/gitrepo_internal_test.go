package gitrepo

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/connector"
)

// TestSourceURL: a file's source URL is the host-neutral
// git+<repository>@<commit>#<path>, its path escaped as a fragment, with
// no credentials even when the settings hold a URL with user info.
func TestSourceURL(t *testing.T) {
	t.Parallel()
	const commit = "0123456789abcdef0123456789abcdef01234567"
	for _, tc := range []struct{ repo, path, want string }{
		{"https://github.com/org/repo.git", "docs/a b.md", "https://github.com/org/repo/blob/" + commit + "/docs/a%20b.md"},
		{"https://gitlab.com/group/repo", "README", "https://gitlab.com/group/repo/-/blob/" + commit + "/README"},
		{"https://git.example.com:8443/group/sub/repo", "README", "git+https://git.example.com:8443/group/sub/repo@" + commit + "#README"},
	} {
		raw, err := json.Marshal(tc.repo)
		require.NoError(t, err)
		s, err := parseSettings(connector.Config{fieldURL: raw})
		require.NoError(t, err)
		require.Equal(t, tc.want, s.sourceURL(commit, tc.path), tc.repo)
	}
	s := settings{url: "https://user:tok123@git.example.com/repo.git", token: "tok123"}
	require.Equal(t, "git+https://git.example.com/repo.git@"+commit+"#x.md", s.sourceURL(commit, "x.md"))
}

func TestRedact(t *testing.T) {
	t.Parallel()
	s := settings{token: "tok123"}
	base := errors.New("boom")
	err := s.errorf("while sending tok123: %w", base)
	require.EqualError(t, err, "while sending ***: boom")
	require.ErrorIs(t, err, base)
	require.Equal(t, base, settings{}.redactErr(base))
	require.EqualError(t, s.redactErr(fmt.Errorf("plain")), "plain")
}
