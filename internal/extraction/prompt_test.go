package extraction

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/llm"
	"github.com/graphmill/graphmill/internal/templatepack"
)

func defaultTypes(t *testing.T) *templatepack.Types {
	t.Helper()
	svc, err := templatepack.NewService(nil, nil, time.Now)
	require.NoError(t, err)
	return svc.DefaultTypes()
}

// The response schema is what the offline provider reads its type enums
// from: its answer uses only the project's types and parses back.
func TestResponseSchemaFitsLocalProvider(t *testing.T) {
	t.Parallel()
	types := defaultTypes(t)
	schema := responseSchema(types)
	text := "Ada Lovelace worked with Charles Babbage in London. Babbage founded the Analytical Society at Cambridge University."
	res, err := llm.NewLocal(0).Generate(context.Background(), "", llm.GenerateRequest{
		Purpose: llm.PurposeExtraction, System: systemInstruction, Prompt: buildPrompt(types, "notes.md"), Text: text, Schema: schema,
	})
	require.NoError(t, err)
	objs, rels, bad, err := parseOutput(res.JSON)
	require.NoError(t, err)
	require.Zero(t, bad)
	require.NotEmpty(t, objs)
	names := types.ObjectNames()
	var people []string
	for _, o := range objs {
		require.Contains(t, names, o.Type)
		require.NotNil(t, o.Confidence)
		if o.Type == "Person" {
			people = append(people, o.Name)
		}
	}
	require.Contains(t, people, "Charles Babbage")
	for _, r := range rels {
		_, ok := types.Relationship(r.Type)
		require.True(t, ok, "relationship type %q is one of the project's", r.Type)
	}
	// The schema is plain JSON (it goes to the provider as is).
	_, err = json.Marshal(schema)
	require.NoError(t, err)
}

func TestBuildPromptListsTypesAndProperties(t *testing.T) {
	t.Parallel()
	types := defaultTypes(t)
	p := buildPrompt(types, "team.md")
	require.Contains(t, p, `"team.md"`)
	for _, o := range types.Objects {
		require.Contains(t, p, "- "+o.Name+": ")
	}
	for _, r := range types.Relationships {
		require.Contains(t, p, "- "+r.Name+" ("+r.SourceType+" -> "+r.TargetType+")")
	}
	require.Contains(t, p, "birthDate (string)")
}

func TestMakeWindows(t *testing.T) {
	t.Parallel()
	mk := func(tokens ...int) []chunk {
		out := make([]chunk, len(tokens))
		for i, n := range tokens {
			out[i] = chunk{ID: uuid.New(), Index: i, Text: strings.Repeat("w ", n), Tokens: n}
		}
		return out
	}
	sizes := func(ws []window) [][]int {
		var out [][]int
		for _, w := range ws {
			var s []int
			for _, c := range w.chunks {
				s = append(s, c.Index)
			}
			out = append(out, s)
		}
		return out
	}
	cases := []struct {
		name   string
		chunks []chunk
		budget int
		want   [][]int
	}{
		{"none", nil, 100, nil},
		{"one window", mk(10, 20, 30), 100, [][]int{{0, 1, 2}}},
		{"exact fit", mk(50, 50, 50), 100, [][]int{{0, 1}, {2}}},
		{"oversized chunk alone", mk(10, 500, 10), 100, [][]int{{0}, {1}, {2}}},
		{"in order", mk(60, 30, 60, 30), 100, [][]int{{0, 1}, {2, 3}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, c.want, sizes(makeWindows(c.chunks, c.budget)))
		})
	}
}

func TestTextBudget(t *testing.T) {
	t.Parallel()
	schema := map[string]any{"type": "object"}
	require.Less(t, textBudget(0, WindowTokensMax, "sys", "prompt", schema), WindowTokensMax, "capped and less the overhead")
	require.Equal(t, textBudget(0, WindowTokensMax, "", "", schema), textBudget(1_000_000, WindowTokensMax, "", "", schema), "unknown budget: the default, capped")
	small := textBudget(2000, WindowTokensMax, "", strings.Repeat("x", 40000), schema)
	require.Equal(t, WindowTokensMax/4, small, "never under a quarter of the cap")
}

func TestRepairProperties(t *testing.T) {
	t.Parallel()
	types := defaultTypes(t)
	fixed, dropped, _, ok := repairProperties(types, "Person", map[string]any{"occupation": "mathematician"})
	require.True(t, ok)
	require.Empty(t, dropped)
	require.Equal(t, map[string]any{"occupation": "mathematician"}, fixed)

	fixed, dropped, verr, ok := repairProperties(types, "Person", map[string]any{"occupation": "mathematician", "birthDate": 1815, "aliases": "Ada"})
	require.True(t, ok)
	require.Error(t, verr)
	require.Equal(t, []string{"aliases", "birthDate"}, dropped)
	require.Equal(t, map[string]any{"occupation": "mathematician"}, fixed)
	require.NoError(t, types.Validate("Person", fixed))

	_, _, verr, ok = repairProperties(types, "Spaceship", map[string]any{})
	require.False(t, ok, "an unknown type cannot be repaired")
	require.Error(t, verr)
}

func TestParseOutputSkipsBadEntries(t *testing.T) {
	t.Parallel()
	objs, rels, bad, err := parseOutput([]byte(`{"objects":[{"type":"Person","name":"A","confidence":0.9},{"type":7}],"relationships":[{"type":"KNOWS","source":"A","target":"B"},"x"]}`))
	require.NoError(t, err)
	require.Equal(t, 2, bad)
	require.Len(t, objs, 1)
	require.Len(t, rels, 1)
	_, _, _, err = parseOutput([]byte(`[1,2]`))
	require.Error(t, err)
}

func TestMonitorStatusMapping(t *testing.T) {
	t.Parallel()
	for admin, mon := range map[string]string{
		"queued": "pending", "running": "running", "completed": "completed", "requires_review": "completed",
		"failed": "failed", "cancelled": "failed",
	} {
		require.Equal(t, mon, monitorStatus(admin), admin)
		back, ok := adminStatuses(mon)
		require.True(t, ok)
		require.True(t, slices.Contains(back, admin))
	}
	_, ok := adminStatuses("queued")
	require.False(t, ok)
}
