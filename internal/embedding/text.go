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
	"time"
	"unicode/utf8"

	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/graph"
)

// TextMaxBytes caps an object's embedding text: a rendered template is cut
// there (at a character boundary), and its execution stops.
const TextMaxBytes = 16 << 10

// RenderTimeoutDefault bounds one execution of a policy template. A
// template of this package's restricted form renders in microseconds; only
// nested ranges over long lists get near this.
const RenderTimeoutDefault = 100 * time.Millisecond

// RenderBatchBudgetDefault bounds the rendering of one batch of objects:
// many policies each running close to RenderTimeoutDefault on every object
// would otherwise hold a worker for minutes. Objects left when it is spent
// are retried in a later batch.
const RenderBatchBudgetDefault = 2 * time.Second

// standardFields are the object fields a template may always use.
func standardFields() []string {
	return []string{"type", "key", "name", "description", "labels", "status"}
}

// StandardFieldsText lists the standard fields for messages.
func StandardFieldsText() string { return strings.Join(standardFields(), ", ") }

// templateFuncs are the functions a template may call: comparisons, logic,
// len, index and slice. They work on the values they are given without
// building large strings (printf, print and friends could allocate
// gigabytes before the output budget sees a byte).
func templateFuncs() []string {
	return []string{"and", "or", "not", "eq", "ne", "lt", "le", "gt", "ge", "len", "index", "slice"}
}

// budgetFunc is the function prepare calls at every range iteration to
// check the render deadline. It is not a valid name for a template to
// call: templates are parsed without it.
const budgetFunc = "graphmillRenderBudget"

// CheckTemplate reports whether tmpl is a template a policy with fields may
// use. It must parse as a Go text/template and keep to what an embedding
// text needs: text, field references ({{.name}}, {{$.name}}, {{index .
// "odd-name"}}), variables, if, with, range over a field only, and the
// functions of templateFuncs. Every field it refers to, anywhere, must be a
// standard object field or one of fields. Refused, by rule: range over
// anything but a field (integers, function results, variables), define,
// block and template, other functions, and field access on a result.
//
// Errors: errs.Invalid naming the parse error, the rule or the unknown
// field.
func CheckTemplate(tmpl string, fields []string) error {
	_, err := prepare(tmpl, fields)
	return err
}

// prepare parses and checks a policy template (see CheckTemplate) and
// makes every range iteration check the render deadline.
func prepare(tmpl string, fields []string) (*template.Template, error) {
	t, err := template.New("policy").Option("missingkey=zero").Parse(tmpl)
	if err != nil {
		msg := strings.TrimPrefix(err.Error(), "template: ")
		return nil, errs.Errorf(errs.Invalid, "template does not parse: %s", msg)
	}
	if len(t.Templates()) > 1 {
		return nil, errs.New(errs.Invalid, "template: define, block and template are not allowed")
	}
	if t.Tree == nil || t.Root == nil {
		return t, nil
	}
	c := checker{fields: allowedFields(fields), funcs: map[string]bool{}}
	for _, f := range templateFuncs() {
		c.funcs[f] = true
	}
	c.node(t.Root)
	if c.err != nil {
		return nil, c.err
	}
	meterRanges(t.Tree, t.Root)
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

// checker walks a parse tree and keeps the first rule it breaks.
type checker struct {
	fields, funcs map[string]bool
	err           error
}

func (c *checker) fail(format string, args ...any) {
	if c.err == nil {
		c.err = errs.Errorf(errs.Invalid, "template: "+format, args...)
	}
}

func (c *checker) node(n parse.Node) {
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return
		}
		for _, x := range n.Nodes {
			c.node(x)
		}
	case *parse.TextNode, *parse.CommentNode, *parse.BreakNode, *parse.ContinueNode:
	case *parse.ActionNode:
		c.pipe(n.Pipe)
	case *parse.IfNode:
		c.branch(&n.BranchNode)
	case *parse.WithNode:
		c.branch(&n.BranchNode)
	case *parse.RangeNode:
		if !rangesOverField(n.Pipe) {
			c.fail("range may only iterate over a field, as in {{range .tags}} or {{range $i, $t := $.tags}}")
		}
		c.branch(&n.BranchNode)
	case *parse.TemplateNode:
		c.fail("define, block and template are not allowed")
	default:
		c.fail("%s is not allowed", n)
	}
}

func (c *checker) branch(b *parse.BranchNode) {
	c.pipe(b.Pipe)
	c.node(b.List)
	c.node(b.ElseList)
}

func (c *checker) pipe(p *parse.PipeNode) {
	if p == nil {
		return
	}
	for _, cmd := range p.Cmds {
		for _, a := range cmd.Args {
			c.arg(a)
		}
	}
}

func (c *checker) arg(n parse.Node) {
	switch n := n.(type) {
	case *parse.FieldNode:
		c.field(n.Ident[0])
	case *parse.VariableNode:
		if n.Ident[0] == "$" && len(n.Ident) > 1 {
			c.field(n.Ident[1])
		}
	case *parse.IdentifierNode:
		if !c.funcs[n.Ident] {
			c.fail("function %s is not allowed; the functions are %s", n.Ident, strings.Join(templateFuncs(), ", "))
		}
	case *parse.PipeNode:
		c.pipe(n)
	case *parse.ChainNode:
		c.fail("field access on a result is not allowed")
	case *parse.DotNode, *parse.StringNode, *parse.NumberNode, *parse.BoolNode, *parse.NilNode:
	default:
		c.fail("%s is not allowed", n)
	}
}

func (c *checker) field(name string) {
	if !c.fields[name] {
		c.fail("{{.%s}} refers to %q, which is neither a standard object field (%s) nor listed in fields",
			name, name, StandardFieldsText())
	}
}

// rangesOverField reports whether a range pipeline is one field reference:
// .x or $.x (with or without variables declared).
func rangesOverField(p *parse.PipeNode) bool {
	if p == nil || len(p.Cmds) != 1 || len(p.Cmds[0].Args) != 1 {
		return false
	}
	switch a := p.Cmds[0].Args[0].(type) {
	case *parse.FieldNode:
		return len(a.Ident) == 1
	case *parse.VariableNode:
		return len(a.Ident) == 2 && a.Ident[0] == "$"
	}
	return false
}

// meterRanges makes every range of the tree call budgetFunc first in each
// iteration, so that nested ranges that write nothing still meet the
// render deadline.
func meterRanges(tr *parse.Tree, n parse.Node) {
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return
		}
		for _, x := range n.Nodes {
			meterRanges(tr, x)
		}
	case *parse.IfNode:
		meterRanges(tr, n.List)
		meterRanges(tr, n.ElseList)
	case *parse.WithNode:
		meterRanges(tr, n.List)
		meterRanges(tr, n.ElseList)
	case *parse.RangeNode:
		meterRanges(tr, n.List)
		meterRanges(tr, n.ElseList)
		call := &parse.CommandNode{NodeType: parse.NodeCommand, Pos: n.Pos, Args: []parse.Node{parse.NewIdentifier(budgetFunc).SetTree(tr).SetPos(n.Pos)}}
		tick := &parse.ActionNode{NodeType: parse.NodeAction, Pos: n.Pos, Pipe: &parse.PipeNode{NodeType: parse.NodePipe, Pos: n.Pos, Cmds: []*parse.CommandNode{call}}}
		n.List.Nodes = append([]parse.Node{tick}, n.List.Nodes...)
	}
}

// textList is a list value of a template: it prints as its entries joined
// with ", " and a range goes through its entries.
type textList []string

// String joins the entries.
func (l textList) String() string { return strings.Join(l, ", ") }

// templateData is what a policy's template sees: the standard fields and
// the policy's fields among the object's properties, every value as text
// (empty when the object has no such property), lists (labels and list
// properties) as textList. A property named like a standard field is
// hidden by the field.
func templateData(o graph.Object, fields []string) map[string]any {
	data := make(map[string]any, len(fields)+6)
	for _, f := range fields {
		if list, ok := o.Properties[f].([]any); ok {
			entries := make(textList, 0, len(list))
			for _, e := range list {
				if s := textOf(e); s != "" {
					entries = append(entries, s)
				}
			}
			data[f] = entries
			continue
		}
		data[f] = textOf(o.Properties[f])
	}
	data["type"] = o.Type
	data["key"] = o.Key
	data["name"] = o.Name
	data["description"] = o.Description
	labels := make(textList, 0, len(o.Labels))
	for _, l := range o.Labels {
		if l != "" {
			labels = append(labels, l)
		}
	}
	data["labels"] = labels
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

// errRenderBudget stops a template that ran past its deadline.
var errRenderBudget = errors.New("template exceeded its render budget")

// meter is one execution's budget: a deadline checked at every write and
// every range iteration, and TextMaxBytes of output.
type meter struct {
	deadline time.Time
	buf      bytes.Buffer
}

// tick is budgetFunc.
func (m *meter) tick() (string, error) {
	if time.Now().After(m.deadline) {
		return "", errRenderBudget
	}
	return "", nil
}

// Write keeps the first TextMaxBytes written to it.
func (m *meter) Write(p []byte) (int, error) {
	if time.Now().After(m.deadline) {
		return 0, errRenderBudget
	}
	room := TextMaxBytes - m.buf.Len()
	if len(p) <= room {
		return m.buf.Write(p)
	}
	m.buf.Write(p[:room])
	return room, errTextFull
}

// render executes a prepared policy template for o within timeout; the
// text is trimmed and cut at TextMaxBytes. Errors: errRenderBudget (wrapped)
// when the deadline passed, else the template's failure on this object.
func render(t *template.Template, o graph.Object, fields []string, timeout time.Duration) (string, error) {
	m := &meter{deadline: time.Now().Add(timeout)}
	run, err := t.Clone()
	if err != nil {
		return "", fmt.Errorf("render template: %w", err)
	}
	run.Funcs(template.FuncMap{budgetFunc: m.tick})
	if err := run.Execute(m, templateData(o, fields)); err != nil && !errors.Is(err, errTextFull) {
		if errors.Is(err, errRenderBudget) {
			return "", fmt.Errorf("%w of %s", errRenderBudget, timeout)
		}
		return "", fmt.Errorf("render template: %w", err)
	}
	return clean(m.buf.String()), nil
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
func DefaultText(o graph.Object) string {
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
func (p Policy) covers(o graph.Object) bool {
	return p.ProjectID == o.ProjectID && slices.Contains(p.ObjectTypes, o.Type)
}
