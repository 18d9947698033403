package search_test

import (
	"testing"

	"github.com/graphmill/graphmill/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }
