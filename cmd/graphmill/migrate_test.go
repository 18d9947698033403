package main

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/pgtest"
	"github.com/graphmill/graphmill/migrations"
)

// graphmill migrate says how many migrations it applied: all of them on
// an empty database, none on a migrated one.
func TestMigrateCommandReportsWhatItApplied(t *testing.T) {
	t.Parallel()
	url := pgtest.NewEmptyURL(t)
	files, err := fs.Glob(migrations.FS, "*.sql")
	require.NoError(t, err)
	all := len(files)
	require.Positive(t, all)

	for _, want := range []int{all, 0} {
		var out, errOut bytes.Buffer
		err := run(context.Background(), []string{"migrate"},
			[]string{"GRAPHMILL_DATA_DIR=" + t.TempDir(), "GRAPHMILL_DATABASE_URL=" + url}, &out, &errOut)
		require.NoError(t, err, errOut.String())
		require.Equal(t, fmt.Sprintf("applied %d migration(s)\n", want), out.String())
	}
}
