package agent

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
)

// toolNameMax bounds a model-facing tool name (llm.Tool.Name).
const toolNameMax = 64

var (
	toolNameRule = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,64}$`) //nolint:gochecknoglobals // compiled pattern, constant
	toolNameBad  = regexp.MustCompile(`[^A-Za-z0-9_.-]`)         //nolint:gochecknoglobals // compiled pattern, constant
)

// toolName is the name the Toolbox gives a model for the tool a
// definition names (a built-in name, or an external "server/tool"): the
// name itself when every provider accepts it, else server:tool, else a
// cleaned name with 8 hex digits of its SHA-256. It is the rule of the
// built-in MCP server's tool box (agentx's llm.ToolName, which replaces
// this copy once merged).
func toolName(name string) string {
	if !strings.Contains(name, ":") {
		if toolNameRule.MatchString(name) {
			return name
		}
		if colons := strings.ReplaceAll(name, "/", ":"); toolNameRule.MatchString(colons) {
			return colons
		}
	}
	sum := sha256.Sum256([]byte(name))
	hash := hex.EncodeToString(sum[:4])
	base := toolNameBad.ReplaceAllString(name, "_")
	if n := toolNameMax - 1 - len(hash); len(base) > n {
		base = base[:n]
	}
	return base + ":" + hash
}
