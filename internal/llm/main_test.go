package llm_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no test leaves goroutines behind (Embed runs
// requests concurrently; token refresh must stay synchronous).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
