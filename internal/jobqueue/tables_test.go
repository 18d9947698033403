package jobqueue_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/jobqueue"
	"github.com/graphmill/graphmill/internal/pgtest"
)

// migratedJobTables are the job tables the migrations create today; the
// test finds every job table itself and requires at least these, so that
// a failure to find them cannot pass for a clean schema.
var migratedJobTables = []string{"chunk_embedding_jobs", "document_parsing_jobs", "email_jobs", "graph_embedding_jobs", "object_extraction_jobs"}

// referenceTable is built from jobqueue.CreateTableSQL in the test's
// transaction: the column block and indexes every job table must match.
// (The tests' transactions share a database: each names its own tables.)
const referenceTable = "jobqueue_reference_jobs"

// TestMigratedJobTablesHaveTheCommonColumns: every job table of the
// migrations (every table named *_jobs or with a locked_until column)
// starts with exactly jobqueue.CommonColumns (names in order, types,
// defaults, nullability, the status check, the primary key), has
// jobqueue.TraceParentColumn (anywhere after them) and has the
// queued and running partial indexes as CreateTableSQL makes them. The one
// allowed difference is the one CommonColumns documents: a tenant queue's
// project_id is NOT NULL with a foreign key to projects.
func TestMigratedJobTablesHaveTheCommonColumns(t *testing.T) {
	t.Parallel()
	tx := pgtest.Tx(t)
	ctx := context.Background()
	_, err := tx.Exec(ctx, jobqueue.CreateTableSQL(referenceTable, ""))
	require.NoError(t, err)
	want := describeJobTable(t, tx, referenceTable)
	require.Len(t, want.columns, strings.Count(jobqueue.CommonColumns, "\n")+2, "one column per line of CommonColumns, and trace_parent")

	rows, err := tx.Query(ctx, `SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND c.relname <> $1
			AND (c.relname LIKE '%\_jobs' OR EXISTS (SELECT 1 FROM pg_attribute a
				WHERE a.attrelid = c.oid AND a.attname = 'locked_until' AND NOT a.attisdropped))
		ORDER BY c.relname`, referenceTable)
	require.NoError(t, err)
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	for _, want := range migratedJobTables {
		require.Contains(t, tables, want)
	}
	deviations := map[string][]string{}
	for _, table := range tables {
		if diff := jobTableDiff(want, describeJobTable(t, tx, table)); len(diff) > 0 {
			deviations[table] = diff
		}
	}
	require.Empty(t, deviations, "job tables departing from jobqueue.CommonColumns")
}

// TestJobTableDiffFindsDeviations: the comparison of the test above
// reports each kind of deviation from the common block.
func TestJobTableDiffFindsDeviations(t *testing.T) {
	t.Parallel()
	tx := pgtest.Tx(t)
	ctx := context.Background()
	_, err := tx.Exec(ctx, jobqueue.CreateTableSQL("deviating_reference_jobs", ""))
	require.NoError(t, err)
	want := describeJobTable(t, tx, "deviating_reference_jobs")
	block := jobqueue.CommonColumns
	cases := []struct {
		name    string
		columns string // the table's column list (default: the block)
		indexes string // statements after CREATE TABLE
		diff    string // a part of one reported difference
		trace   string // the trace_parent column (default: jobqueue.TraceParentColumn)
	}{
		{name: "identical"},
		{name: "tenant project", columns: strings.Replace(block, "project_id    uuid,", "project_id    uuid NOT NULL REFERENCES projects (id),", 1)},
		{
			name: "not null project without the foreign key", diff: "project_id",
			columns: strings.Replace(block, "project_id    uuid,", "project_id    uuid NOT NULL,", 1),
		},
		{name: "other default", columns: strings.Replace(block, "DEFAULT 3", "DEFAULT 5", 1), diff: "max_retries"},
		{name: "other type", columns: strings.Replace(block, "priority      int", "priority      bigint", 1), diff: "priority"},
		{name: "nullable", columns: strings.Replace(block, "run_at        timestamptz NOT NULL", "run_at        timestamptz", 1), diff: "run_at"},
		{name: "other order", columns: swapLines(block, 5, 6), diff: "column 6"},
		{name: "missing column", columns: strings.Replace(block, "    heartbeat_at  timestamptz,\n", "", 1), diff: "column"},
		{name: "domain column inside the block", columns: strings.Replace(block, "    error_msg", "    payload int,\n    error_msg", 1), diff: "column 12"},
		{
			name: "other status check", diff: "check",
			columns: strings.Replace(block, ",'requires_review'", "", 1),
		},
		{name: "no primary key", columns: strings.Replace(block, "uuid PRIMARY KEY", "uuid NOT NULL", 1), diff: "primary key"},
		{
			name: "queued index on other columns", diff: "queued_idx",
			indexes: `CREATE INDEX %[1]s_queued_idx ON %[1]s (run_at, id) WHERE status = 'queued'; CREATE INDEX %[1]s_running_idx ON %[1]s ` + jobqueue.RunningIndex,
		},
		{
			name: "queued index without its predicate", diff: "queued_idx",
			indexes: `CREATE INDEX %[1]s_queued_idx ON %[1]s (priority DESC, run_at, id); CREATE INDEX %[1]s_running_idx ON %[1]s ` + jobqueue.RunningIndex,
		},
		{name: "no trace_parent", trace: "other_column text", diff: "trace_parent: missing"},
		{name: "trace_parent not text", trace: "trace_parent bytea", diff: "trace_parent"},
		{name: "no running index", indexes: `CREATE INDEX %[1]s_queued_idx ON %[1]s ` + jobqueue.QueuedIndex, diff: "running_idx"},
	}
	for i, c := range cases {
		table := fmt.Sprintf("deviating_%d_jobs", i)
		columns, indexes, trace := c.columns, c.indexes, c.trace
		if trace == "" {
			trace = jobqueue.TraceParentColumn
		}
		if columns == "" {
			columns = block
		}
		if indexes == "" {
			indexes = `CREATE INDEX %[1]s_queued_idx ON %[1]s ` + jobqueue.QueuedIndex + `; CREATE INDEX %[1]s_running_idx ON %[1]s ` + jobqueue.RunningIndex
		}
		_, err := tx.Exec(ctx, `CREATE TABLE `+table+` (`+columns+`, document_id uuid, `+trace+`); `+fmt.Sprintf(indexes, table))
		require.NoError(t, err, c.name)
		diff := jobTableDiff(want, describeJobTable(t, tx, table))
		if c.diff == "" {
			require.Empty(t, diff, c.name)
			continue
		}
		require.NotEmpty(t, diff, c.name)
		require.Contains(t, strings.Join(diff, "\n"), c.diff, c.name)
	}
}

// swapLines swaps lines i and j (0-based) of a column block, moving their
// commas with them.
func swapLines(block string, i, j int) string {
	lines := strings.Split(block, ",\n")
	lines[i], lines[j] = lines[j], lines[i]
	return strings.Join(lines, ",\n")
}

// jobTable is what the test compares of a job table.
type jobTable struct {
	name      string
	columns   []jobColumn // in order
	checks    []string    // definitions of the check constraints on the common columns
	pkey      string      // the primary key's columns
	projectFK bool        // project_id references projects
	indexes   map[string]string
}

type jobColumn struct {
	Name, Type, Default string
	Nullable            bool
}

func (c jobColumn) String() string {
	null := "NOT NULL"
	if c.Nullable {
		null = "NULL"
	}
	return fmt.Sprintf("%s %s %s default %q", c.Name, c.Type, null, c.Default)
}

// describeJobTable reads a table's columns, constraints and indexes from
// the catalogs (information_schema for the columns).
func describeJobTable(t *testing.T, tx pgx.Tx, table string) jobTable {
	t.Helper()
	ctx := context.Background()
	jt := jobTable{name: table, indexes: map[string]string{}}
	rows, err := tx.Query(ctx, `SELECT column_name, data_type, coalesce(column_default, ''), is_nullable = 'YES'
		FROM information_schema.columns WHERE table_schema = 'public' AND table_name = $1 ORDER BY ordinal_position`, table)
	require.NoError(t, err)
	for rows.Next() {
		var c jobColumn
		require.NoError(t, rows.Scan(&c.Name, &c.Type, &c.Default, &c.Nullable))
		jt.columns = append(jt.columns, c)
	}
	require.NoError(t, rows.Err())
	require.NotEmpty(t, jt.columns, "table %s", table)

	rows, err = tx.Query(ctx, `SELECT con.contype::text, pg_get_constraintdef(con.oid),
			coalesce((SELECT array_agg(a.attname::text ORDER BY a.attnum) FROM pg_attribute a
				WHERE a.attrelid = con.conrelid AND a.attnum = ANY(con.conkey)), '{}'),
			coalesce(con.confrelid::regclass::text, '')
		FROM pg_constraint con WHERE con.conrelid = $1::regclass ORDER BY 2`, table)
	require.NoError(t, err)
	common := map[string]bool{}
	for _, c := range []string{
		"id", "project_id", "status", "priority", "run_at", "attempt", "retry_count", "max_retries",
		"locked_by", "locked_until", "heartbeat_at", "error_msg", "started_at", "completed_at", "created_at", "updated_at",
	} {
		common[c] = true
	}
	for rows.Next() {
		var kind, def, refTable string
		var cols []string
		require.NoError(t, rows.Scan(&kind, &def, &cols, &refTable))
		switch {
		case kind == "p":
			jt.pkey = strings.Join(cols, ",")
		case kind == "f" && slices.Equal(cols, []string{"project_id"}) && refTable == "projects":
			jt.projectFK = true
		case kind == "c" && len(cols) > 0 && common[cols[0]]:
			jt.checks = append(jt.checks, def)
		}
	}
	require.NoError(t, rows.Err())

	rows, err = tx.Query(ctx, `SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public' AND tablename = $1`, table)
	require.NoError(t, err)
	for rows.Next() {
		var name, def string
		require.NoError(t, rows.Scan(&name, &def))
		// Compared across tables: the table's name is the placeholder.
		jt.indexes[strings.TrimPrefix(name, table)] = strings.ReplaceAll(def, table, "<table>")
	}
	require.NoError(t, rows.Err())
	return jt
}

// jobTableDiff lists how got departs from the reference want: its first
// columns must be want's columns exactly (project_id may be NOT NULL when
// it references projects), its check constraints on them and its primary
// key the same, and its _queued_idx and _running_idx the same.
func jobTableDiff(want, got jobTable) []string {
	var diff []string
	for i, w := range want.columns {
		if w.Name == "trace_parent" {
			// Added to the older tables by a later migration: after their
			// domain columns.
			idx := slices.IndexFunc(got.columns, func(c jobColumn) bool { return c.Name == w.Name })
			if idx < 0 {
				diff = append(diff, fmt.Sprintf("column %s: missing, want %s", w.Name, w))
			} else if got.columns[idx] != w {
				diff = append(diff, fmt.Sprintf("column %s: %s, want %s", w.Name, got.columns[idx], w))
			}
			continue
		}
		if i >= len(got.columns) {
			diff = append(diff, fmt.Sprintf("column %d: missing, want %s", i+1, w))
			continue
		}
		g := got.columns[i]
		if w.Name == "project_id" && g.Name == w.Name && !g.Nullable && got.projectFK {
			g.Nullable = true // a tenant queue (CommonColumns)
		}
		if g != w {
			diff = append(diff, fmt.Sprintf("column %d: %s, want %s", i+1, g, w))
		}
	}
	if !slices.Equal(got.checks, want.checks) {
		diff = append(diff, fmt.Sprintf("check constraints %q, want %q", got.checks, want.checks))
	}
	if got.pkey != want.pkey {
		diff = append(diff, fmt.Sprintf("primary key (%s), want (%s)", got.pkey, want.pkey))
	}
	for _, suffix := range []string{"_queued_idx", "_running_idx"} {
		if got.indexes[suffix] != want.indexes[suffix] {
			diff = append(diff, fmt.Sprintf("index %s%s: %q, want %q", got.name, suffix, got.indexes[suffix], want.indexes[suffix]))
		}
	}
	return diff
}
