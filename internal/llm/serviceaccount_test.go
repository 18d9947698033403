package llm_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/llm"
	"github.com/graphmill/graphmill/internal/llm/llmtest"
)

func TestValidateServiceAccountJSON(t *testing.T) {
	t.Parallel()
	fake := llmtest.NewVertex(t, testProject, testLocation)
	valid := fake.ServiceAccountJSON()
	require.NoError(t, llm.ValidateServiceAccountJSON(valid, loopback), "the fake's endpoint, allowed")
	secrets := serviceAccountSecrets(t, valid)

	with := func(change func(m map[string]any)) []byte {
		var m map[string]any
		require.NoError(t, json.Unmarshal(valid, &m))
		change(m)
		b, err := json.Marshal(m)
		require.NoError(t, err)
		return b
	}
	pemKey := func() string {
		var m map[string]any
		require.NoError(t, json.Unmarshal(valid, &m))
		return m["private_key"].(string)
	}()

	cases := []struct {
		name, input, want string
	}{
		{"empty", "  ", "service account credentials are empty"},
		{"not JSON", "client_email=x private_key=" + pemKey, "service account credentials are not JSON"},
		{"broken JSON", string(valid[:len(valid)/2]), "service account credentials are not JSON (syntax error at byte"},
		{"array", `[1, 2]`, "must be a JSON object"},
		{"no type", string(with(func(m map[string]any) { delete(m, "type") })), `"type" is missing; want "service_account"`},
		{"wrong type", string(with(func(m map[string]any) { m["type"] = "authorized_user" })), `"type" is "authorized_user"; want "service_account"`},
		{"type not a string", string(with(func(m map[string]any) { m["type"] = 7 })), `field "type" must be of Go type string, not JSON number`},
		{"missing fields", string(with(func(m map[string]any) { delete(m, "client_email"); delete(m, "private_key"); delete(m, "token_uri") })), "missing client_email, private_key, token_uri"},
		{"missing key", string(with(func(m map[string]any) { m["private_key"] = "" })), "missing private_key"},
		{"bad email", string(with(func(m map[string]any) { m["client_email"] = "robot" })), "client_email is not an email address"},
		{"key not PEM", string(with(func(m map[string]any) { m["private_key"] = strings.ReplaceAll(pemKey, "-----", "") })), "private_key is not a PEM-encoded key"},
		{"key garbage", string(with(func(m map[string]any) {
			m["private_key"] = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"
		})), "private_key is not an RSA private key"},
		{"token_uri relative", string(with(func(m map[string]any) { m["token_uri"] = "/token" })), "token_uri is not an absolute URL"},
		{"token_uri plain http", string(with(func(m map[string]any) { m["token_uri"] = "http://oauth2.example.com/token" })), "token_uri must be"},
		// Only Google's token endpoints, unless the allow list names one:
		// the token request must not reach this server's own addresses.
		{"token_uri loopback", string(with(func(m map[string]any) { m["token_uri"] = "http://127.0.0.1:8081/api/embeddings/control" })), "GRAPHMILL_EGRESS_ALLOW"},
		{"token_uri localhost", string(with(func(m map[string]any) { m["token_uri"] = "http://localhost:8080/token" })), "GRAPHMILL_EGRESS_ALLOW"},
		{"token_uri metadata", string(with(func(m map[string]any) { m["token_uri"] = "http://169.254.169.254/computeMetadata/v1/" })), "GRAPHMILL_EGRESS_ALLOW"},
		{"token_uri other host", string(with(func(m map[string]any) { m["token_uri"] = "https://oauth2.example.com/token" })), "GRAPHMILL_EGRESS_ALLOW"},
		{"token_uri google over http", string(with(func(m map[string]any) { m["token_uri"] = "http://oauth2.googleapis.com/token" })), "token_uri must be"},
		{"token_uri google other port", string(with(func(m map[string]any) { m["token_uri"] = "https://oauth2.googleapis.com:8443/token" })), "token_uri must be"},
		{"token_uri google lookalike", string(with(func(m map[string]any) { m["token_uri"] = "https://oauth2.googleapis.com.example.com/token" })), "token_uri must be"},
		{"token_uri userinfo", string(with(func(m map[string]any) { m["token_uri"] = "https://oauth2.googleapis.com@127.0.0.1/token" })), "token_uri must be"},
	}
	for _, tc := range cases {
		err := llm.ValidateServiceAccountJSON([]byte(tc.input), nil)
		require.Error(t, err, tc.name)
		require.Contains(t, err.Error(), tc.want, tc.name)
		requireNoSecrets(t, err, secrets)
	}

	for _, uri := range []string{"https://oauth2.googleapis.com/token", "https://accounts.google.com/o/oauth2/token", "https://www.googleapis.com/oauth2/v4/token", "https://OAUTH2.googleapis.com:443/token"} {
		require.NoError(t, llm.ValidateServiceAccountJSON(with(func(m map[string]any) { m["token_uri"] = uri }), nil), uri)
	}
	require.Error(t, llm.ValidateServiceAccountJSON(valid, nil), "the fake's endpoint, not allowed")
	require.NoError(t, llm.ValidateServiceAccountJSON(with(func(m map[string]any) { m["token_uri"] = "http://localhost:8080/token" }), mustGuard("localhost:8080")),
		"an emulator the operator allows by host:port")
}
