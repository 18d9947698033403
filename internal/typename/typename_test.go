package typename_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/typename"
)

func TestKey(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"Software_Projects": "softwareproject",
		"software project":  "softwareproject",
		"SoftwareProject":   "softwareproject",
		"software-projects": "softwareproject",
		"HTTPServers":       "httpserver",
		"OAuth2Clients":     "oauth2client",
		"  ":                "",
	} {
		require.Equal(t, want, typename.Key(in), in)
	}
	require.Equal(t, "firstname", typename.PropertyKey("first_name"))
	require.Equal(t, "firstname", typename.PropertyKey("First Name"))
	require.Equal(t, "worksfor", typename.PropertyKey("WORKS_FOR"))
	require.Equal(t, "tags", typename.PropertyKey("tags"), "property names keep their plural")
	require.Equal(t, []string{"http", "server", "v2"}, typename.Words("HTTPServer-v2"))
}

func TestSingular(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"categories": "category", "addresses": "address", "statuses": "status",
		"branches": "branch", "boxes": "box", "wishes": "wish", "databases": "database",
		"cases": "case", "people": "person", "criteria": "criterion", "class": "class",
		"analysis": "analysis", "bus": "bus", "news": "news", "series": "series",
		"project": "project", "pies": "pie", "species": "species",
	} {
		require.Equal(t, want, typename.Singular(in), in)
	}
}
