package discovery

import (
	"testing"

	"github.com/graphmill/graphmill/internal/pgtest"
)

// TestMain starts the test PostgreSQL of the store tests.
func TestMain(m *testing.M) { pgtest.Main(m) }
