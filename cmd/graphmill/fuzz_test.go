package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/config"
	"github.com/graphmill/graphmill/internal/pgtest"
)

// FuzzWriteBodies sends fuzzed JSON bodies to every write operation of the
// OpenAPI document (POST, PUT and PATCH with a JSON body), as the
// superadmin in the default project, to a real server on a real database.
// Every answer is below 500, and every error is a problem body with code
// and requestId. External services (providers, the MCP registry, web
// search) are a local fake that fails every call; the egress guard keeps
// tenant-set URLs off loopback.
//
//	go test ./cmd/graphmill -run '^$' -fuzz '^FuzzWriteBodies$' -fuzztime 2m
func FuzzWriteBodies(f *testing.F) {
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"error": {"code": 404, "message": "not here", "status": "NOT_FOUND"}}`)
	}))
	f.Cleanup(fake.Close)
	logs := &syncBuffer{}
	s := startLoggedServer(f, pgtest.NewURL(f), slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelError}), func(c *config.Config) {
		c.KeyAIBaseURL, c.AccountAIBaseURL, c.MCPRegistryURL, c.WebSearchBaseURL = fake.URL, fake.URL, fake.URL, fake.URL
		c.MCPCallTimeout = 2 * time.Second
	})
	project, org := s.defaultProject()
	spec := loadSpec(f, s)
	var ops []openAPIOp
	for _, op := range spec.operations() {
		if op.Method != http.MethodGet && op.Method != http.MethodDelete && op.jsonSchema(spec) != nil {
			ops = append(ops, op)
		}
	}
	require.GreaterOrEqual(f, len(ops), 30)
	values := map[string]string{"projectId": project, "orgId": org, "provider": "key-ai", "toolName": "web_search"}

	for i, op := range ops {
		// Seeds: nothing, an empty object, each string member set, and a
		// few malformed documents.
		f.Add(uint16(i), []byte(`{}`))
		body := map[string]any{}
		sch := op.jsonSchema(spec)
		for name, p := range sch.Properties {
			if p := spec.resolve(p); p != nil && isStringType(p.Type) {
				body[name] = "fuzz"
			}
		}
		seed, err := json.Marshal(body)
		require.NoError(f, err)
		f.Add(uint16(i), seed)
	}
	for _, b := range []string{``, `null`, `[]`, `{"a":`, `{"name": "\u0000"}`, `{"name": 1e999}`, "{\"name\": \"\xff\"}", `{"name": {"name": [1, 2, {"x": null}]}}`} {
		f.Add(uint16(0), []byte(b))
	}

	client := &http.Client{Timeout: 30 * time.Second}
	f.Fuzz(func(t *testing.T, which uint16, body []byte) {
		op := ops[int(which)%len(ops)]
		req, err := http.NewRequestWithContext(context.Background(), op.Method, s.base+op.fill(values), bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+s.admin)
		req.Header.Set("X-Project-ID", project)
		res, err := client.Do(req)
		require.NoError(t, err)
		raw, err := io.ReadAll(res.Body)
		_ = res.Body.Close()
		require.NoError(t, err)
		r := response{Status: res.StatusCode, Header: res.Header, Body: raw}
		id := r.Header.Get("X-Request-ID")
		if r.Status >= 500 {
			var cause []string
			for line := range strings.SplitSeq(logs.String(), "\n") {
				if strings.Contains(line, id) {
					cause = append(cause, line)
				}
			}
			t.Fatalf("%s %s %q: %d %s\n%s", op.Method, op.Path, body, r.Status, raw, strings.Join(cause, "\n"))
		}
		if r.Status >= 400 {
			requireProblem(t, r, r.Status, codeOf(t, r), op.Method, op.Path, string(body))
		}
	})
}

// codeOf is the code member of a problem body.
func codeOf(t testing.TB, r response) string {
	t.Helper()
	var p struct {
		Code string `json:"code"`
	}
	require.NoError(t, json.Unmarshal(r.Body, &p), "%s", r.Body)
	require.NotEmpty(t, p.Code, "%s", r.Body)
	return p.Code
}
