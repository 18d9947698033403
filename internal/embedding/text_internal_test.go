package embedding

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/errs"
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
		{name: "Builtins", tmpl: `{{printf "%s!" .name}} {{if and .name .born}}{{len .name}}{{end}}`, fields: []string{"born"}},
		{name: "IndexForOddNames", tmpl: `{{index . "birth-date"}}`, fields: []string{"birth-date"}},
		{name: "UnknownField", tmpl: "{{.name}} {{.born}}", err: `{{.born}} refers to "born"`},
		{name: "UnknownInIf", tmpl: "{{if .secret}}x{{end}}", err: `"secret"`},
		{name: "UnknownInElse", tmpl: "{{if .name}}x{{else}}{{.secret}}{{end}}", err: `"secret"`},
		{name: "UnknownInRange", tmpl: "{{range .labels}}{{.x}}{{end}}", err: `"x"`},
		{name: "UnknownInWith", tmpl: "{{with .name}}{{.}}{{end}}{{with $.secret}}{{end}}", err: `"secret"`},
		{name: "UnknownInDefine", tmpl: `{{define "t"}}{{.secret}}{{end}}{{template "t" .}}`, err: `"secret"`},
		{name: "UnknownInPipeline", tmpl: `{{.secret | printf "%s"}}`, err: `"secret"`},
		{name: "ChainOnResult", tmpl: `{{(.name).Foo}}`},
		{name: "DoesNotParse", tmpl: "{{.name", err: "template does not parse"},
		{name: "UnknownFunction", tmpl: "{{upper .name}}", err: "template does not parse"},
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
	o := Object{
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
		tmpl, err := compile(tc.tmpl)
		require.NoError(t, err, tc.name)
		got, err := render(tmpl, o, tc.fields)
		require.NoError(t, err, tc.name)
		require.Equal(t, tc.want, got, tc.name)
	}

	// A template that would write forever is cut at TextMaxBytes.
	tmpl, err := compile("{{range 100000000}}{{$.name}} é {{end}}")
	require.NoError(t, err)
	got, err := render(tmpl, o, nil)
	require.NoError(t, err)
	require.LessOrEqual(t, len(got), TextMaxBytes)
	require.Greater(t, len(got), TextMaxBytes-10)
	require.True(t, strings.HasPrefix(got, "Ada é Ada"))

	// A template failing on an object is an error.
	tmpl, err = compile(`{{index .name 99}}`)
	require.NoError(t, err)
	_, err = render(tmpl, o, nil)
	require.Error(t, err)
}

func TestDefaultText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		o    Object
		want string
	}{
		{"NameOnly", Object{Type: "Place", Name: "London", Key: "London"}, "Place: London"},
		{"Everything", Object{
			Type: "Person", Name: "Ada", Key: "ada-lovelace", Description: "  Mathematician \n",
			Properties: map[string]any{
				"z": "last", "a": json.Number("1.5"), "m": true, "list": []any{"x"}, "obj": map[string]any{}, "null": nil, "blank": " ",
			},
		}, "Person: Ada\nkey: ada-lovelace\nMathematician\na: 1.5\nm: true\nz: last"},
	} {
		require.Equal(t, tc.want, DefaultText(tc.o), tc.name)
	}
}
