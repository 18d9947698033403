package postgres_test

import (
	"context"
	"encoding/json"
	"strings"
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

// TestJSONBLoneSurrogates: an escape of half a surrogate pair (a model's
// or an MCP server's raw JSON may hold one) is refused by jsonb (22P02);
// JSONB replaces it with \ufffd, what encoding/json decodes it to, and
// keeps a whole pair and an escaped backslash before a u.
func TestJSONBLoneSurrogates(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{`["\ud800"]`, `["\ufffd"]`},
		{`["\uDC00x"]`, `["\ufffdx"]`},
		{`["\ud83d\ude00"]`, `["\ud83d\ude00"]`},
		{`["\ud83d\ud83d\ude00"]`, `["\ufffd\ud83d\ude00"]`},
		{`["\ud800\u0000"]`, `["\ufffd"]`},
		{`["\\ud800"]`, `["\\ud800"]`},
		{`{"\ud800":"\u00e9"}`, `{"\ufffd":"\u00e9"}`},
	} {
		got := postgres.JSONB([]byte(c.in))
		require.Equal(t, c.want, string(got), "%s", c.in)
		var a, b any
		require.NoError(t, json.Unmarshal([]byte(strings.ReplaceAll(c.in, `\u0000`, "")), &a))
		require.NoError(t, json.Unmarshal(got, &b))
		require.Equal(t, a, b, "%s decodes as before, less its NULs", c.in)
	}
	tx := pgtest.Tx(t)
	var s string
	require.NoError(t, tx.QueryRow(context.Background(), `SELECT ($1::jsonb)->>0`, postgres.JSONB([]byte(`["a\ud800b"]`))).Scan(&s))
	require.Equal(t, "a\uFFFDb", s)
}

// payload4k is about 4 kB of JSON text with escapes (of <, of a quote,
// an escaped backslash before u0000) but nothing to clean.
func payload4k() []byte {
	raw, _ := json.Marshal(map[string]string{"text": strings.Repeat(`<p>héllo "wörld" \u0000 ✓</p> `, 120)})
	return raw
}

// TestCleanAllocatesNothingWhenNothingChanges: Text and JSONB run on
// every streamed delta and every event publish; a value with nothing to
// clean is returned as it is, without allocating (BenchmarkJSONB,
// BenchmarkText give the figures). Not parallel: allocation counts are
// process-wide.
func TestCleanAllocatesNothingWhenNothingChanges(t *testing.T) { //nolint:paralleltest // counts allocations of the whole process
	raw := payload4k()
	require.Greater(t, len(raw), 4000)
	require.Contains(t, string(raw), `\\u0000`)
	s := string(raw)
	require.Zero(t, testing.AllocsPerRun(20, func() { _ = postgres.JSONB(raw) }))
	require.Zero(t, testing.AllocsPerRun(20, func() { _ = postgres.Text(s) }))
	require.Equal(t, raw, postgres.JSONB(raw))
}

func BenchmarkJSONB(b *testing.B) {
	raw := payload4k()
	b.ReportAllocs()
	for b.Loop() {
		_ = postgres.JSONB(raw)
	}
}

func BenchmarkText(b *testing.B) {
	s := string(payload4k())
	b.ReportAllocs()
	for b.Loop() {
		_ = postgres.Text(s)
	}
}

// TestNameText: a name that cannot be refused keeps every change
// visible: a NUL becomes U+FFFD as invalid bytes do.
func TestNameText(t *testing.T) {
	t.Parallel()
	require.Equal(t, "search", postgres.NameText("search"))
	require.Equal(t, "sea\uFFFDrch", postgres.NameText("sea\x00rch"))
	require.Equal(t, "x\uFFFD\uFFFD", postgres.NameText("x\x00\xff"))
}

func TestClip(t *testing.T) {
	t.Parallel()
	require.Equal(t, "short", postgres.Clip("short", 4000))
	long := strings.Repeat("é", 4000) // two bytes each
	got := postgres.Clip(long, 4001)
	require.Len(t, got, 4000, "cut back to the rune boundary")
	require.True(t, strings.HasPrefix(long, got))
}

// TestTextMax: a message from outside is cleaned before it is cut, and
// cut on a rune boundary, so what is stored is valid text of at most n
// bytes (the usage ledger cut its error text at 500 bytes mid-rune).
func TestTextMax(t *testing.T) {
	t.Parallel()
	require.Equal(t, "ab", postgres.TextMax("a\x00b", 10))
	got := postgres.TextMax(strings.Repeat("日", 200), 500) // three bytes each
	require.Equal(t, strings.Repeat("日", 166), got)
	require.True(t, postgres.ValidText(postgres.TextMax("x\xff\x00"+strings.Repeat("é", 300), 500)))
}
