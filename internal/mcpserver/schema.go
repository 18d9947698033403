package mcpserver

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/google/jsonschema-go/jsonschema"
)

// prop refines the derived schema of one input property: the struct tags
// give names, types, required members and descriptions; bounds, enums,
// formats and defaults are added here.
type prop func(*jsonschema.Schema)

func strLen(minLen, maxLen int) prop {
	return func(s *jsonschema.Schema) {
		if minLen > 0 {
			s.MinLength = &minLen
		}
		s.MaxLength = &maxLen
	}
}

func enum(values ...string) prop {
	return func(s *jsonschema.Schema) {
		s.Enum = make([]any, len(values))
		for i, v := range values {
			s.Enum[i] = v
		}
	}
}

func intRange(lo, hi, def int) prop {
	return func(s *jsonschema.Schema) {
		l, h := float64(lo), float64(hi)
		s.Minimum, s.Maximum = &l, &h
		s.Default = json.RawMessage(strconv.Itoa(def))
	}
}

func numRange(lo, hi float64) prop {
	return func(s *jsonschema.Schema) { s.Minimum, s.Maximum = &lo, &hi }
}

func minimum(lo int) prop {
	return func(s *jsonschema.Schema) {
		l := float64(lo)
		s.Minimum = &l
		s.Default = json.RawMessage("0")
	}
}

func defaultString(v string) prop {
	return func(s *jsonschema.Schema) { s.Default, _ = json.Marshal(v) }
}

func uuidFormat(s *jsonschema.Schema) { s.Format = "uuid" }

// items refines the schema of an array's items and bounds its length.
func items(maxItems int, unique bool, ps ...prop) prop {
	return func(s *jsonschema.Schema) {
		s.MaxItems = &maxItems
		s.UniqueItems = unique
		if s.Items != nil {
			for _, p := range ps {
				p(s.Items)
			}
		}
	}
}

// inputSchema derives the input schema of In and refines its properties.
// Unknown members are refused (additionalProperties false).
func inputSchema[In any](props map[string][]prop) (*jsonschema.Schema, error) {
	s, err := jsonschema.For[In](nil)
	if err != nil {
		return nil, err
	}
	if s.Properties == nil {
		s.Properties = map[string]*jsonschema.Schema{}
	}
	for name, ps := range props {
		p, ok := s.Properties[name]
		if !ok {
			return nil, fmt.Errorf("input schema of %T has no property %q", *new(In), name)
		}
		for _, f := range ps {
			f(p)
		}
	}
	s.AdditionalProperties = &jsonschema.Schema{Not: &jsonschema.Schema{}}
	return s, nil
}

// schemaMap is a tool's input schema as a JSON object.
func schemaMap(s *jsonschema.Schema) map[string]any {
	b, err := json.Marshal(s)
	if err != nil {
		return map[string]any{}
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return map[string]any{}
	}
	return m
}
