package discovery

import (
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/errs"
)

// TestPackInputQuotesHugeNamesShort: a finalize naming a required
// property, a property or a relationship end of 100,000 characters is
// refused with a detail that quotes its start only (it was echoed whole).
func TestPackInputQuotesHugeNamesShort(t *testing.T) {
	t.Parallel()
	huge := strings.Repeat("h", 100_000)
	typ := func(props map[string]any, required ...string) []IncludedType {
		return []IncludedType{{TypeName: "Ship", Properties: props, RequiredProperties: required}}
	}
	for name, p := range map[string]FinalizeParams{
		"required property": {PackName: "P", IncludedTypes: typ(map[string]any{"port": map[string]any{}}, huge)},
		"property":          {PackName: "P", IncludedTypes: typ(map[string]any{huge: 1})},
		"relationship end": {PackName: "P", IncludedTypes: typ(map[string]any{}), IncludedRelationships: []IncludedRelationship{
			{SourceType: huge, TargetType: "Ship", RelationType: "DOCKS", Cardinality: "one_to_one"},
		}},
		"relationship name": {PackName: "P", IncludedTypes: typ(map[string]any{}), IncludedRelationships: []IncludedRelationship{
			{SourceType: "Nowhere", TargetType: "Ship", RelationType: huge, Cardinality: "one_to_one"},
		}},
	} {
		_, err := packInput(uuid.New(), p, map[string]string{})
		require.Equal(t, errs.Invalid, errs.CodeOf(err), name)
		require.Less(t, len(err.Error()), 500, "%s: %s", name, err.Error()[:min(len(err.Error()), 200)])
		require.Contains(t, err.Error(), "hhhh…", name)
	}
}
