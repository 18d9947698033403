package llm

import (
	"math"
	"strings"
)

// schemaDepthMax bounds recursion through $ref cycles.
const schemaDepthMax = 16

// minimalInstance returns the smallest JSON value that validates against
// schema, for the common keywords: const, default and enum (first value),
// type (the first non-null type of a list), objects with their required
// properties, arrays of minItems items, strings of minLength in the
// format asked for, numbers at their minimum, $ref to #/$defs and
// #/definitions, allOf (merged), anyOf and oneOf (first branch). A nil
// schema gives an empty object.
func minimalInstance(schema map[string]any) any {
	if schema == nil {
		return map[string]any{}
	}
	return instanceOf(schema, schema, 0)
}

func instanceOf(s, root map[string]any, depth int) any {
	if depth > schemaDepthMax {
		return nil
	}
	if v, ok := s["const"]; ok {
		return v
	}
	if v, ok := s["default"]; ok {
		return v
	}
	if vs, ok := s["enum"].([]any); ok && len(vs) > 0 {
		return vs[0]
	}
	if ref, ok := s["$ref"].(string); ok {
		if target := resolveRef(ref, root); target != nil {
			return instanceOf(target, root, depth+1)
		}
	}
	if all, ok := s["allOf"].([]any); ok && len(all) > 0 {
		merged := map[string]any{}
		for k, v := range s {
			if k != "allOf" {
				merged[k] = v
			}
		}
		var required []any
		props := map[string]any{}
		if p, ok := s["properties"].(map[string]any); ok {
			for k, v := range p {
				props[k] = v
			}
		}
		if r, ok := s["required"].([]any); ok {
			required = append(required, r...)
		}
		for _, sub := range all {
			m, ok := sub.(map[string]any)
			if !ok {
				continue
			}
			if ref, ok := m["$ref"].(string); ok {
				if target := resolveRef(ref, root); target != nil {
					m = target
				}
			}
			for k, v := range m {
				switch k {
				case "properties":
					if p, ok := v.(map[string]any); ok {
						for pk, pv := range p {
							props[pk] = pv
						}
					}
				case "required":
					if r, ok := v.([]any); ok {
						required = append(required, r...)
					}
				default:
					if _, set := merged[k]; !set {
						merged[k] = v
					}
				}
			}
		}
		merged["properties"] = props
		merged["required"] = required
		return instanceOf(merged, root, depth+1)
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		if alts, ok := s[k].([]any); ok && len(alts) > 0 {
			if m, ok := alts[0].(map[string]any); ok {
				return instanceOf(m, root, depth+1)
			}
		}
	}
	switch schemaType(s) {
	case "object":
		out := map[string]any{}
		props, _ := s["properties"].(map[string]any)
		req, _ := s["required"].([]any)
		for _, r := range req {
			name, ok := r.(string)
			if !ok {
				continue
			}
			if p, ok := props[name].(map[string]any); ok {
				out[name] = instanceOf(p, root, depth+1)
			} else {
				out[name] = nil
			}
		}
		return out
	case "array":
		n := int(number(s["minItems"]))
		out := make([]any, 0, n)
		items, _ := s["items"].(map[string]any)
		for i := 0; i < n; i++ {
			if items == nil {
				out = append(out, nil)
				continue
			}
			out = append(out, instanceOf(items, root, depth+1))
		}
		return out
	case "string":
		return minimalString(s)
	case "integer":
		return math.Ceil(minimalNumber(s, 1))
	case "number":
		return minimalNumber(s, 0.5)
	case "boolean":
		return false
	case "null":
		return nil
	default:
		if _, ok := s["properties"]; ok {
			return instanceOf(withType(s, "object"), root, depth+1)
		}
		return map[string]any{}
	}
}

func withType(s map[string]any, t string) map[string]any {
	out := make(map[string]any, len(s)+1)
	for k, v := range s {
		out[k] = v
	}
	out["type"] = t
	return out
}

// schemaType is the type keyword: a string, or the first non-null entry of
// a list.
func schemaType(s map[string]any) string {
	switch t := s["type"].(type) {
	case string:
		return t
	case []any:
		first := ""
		for _, x := range t {
			if str, ok := x.(string); ok {
				if str != "null" {
					return str
				}
				first = str
			}
		}
		return first
	}
	return ""
}

func resolveRef(ref string, root map[string]any) map[string]any {
	if !strings.HasPrefix(ref, "#/") {
		return nil
	}
	node := any(root)
	for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
		part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
		m, ok := node.(map[string]any)
		if !ok {
			return nil
		}
		node = m[part]
	}
	m, _ := node.(map[string]any)
	return m
}

func number(v any) float64 {
	switch n := v.(type) {
	case float64:
		return n
	case int:
		return float64(n)
	case int64:
		return float64(n)
	}
	return 0
}

// minimalNumber is 0, or the minimum, or just above an exclusive minimum.
func minimalNumber(s map[string]any, step float64) float64 {
	out := 0.0
	if _, ok := s["minimum"]; ok {
		out = number(s["minimum"])
	}
	if _, ok := s["exclusiveMinimum"]; ok {
		if v := number(s["exclusiveMinimum"]) + step; v > out || s["minimum"] == nil {
			out = v
		}
	}
	if _, ok := s["maximum"]; ok && out > number(s["maximum"]) {
		out = number(s["maximum"])
	}
	return out
}

func minimalString(s map[string]any) string {
	var out string
	switch s["format"] {
	case "date-time":
		out = "1970-01-01T00:00:00Z"
	case "date":
		out = "1970-01-01"
	case "time":
		out = "00:00:00Z"
	case "email":
		out = "user@example.com"
	case "uri", "url", "iri":
		out = "https://example.com"
	case "uuid":
		out = "00000000-0000-0000-0000-000000000000"
	}
	if n := int(number(s["minLength"])); len(out) < n {
		out += strings.Repeat("x", n-len(out))
	}
	return out
}
