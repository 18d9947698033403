package llm

// SchemaRequired is the property names a JSON Schema object's required
// keyword lists, whether the schema was decoded from JSON ([]any) or
// built in Go ([]string); nil when it lists none.
func SchemaRequired(schema map[string]any) []string {
	switch r := schema["required"].(type) {
	case []string:
		return r
	case []any:
		var names []string
		for _, v := range r {
			if s, ok := v.(string); ok {
				names = append(names, s)
			}
		}
		return names
	}
	return nil
}
