package gitrepo

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/connector"
)

func TestFileURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ repo, branch, path, want string }{
		{"https://github.com/org/repo.git", "main", "docs/a b.md", "https://github.com/org/repo/blob/main/docs/a%20b.md"},
		{"https://github.com/org/repo", "release/1.x", "README.md", "https://github.com/org/repo/blob/release/1.x/README.md"},
		{"https://gitlab.com/group/sub/repo.git", "main", "x.md", "https://gitlab.com/group/sub/repo/-/blob/main/x.md"},
		{"https://git.example.com/org/repo.git", "main", "x.md", ""},
	} {
		raw, err := json.Marshal(tc.repo)
		require.NoError(t, err)
		s, err := parseSettings(connector.Config{fieldURL: raw})
		require.NoError(t, err)
		require.Equal(t, tc.want, s.fileURL(tc.branch, tc.path), tc.repo)
	}
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
