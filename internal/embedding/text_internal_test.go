package embedding

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/graph"
)

func TestCheckTemplate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, tmpl string
		fields     []string
		err        string // empty: valid
	}{
		{name: "StandardFields", tmpl: "{{.type}} {{.key}} {{.name}} {{.description}} {{.labels}} {{.status}}"},
		{name: "PolicyField", tmpl: "{{.name}} born {{.born}}", fields: []string{"born"}},
		{name: "Text", tmpl: "no placeholders"},
		{name: "Builtins", tmpl: `{{if and .name .born}}{{len .name}}{{end}} {{if eq .status "accepted"}}ok{{else if not .born}}-{{end}}`, fields: []string{"born"}},
		{name: "IndexForOddNames", tmpl: `{{index . "birth-date"}}`, fields: []string{"birth-date"}},
		{name: "RangeOverListField", tmpl: `{{range $i, $l := .labels}}{{if $i}}; {{end}}{{$l}}{{end}} {{range $.tags}}{{.}}{{else}}none{{end}}`, fields: []string{"tags"}},
		{name: "WithAndVariables", tmpl: `{{$n := .name}}{{with .description}}{{$n}}: {{.}}{{end}}`},
		{name: "UnknownField", tmpl: "{{.name}} {{.born}}", err: `{{.born}} refers to "born"`},
		{name: "UnknownInIf", tmpl: "{{if .secret}}x{{end}}", err: `"secret"`},
		{name: "UnknownInElse", tmpl: "{{if .name}}x{{else}}{{.secret}}{{end}}", err: `"secret"`},
		{name: "UnknownInRange", tmpl: "{{range .labels}}{{.x}}{{end}}", err: `"x"`},
		{name: "UnknownInWith", tmpl: "{{with .name}}{{.}}{{end}}{{with $.secret}}{{end}}", err: `"secret"`},
		{name: "UnknownInPipeline", tmpl: `{{.secret | len}}`, err: `"secret"`},
		{name: "DoesNotParse", tmpl: "{{.name", err: "template does not parse"},
		{name: "UnknownFunction", tmpl: "{{upper .name}}", err: "template does not parse"},
		// What an embedding text does not need, and what could make a
		// worker spin or allocate without bound, is refused by rule.
		{name: "RangeOverInteger", tmpl: "{{range 1000000000}}{{range 1000000000}}{{end}}{{end}}", err: "range may only iterate over a field"},
		{name: "RangeOverFunctionResult", tmpl: `{{range index . "tags"}}x{{end}}`, fields: []string{"tags"}, err: "range may only iterate over a field"},
		{name: "RangeOverVariable", tmpl: `{{$t := .tags}}{{range $t}}x{{end}}`, fields: []string{"tags"}, err: "range may only iterate over a field"},
		{name: "RangeOverDot", tmpl: `{{with .tags}}{{range .}}x{{end}}{{end}}`, fields: []string{"tags"}, err: "range may only iterate over a field"},
		{name: "Define", tmpl: `{{define "t"}}{{.name}}{{end}}{{template "t" .}}`, err: "define, block and template are not allowed"},
		{name: "Block", tmpl: `{{block "t" .}}{{.name}}{{end}}`, err: "define, block and template are not allowed"},
		{name: "Printf", tmpl: `{{printf "%999999d" 1}}`, err: "function printf is not allowed"},
		{name: "Print", tmpl: `{{print .name .name}}`, err: "function print is not allowed"},
		{name: "Call", tmpl: `{{call .name}}`, err: "function call is not allowed"},
		{name: "ChainOnResult", tmpl: `{{(.name).Foo}}`, err: "field access on a result is not allowed"},
	} {
		err := CheckTemplate(tc.tmpl, tc.fields)
		if tc.err == "" {
			require.NoError(t, err, tc.name)
			continue
		}
		require.Error(t, err, tc.name)
		require.Equal(t, errs.Invalid, errs.CodeOf(err), tc.name)
		require.Contains(t, err.Error(), tc.err, tc.name)
	}
}

func TestRender(t *testing.T) {
	t.Parallel()
	o := graph.Object{
		ID: uuid.New(), Type: "Person", Key: "ada", Name: "Ada", Description: "Mathematician", Labels: []string{"a", "b"}, Status: "accepted",
		Properties: map[string]any{
			"born": json.Number("1815"), "alive": false, "tags": []any{"x", json.Number("2"), nil}, "meta": map[string]any{"k": "v"},
			"name": "shadowed", "hidden": "not listed", "none": nil,
		},
	}
	for _, tc := range []struct {
		name, tmpl string
		fields     []string
		want       string
	}{
		{"Fields", "{{.name}}|{{.type}}|{{.key}}|{{.labels}}|{{.status}}|{{.description}}", nil, "Ada|Person|ada|a, b|accepted|Mathematician"},
		{
			"Properties", "{{.born}} {{.alive}} {{.tags}} {{.meta}} [{{.none}}] [{{.absent}}]",
			[]string{"born", "alive", "tags", "meta", "none", "absent"},
			`1815 false x, 2 {"k":"v"} [] []`,
		},
		{"StandardFieldWins", "{{.name}}", []string{"name"}, "Ada"},
		{"UnlistedPropertyHidden", `[{{index . "hidden"}}]`, nil, "[<no value>]"},
		{"Trimmed", "  {{.name}}\n\n", nil, "Ada"},
	} {
		tmpl, err := prepare(tc.tmpl, tc.fields)
		require.NoError(t, err, tc.name)
		got, err := render(tmpl, o, tc.fields, time.Minute)
		require.NoError(t, err, tc.name)
		require.Equal(t, tc.want, got, tc.name)
	}

	// A template that would write forever is cut at TextMaxBytes.
	long := o
	long.Properties = map[string]any{"many": manyItems(100000)}
	tmpl, err := prepare("{{range $.many}}{{$.name}} é {{end}}", []string{"many"})
	require.NoError(t, err)
	got, err := render(tmpl, long, []string{"many"}, time.Minute)
	require.NoError(t, err)
	require.LessOrEqual(t, len(got), TextMaxBytes)
	require.Greater(t, len(got), TextMaxBytes-10)
	require.True(t, strings.HasPrefix(got, "Ada é Ada"))

	// A template that loops without writing is stopped at its deadline:
	// 10^15 iterations that no output budget would ever see.
	tmpl, err = prepare("{{range $.many}}{{range $.many}}{{range $.many}}{{end}}{{end}}{{end}}", []string{"many"})
	require.NoError(t, err)
	_, err = render(tmpl, long, []string{"many"}, 20*time.Millisecond)
	require.ErrorIs(t, err, errRenderBudget)

	// Lists print joined and range element by element.
	tmpl, err = prepare("{{.tags}} / {{range $i, $t := .tags}}{{$i}}={{$t}} {{end}}/ {{len .labels}}", []string{"tags"})
	require.NoError(t, err)
	got, err = render(tmpl, o, []string{"tags"}, time.Minute)
	require.NoError(t, err)
	require.Equal(t, "x, 2 / 0=x 1=2 / 2", got)

	// A template failing on an object is an error.
	tmpl, err = prepare(`{{index .name 99}}`, nil)
	require.NoError(t, err)
	_, err = render(tmpl, o, nil, time.Minute)
	require.Error(t, err)
}

func TestDefaultText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		o    graph.Object
		want string
	}{
		{"NameOnly", graph.Object{Type: "Place", Name: "London", Key: "London"}, "Place: London"},
		{"Everything", graph.Object{
			Type: "Person", Name: "Ada", Key: "ada-lovelace", Description: "  Mathematician \n",
			Properties: map[string]any{
				"z": "last", "a": json.Number("1.5"), "m": true, "list": []any{"x"}, "obj": map[string]any{}, "null": nil, "blank": " ",
			},
		}, "Person: Ada\nkey: ada-lovelace\nMathematician\na: 1.5\nm: true\nz: last"},
	} {
		require.Equal(t, tc.want, DefaultText(tc.o), tc.name)
	}
}

// manyItems is a list property of n entries.
func manyItems(n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = strconv.Itoa(i)
	}
	return out
}
