package postgres_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/pgtest"
	"github.com/graphmill/graphmill/internal/postgres"
)

func TestText(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{"plain", "plain"},
		{"", ""},
		{"a\x00b", "ab"},
		{"\x00\x00", ""},
		{"r\xe9sum\xe9", "r\uFFFDsum\uFFFD"},
		{"x\x00\xff", "x\uFFFD"},
		{"héllo ✓", "héllo ✓"},
	} {
		require.Equal(t, c.want, postgres.Text(c.in), "%q", c.in)
		require.Equal(t, c.in == c.want, postgres.ValidText(c.in), "%q", c.in)
	}
}

func TestJSONB(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{`{"a":"b"}`, `{"a":"b"}`},
		{`{"a\u0000":"b\u0000c"}`, `{"a":"bc"}`},
		{`["\\u0000"]`, `["\\u0000"]`},
		{`["\\\u0000"]`, `["\\"]`},
		{`["\u00001"]`, `["1"]`},
		{`["\"\u0000"]`, `["\""]`},
		{"[\"\xe9\"]", "[\"\uFFFD\"]"},
		{`[]`, `[]`},
	} {
		require.Equal(t, c.want, string(postgres.JSONB([]byte(c.in))), "%s", c.in)
	}
}

// TestTextStored: what Text and JSONB return, PostgreSQL stores (the
// same values as they are are refused).
func TestTextStored(t *testing.T) {
	t.Parallel()
	tx := pgtest.Tx(t)
	ctx := context.Background()
	_, err := tx.Exec(ctx, `CREATE TEMP TABLE t (s text, j jsonb)`)
	require.NoError(t, err)
	bad := "id\x00\xe9"
	raw, err := json.Marshal(map[string]string{bad: bad})
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `SAVEPOINT p`)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `INSERT INTO t VALUES ($1, NULL)`, bad)
	require.True(t, postgres.IsUnstorableText(err), "%v", err)
	_, err = tx.Exec(ctx, `ROLLBACK TO SAVEPOINT p`)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `INSERT INTO t VALUES (NULL, $1)`, raw)
	require.True(t, postgres.IsUnstorableText(err), "%v", err)
	_, err = tx.Exec(ctx, `ROLLBACK TO SAVEPOINT p`)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `INSERT INTO t VALUES ($1, $2)`, postgres.Text(bad), postgres.JSONB(raw))
	require.NoError(t, err)
	var s, j string
	require.NoError(t, tx.QueryRow(ctx, `SELECT s, j->>$1 FROM t`, "id\uFFFD").Scan(&s, &j))
	require.Equal(t, "id\uFFFD", s)
	require.Equal(t, "id\uFFFD", j)
}
