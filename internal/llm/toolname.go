package llm

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
)

// ToolNameMax bounds Tool.Name.
const ToolNameMax = 64

var (
	toolNameRule = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,64}$`) //nolint:gochecknoglobals // compiled pattern, constant
	toolNameBad  = regexp.MustCompile(`[^A-Za-z0-9_.-]`)         //nolint:gochecknoglobals // compiled pattern, constant
)

// ValidToolName reports whether name satisfies Tool.Name's rule.
func ValidToolName(name string) bool { return toolNameRule.MatchString(name) }

// ToolName is the name a model is given for a tool named name (which may
// break Tool.Name's rule, such as an external MCP tool's "server/tool"):
// name itself when it satisfies the rule and holds no ':'; else, when it
// holds no ':', name with every '/' turned into ':' if that satisfies the
// rule; else name with every character outside [A-Za-z0-9_.-] turned into
// '_', shortened, then ':' and 8 hex digits of the SHA-256 of name.
// Distinct names give distinct results, save for a hash collision: a
// caller offering tools drops a tool whose result is already taken, and
// maps a ToolCall's name back by looking it up among those it offered.
func ToolName(name string) string {
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
	if n := ToolNameMax - 1 - len(hash); len(base) > n {
		base = base[:n]
	}
	return base + ":" + hash
}
