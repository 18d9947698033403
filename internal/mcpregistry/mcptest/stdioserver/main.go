// Command stdioserver is the stdio MCP server of the MCP registry tests
// (mcptest.BuildStdio builds it): the tools named by MCPTEST_TOOLS on
// stdin and stdout.
package main

import (
	"fmt"
	"os"

	"github.com/graphmill/graphmill/internal/mcpregistry/mcptest"
)

func main() {
	if err := mcptest.RunStdio(); err != nil {
		fmt.Fprintln(os.Stderr, "stdioserver:", err)
		os.Exit(1)
	}
}
