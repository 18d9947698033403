package document

import (
	"flag"
	"os"
	"testing"

	"github.com/graphmill/graphmill/internal/pgtest"
)

func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.fuzzworker"); f != nil && f.Value.String() == "true" {
		// A fuzzing worker process runs only the fuzz target, which needs
		// no database: do not start a cluster per worker.
		os.Exit(m.Run())
	}
	pgtest.Main(m)
}
