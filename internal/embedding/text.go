package embedding

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/template"
	"text/template/parse"
	"unicode/utf8"

	"github.com/graphmill/graphmill/internal/errs"
)

// TextMaxBytes caps an object's embedding text: a rendered template is cut
// there (at a character boundary), which also bounds what a template
// ranging over a large number can make the worker do.
const TextMaxBytes = 16 << 10

// standardFields are the object fields a template may always use.
func standardFields() []string {
	return []string{"type", "key", "name", "description", "labels", "status"}
}

// StandardFieldsText lists the standard fields for messages.
func StandardFieldsText() string { return strings.Join(standardFields(), ", ") }

// CheckTemplate reports whether tmpl is a template a policy with fields may
// use: it must parse as a Go text/template, and every {{.field}} (or
// {{$.field}}) it refers to, anywhere (inside range and with blocks too),
// must be a standard object field or one of fields.
//
// Errors: errs.Invalid naming the parse error or the unknown field.
func CheckTemplate(tmpl string, fields []string) error {
	t, err := compile(tmpl)
	if err != nil {
		return err
	}
	allowed := allowedFields(fields)
	var unknown string
	for _, tt := range t.Templates() {
		if tt.Tree == nil {
			continue
		}
		walk(tt.Root, func(field string) {
			if unknown == "" && !allowed[field] {
				unknown = field
			}
		})
	}
	if unknown != "" {
		return errs.Errorf(errs.Invalid, "template: {{.%s}} refers to %q, which is neither a standard object field (%s) nor listed in fields",
			unknown, unknown, StandardFieldsText())
	}
	return nil
}

// compile parses a policy template.
func compile(tmpl string) (*template.Template, error) {
	t, err := template.New("policy").Option("missingkey=zero").Parse(tmpl)
	if err != nil {
		msg := strings.TrimPrefix(err.Error(), "template: ")
		return nil, errs.Errorf(errs.Invalid, "template does not parse: %s", msg)
	}
	return t, nil
}

func allowedFields(fields []string) map[string]bool {
	allowed := map[string]bool{}
	for _, f := range standardFields() {
		allowed[f] = true
	}
	for _, f := range fields {
		allowed[f] = true
	}
	return allowed
}

// walk calls field with the first identifier of every field reference
// under n.
func walk(n parse.Node, field func(string)) {
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return
		}
		for _, c := range n.Nodes {
			walk(c, field)
		}
	case *parse.ActionNode:
		walk(n.Pipe, field)
	case *parse.PipeNode:
		if n == nil {
			return
		}
		for _, c := range n.Cmds {
			walk(c, field)
		}
	case *parse.CommandNode:
		for _, a := range n.Args {
			walk(a, field)
		}
	case *parse.FieldNode:
		field(n.Ident[0])
	case *parse.VariableNode:
		if n.Ident[0] == "$" && len(n.Ident) > 1 {
			field(n.Ident[1])
		}
	case *parse.ChainNode:
		walk(n.Node, field)
	case *parse.IfNode:
		walkBranch(&n.BranchNode, field)
	case *parse.RangeNode:
		walkBranch(&n.BranchNode, field)
	case *parse.WithNode:
		walkBranch(&n.BranchNode, field)
	case *parse.TemplateNode:
		walk(n.Pipe, field)
	}
}

func walkBranch(b *parse.BranchNode, field func(string)) {
	walk(b.Pipe, field)
	walk(b.List, field)
	walk(b.ElseList, field)
}

// templateData is what a policy's template sees: the standard fields and
// the policy's fields among the object's properties, every value as text
// (empty when the object has no such property). A property named like a
// standard field is hidden by the field.
func templateData(o Object, fields []string) map[string]any {
	data := make(map[string]any, len(fields)+6)
	for _, f := range fields {
		data[f] = textOf(o.Properties[f])
	}
	data["type"] = o.Type
	data["key"] = o.Key
	data["name"] = o.Name
	data["description"] = o.Description
	data["labels"] = strings.Join(o.Labels, ", ")
	data["status"] = o.Status
	return data
}

// textOf renders a property value as text: strings as they are, numbers
// and booleans as JSON writes them, lists joined with ", ", objects as
// compact JSON, null as nothing.
func textOf(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case bool:
		return strconv.FormatBool(v)
	case json.Number:
		return v.String()
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case []any:
		parts := make([]string, 0, len(v))
		for _, e := range v {
			if s := textOf(e); s != "" {
				parts = append(parts, s)
			}
		}
		return strings.Join(parts, ", ")
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return ""
		}
		return string(b)
	}
}

// errTextFull stops a template that wrote TextMaxBytes.
var errTextFull = errors.New("embedding text is full")

// capWriter keeps the first TextMaxBytes written to it.
type capWriter struct{ buf bytes.Buffer }

func (w *capWriter) Write(p []byte) (int, error) {
	room := TextMaxBytes - w.buf.Len()
	if len(p) <= room {
		return w.buf.Write(p)
	}
	w.buf.Write(p[:room])
	return room, errTextFull
}

// render executes a compiled policy template for o; the text is trimmed
// and cut at TextMaxBytes.
func render(t *template.Template, o Object, fields []string) (string, error) {
	var w capWriter
	if err := t.Execute(&w, templateData(o, fields)); err != nil && !errors.Is(err, errTextFull) {
		return "", fmt.Errorf("render template: %w", err)
	}
	return clean(w.buf.String()), nil
}

// clean trims s and cuts it at TextMaxBytes on a character boundary.
func clean(s string) string {
	if len(s) > TextMaxBytes {
		s = s[:TextMaxBytes]
	}
	for !utf8.ValidString(s) && s != "" {
		s = s[:len(s)-1]
	}
	return strings.TrimSpace(s)
}

// DefaultText is the text of an object that no active policy covers: a
// first line "<type>: <name>", then "key: <key>" when the key differs from
// the name, the description, and the object's scalar properties (strings,
// numbers, booleans; not lists, objects or nulls) as "<name>: <value>"
// lines sorted by name.
func DefaultText(o Object) string {
	var b strings.Builder
	b.WriteString(o.Type + ": " + o.Name + "\n")
	if o.Key != "" && o.Key != o.Name {
		b.WriteString("key: " + o.Key + "\n")
	}
	if d := strings.TrimSpace(o.Description); d != "" {
		b.WriteString(d + "\n")
	}
	names := make([]string, 0, len(o.Properties))
	for k := range o.Properties {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		switch v := o.Properties[k].(type) {
		case string, bool, json.Number, float64:
			if s := textOf(v); strings.TrimSpace(s) != "" {
				b.WriteString(k + ": " + s + "\n")
			}
		}
	}
	return clean(b.String())
}

// covers reports whether policy p applies to o.
func (p Policy) covers(o Object) bool {
	return p.ProjectID == o.ProjectID && slices.Contains(p.ObjectTypes, o.Type)
}
