package mcpserver

import (
	"testing"

	"github.com/graphmill/graphmill/internal/pgtest"
)

// The tool box's test against the real registry of external MCP servers
// needs PostgreSQL.
func TestMain(m *testing.M) { pgtest.Main(m) }
