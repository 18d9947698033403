package postgres

import (
	"errors"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// fakeBin creates dir/<names> as empty files: findBinaries only checks that
// they exist.
func fakeBin(t *testing.T, dir string, names ...string) string {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	for _, n := range names {
		require.NoError(t, os.WriteFile(filepath.Join(dir, n), nil, 0o755))
	}
	return dir
}

func TestFindBinaries(t *testing.T) {
	t.Parallel()

	root := t.TempDir()
	// A versioned tree like /usr/lib/postgresql: 9.6 and 16 complete, 17
	// lacks initdb (a client-only install).
	old := fakeBin(t, filepath.Join(root, "lib", "9.6", "bin"), "pg_ctl", "initdb")
	newest := fakeBin(t, filepath.Join(root, "lib", "16", "bin"), "pg_ctl", "initdb")
	fakeBin(t, filepath.Join(root, "lib", "17", "bin"), "pg_ctl")
	glob := filepath.Join(root, "lib", "*", "bin", "pg_ctl")
	onPath := fakeBin(t, filepath.Join(root, "path"), "pg_ctl", "initdb")
	clientOnly := fakeBin(t, filepath.Join(root, "client"), "pg_ctl")

	notFound := func(string) (string, error) { return "", errors.New("not found") }
	found := func(dir string) func(string) (string, error) {
		return func(name string) (string, error) { return filepath.Join(dir, name), nil }
	}
	tests := []struct {
		name     string
		lookPath func(string) (string, error)
		glob     string
		want     string
		wantErr  bool
	}{
		{name: "PathWins", lookPath: found(onPath), glob: glob, want: onPath},
		{name: "NewestCompleteVersion", lookPath: notFound, glob: glob, want: newest},
		{name: "PathWithoutInitdb", lookPath: found(clientOnly), glob: glob, want: newest},
		{name: "OnlyOldVersion", lookPath: notFound, glob: filepath.Join(root, "lib", "9.*", "bin", "pg_ctl"), want: old},
		{name: "Nothing", lookPath: notFound, glob: filepath.Join(root, "none", "*", "bin", "pg_ctl"), wantErr: true},
		{name: "ClientOnly", lookPath: found(clientOnly), glob: filepath.Join(root, "lib", "17", "bin", "pg_ctl"), wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir, err := findBinaries(tt.lookPath, tt.glob)
			if tt.wantErr {
				require.ErrorIs(t, err, ErrNoBinaries)
				require.Contains(t, err.Error(), "apt-get install -y postgresql")
				require.Contains(t, err.Error(), "GRAPHMILL_DATABASE_URL")
				require.Empty(t, dir)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, dir)
		})
	}
}

func postgresCred(t *testing.T) *syscall.Credential {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the traversal check only applies when running as root")
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		t.Skip("no postgres system user")
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	require.NoError(t, err)
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	require.NoError(t, err)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
}

func TestCheckTraversable(t *testing.T) {
	t.Parallel()
	cred := postgresCred(t)

	parent, err := os.MkdirTemp("", "graphmill-traverse-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(parent) })
	closed := filepath.Join(parent, "closed")
	open := filepath.Join(parent, "open")
	for dir, mode := range map[string]fs.FileMode{parent: 0o711, closed: 0o700, open: 0o711} {
		require.NoError(t, os.MkdirAll(dir, mode))
		require.NoError(t, os.Chmod(dir, mode)) // MkdirAll applies the umask
	}

	// A 0700 root-owned directory on the way refuses, naming it.
	err = checkTraversable(filepath.Join(closed, "graphmill", "pg"), cred)
	require.Error(t, err)
	require.Contains(t, err.Error(), "cannot enter "+closed+" ")
	require.Contains(t, err.Error(), "chmod o+x "+closed)

	// NewCluster applies the same check to the cluster directory's parent.
	_, err = NewCluster(filepath.Join(closed, "pg"), ClusterOptions{})
	require.Error(t, err)
	require.Contains(t, err.Error(), closed)

	// Traversable all the way (missing components are fine: Start creates
	// them).
	require.NoError(t, checkTraversable(filepath.Join(open, "not", "yet"), cred))

	// Owner and group bits count for the postgres user itself.
	owned := filepath.Join(parent, "owned")
	require.NoError(t, os.Mkdir(owned, 0o700))
	require.NoError(t, os.Chown(owned, int(cred.Uid), 0))
	require.NoError(t, checkTraversable(owned, cred))
	grouped := filepath.Join(parent, "grouped")
	require.NoError(t, os.Mkdir(grouped, 0o710))
	require.NoError(t, os.Chmod(grouped, 0o710))
	require.NoError(t, os.Chown(grouped, 0, int(cred.Gid)))
	require.NoError(t, checkTraversable(grouped, cred))
}
