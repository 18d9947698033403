package config_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/config"
)

// helperEnv makes the test binary act as TestHideSecretsHelper's process.
const helperEnv = "GRAPHMILL_TEST_HIDE_SECRETS"

// TestHideSecretsHelper is the process TestHideSecrets starts: it hides
// the secrets and reports what its environment shows.
func TestHideSecretsHelper(t *testing.T) {
	t.Parallel()
	if os.Getenv(helperEnv) != "1" {
		t.Skip("run by TestHideSecrets")
	}
	before := os.Environ()
	err := config.HideSecrets()
	block, rerr := os.ReadFile("/proc/self/environ")
	require.NoError(t, rerr)
	out, _ := json.Marshal(map[string]any{
		"before": before, "after": os.Environ(), "block": string(block), "error": fmt.Sprint(err),
	})
	fmt.Printf("\nHIDE:%s\n", out)
}

// TestSecretVars: every variable LogValue masks is hidden, the ones the
// hand-kept list once missed included.
func TestSecretVars(t *testing.T) {
	t.Parallel()
	for _, n := range []string{
		"GRAPHMILL_SECRET_KEY", "GRAPHMILL_SECRET_KEYS_OLD", "GRAPHMILL_BOOTSTRAP_TOKEN", "GRAPHMILL_DATABASE_URL",
		"GRAPHMILL_KEY_AI_API_KEY", "WEB_SEARCH_API_KEY",
		"GRAPHMILL_OPENAI_API_KEY", "GRAPHMILL_CONSOLE_OIDC_CLIENT_SECRET", "GRAPHMILL_SMTP_URL",
	} {
		require.Contains(t, config.SecretVars(), n)
	}
	require.NotContains(t, config.SecretVars(), "GRAPHMILL_LOCAL_PROVIDER")
	require.NotContains(t, config.SecretVars(), "GRAPHMILL_HTTP_ADDR")
}

// After start-up, key material is neither in the environment Go hands to
// child processes nor in what /proc/<pid>/environ shows.
func TestHideSecrets(t *testing.T) {
	t.Parallel()
	secrets := map[string]string{}
	for i, n := range config.SecretVars() {
		secrets[n] = fmt.Sprintf("hidden-value-%d", i)
	}
	cmd := exec.CommandContext(context.Background(), os.Args[0], "-test.run=^TestHideSecretsHelper$", "-test.v") //nolint:gosec // the test binary itself
	cmd.Env = []string{helperEnv + "=1", "KEEP_ME=visible-value", "PATH=" + os.Getenv("PATH")}
	for k, v := range secrets {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	raw, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", raw)
	_, line, ok := bytes.Cut(raw, []byte("\nHIDE:"))
	require.True(t, ok, "%s", raw)
	line, _, _ = bytes.Cut(line, []byte("\n"))
	var got struct {
		Before, After []string
		Block, Error  string
	}
	require.NoError(t, json.Unmarshal(line, &got))
	require.Equal(t, "<nil>", got.Error)
	require.Contains(t, got.Before, "GRAPHMILL_SECRET_KEY="+secrets["GRAPHMILL_SECRET_KEY"], "the caller's copy is taken first")
	require.Contains(t, got.After, "KEEP_ME=visible-value")
	require.Contains(t, got.Block, "KEEP_ME=visible-value")
	for k, v := range secrets {
		for _, kv := range got.After {
			require.NotContains(t, kv, v, k)
		}
		require.NotContains(t, got.Block, v, k)
	}
}
