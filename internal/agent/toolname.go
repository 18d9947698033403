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

// toolName is the name a model is given for a tool (a built-in name, or
// an external "server/tool", which breaks llm.Tool.Name's rule): the name
// itself when it keeps the rule and holds no ':'; else, holding no ':',
// the name with '/' turned into ':' when that keeps the rule; else the
// name with every character outside [A-Za-z0-9_.-] turned into '_',
// shortened, then ':' and 8 hex digits of its SHA-256. Distinct names
// give distinct results save for a hash collision (the worker then
// offers the first tool only).
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
