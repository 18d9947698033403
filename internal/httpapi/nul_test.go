package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/httpapi"
	"github.com/graphmill/graphmill/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func TestCheckJSON(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, body, field string // field empty: accepted
	}{
		{name: "clean", body: `{"name": "a", "n": 1, "list": ["x", {"y": null}]}`},
		{name: "escaped backslash", body: `{"name": "a\\u0000"}`},
		{name: "malformed is left to the decoder", body: `{"name": "\u0000`},
		{name: "top-level member", body: `{"a": 1, "name": "x\u0000y"}`, field: "body.name"},
		{name: "nested member", body: `{"config": {"env": {"KEY": "\u0000"}}}`, field: "body.config.env.KEY"},
		{name: "array element", body: `{"args": ["a", true, 3, null, {"k": 1}, "\u0000"]}`, field: "body.args[5]"},
		{name: "after nested containers", body: `{"a": [[1], {"b": [2]}], "c": "\u0000"}`, field: "body.c"},
		{name: "object in array", body: `{"items": [{"t": "ok"}, {"t": "\u0000"}]}`, field: "body.items[1].t"},
		{name: "member name", body: `{"headers": {"X\u0000": "v"}}`, field: "body.headers (a member name)"},
		{name: "bare string", body: `"\u0000"`, field: "body"},
		{name: "top-level array", body: `["a", "b\u0000"]`, field: "body[1]"},
		{name: "after an escaped quote", body: `{"a": "\"\\", "b": "\u0000"}`, field: "body.b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := httpapi.CheckJSON([]byte(tc.body))
			if tc.field == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			require.Equal(t, errs.Invalid, errs.CodeOf(err))
			require.Equal(t, tc.field+": must not contain the NUL character (U+0000)", err.Error())
		})
	}
}

// TestUnstorableTextIsInvalid: the second line of defence. An error in
// which PostgreSQL refused a value as text (a NUL in text, 22021; \u0000 in
// jsonb, 22P05) answers 400 invalid_argument, not 500.
func TestUnstorableTextIsInvalid(t *testing.T) {
	t.Parallel()
	pool := pgtest.New(t)
	ctx := context.Background()
	var s string
	textErr := pool.QueryRow(ctx, `SELECT $1::text`, "a\x00b").Scan(&s)
	require.Error(t, textErr)
	jsonbErr := pool.QueryRow(ctx, `SELECT ($1::jsonb)::text`, `{"a": "\u0000"}`).Scan(&s)
	require.Error(t, jsonbErr)

	for _, err := range []error{textErr, jsonbErr} {
		w := httptest.NewRecorder()
		httpapi.WriteProblem(w, httptest.NewRequest(http.MethodGet, "/", nil), errors.Join(errors.New("record activity"), err))
		require.Equal(t, http.StatusBadRequest, w.Code, w.Body.String())
		var p httpapi.Problem
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &p))
		require.Equal(t, errs.Invalid, p.Code)
		require.Contains(t, p.Detail, "U+0000")
	}
	// Anything else stays an internal error.
	w := httptest.NewRecorder()
	httpapi.WriteProblem(w, httptest.NewRequest(http.MethodGet, "/", nil), errors.New("boom"))
	require.Equal(t, http.StatusInternalServerError, w.Code)
	require.Contains(t, w.Body.String(), `"code":"internal"`)
}
