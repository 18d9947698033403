package typename_test

import (
	"strings"
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
		"movies": "movie", "cookies": "cookie", "houses": "house", "causes": "cause",
		"clauses": "clause", "warehouses": "warehouse", "uses": "us", "campuses": "campus",
		"processes": "process", "analyses": "analysis", "companies": "company",
	} {
		require.Equal(t, want, typename.Singular(in), in)
	}
}

// TestKeyPlurals: a plural and its singular share a key, whichever way
// the plural is formed (-s after -e, -es after a sibilant, -ies of -y and
// of -ie), and words that are not plurals of one another do not.
func TestKeyPlurals(t *testing.T) {
	t.Parallel()
	for _, p := range [][2]string{
		{"Movie", "Movies"},
		{"Cookie", "Cookies"},
		{"Hoagie", "Hoagies"},
		{"House", "Houses"},
		{"Cause", "Causes"},
		{"Clause", "Clauses"},
		{"Warehouse", "Warehouses"},
		{"Purchase", "Purchases"},
		{"Case", "Cases"},
		{"Excuse", "Excuses"},
		{"Use", "Uses"},
		{"Cache", "Caches"},
		{"Niche", "Niches"},
		{"Size", "Sizes"},
		{"Axe", "Axes"},
		{"Tie", "Ties"},
		{"Company", "Companies"},
		{"Status", "Statuses"},
		{"Bus", "Buses"},
		{"Campus", "Campuses"},
		{"Analysis", "Analyses"},
		{"Address", "Addresses"},
		{"Process", "Processes"},
		{"Box", "Boxes"},
		{"Church", "Churches"},
		{"Crisis", "Crises"},
		{"Person", "People"},
		{"Software House", "software_houses"},
	} {
		require.Equal(t, typename.Key(p[0]), typename.Key(p[1]), "%s / %s", p[0], p[1])
	}
	for _, w := range []string{"News", "Series", "Species", "Status", "Bus", "Analysis", "Address", "Process"} {
		require.Equal(t, strings.ToLower(w), typename.Key(w), "%s is its own singular", w)
	}
	for _, p := range [][2]string{
		{"Plane", "Plan"},
		{"Rate", "Rat"},
		{"Note", "Not"},
		{"Rates", "Rat"},
		{"Status", "State"},
		{"News", "New"},
		{"Series", "Sery"},
		{"Process", "Proces"},
		{"Address", "Adres"},
		{"House", "Horse"},
		{"Cause", "Case"},
		{"Movie", "Move"},
		{"Analysis", "Analyst"},
	} {
		require.NotEqual(t, typename.Key(p[0]), typename.Key(p[1]), "%s / %s", p[0], p[1])
	}
}
