package mcpregistry

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/errs"
)

// Every sealed value of a server is hidden in error text, as written and
// URL-encoded; URLs keep only scheme, host and path.
func TestRedact(t *testing.T) {
	t.Parallel()
	srv := Server{
		vars:    map[string]string{"tenant": "acme-tenant-7", "key": "k y/secret&1", "region": "eu"},
		headers: map[string]string{"Authorization": "Bearer header-secret-9"},
		env:     map[string]string{"TOKEN": "env-secret-3"},
	}
	for _, tc := range []struct{ in, want string }{
		{
			`Post "https://user:pw@acme-tenant-7.example.com/v1/mcp?key=k+y%2Fsecret%261&region=eu#frag": dial tcp: lookup acme-tenant-7.example.com: no such host`,
			`Post "https://{tenant}.example.com/v1/mcp": dial tcp: lookup {tenant}.example.com: no such host`,
		},
		{`GET http://h:8080/p/k%20y%2Fsecret&1/x?z=1 failed`, `GET http://h:8080/p/{key}/x failed`},
		{"server said: unauthorized (Bearer header-secret-9)", "server said: unauthorized (***)"},
		{"child printed env-secret-3", "child printed ***"},
		{"region eu stays: too short to be a secret", "region eu stays: too short to be a secret"},
		{"unparsable http://[::1/%zz?key=acme-tenant-7 end", "unparsable http://[::1/%zz end"},
	} {
		require.Equal(t, tc.want, srv.redact(tc.in), tc.in)
	}

	// A chain keeps its code; its message is the redacted domain message.
	inner := &url.Error{Op: "Post", URL: "https://acme-tenant-7.example.com/mcp?key=x", Err: errors.New("connection refused")}
	err := srv.redactError(fmt.Errorf("sending: %w", errs.Errorf(errs.BadGateway, "cannot connect: %v", inner)))
	require.Equal(t, errs.BadGateway, errs.CodeOf(err))
	require.Equal(t, `cannot connect: Post "https://{tenant}.example.com/mcp": connection refused`, err.Error())
	// A long message is cut after redaction: never inside a value.
	long := strings.Repeat("x", maxErrorText-5) + " Bearer header-secret-9 and more"
	err = srv.redactError(errs.New(errs.BadGateway, long))
	require.Equal(t, strings.Repeat("x", maxErrorText-5)+" *** ...", err.Error())
	require.NoError(t, srv.redactError(nil))
	require.ErrorIs(t, srv.redactError(ErrServerDisabled), ErrServerDisabled, "sentinels still match")
}

// TestRedactSecretSplitByNUL: a value split by a NUL is hidden as well:
// the text is cleaned (postgres.Text) before it is redacted, so dropping
// the NUL where it is stored (an agent step, a job error) cannot make the
// value whole again.
func TestRedactSecretSplitByNUL(t *testing.T) {
	t.Parallel()
	srv := Server{env: map[string]string{"TOKEN": "env-secret-3"}}
	err := srv.redactError(errs.New(errs.BadGateway, "child printed env-sec\x00ret-3 \xff"))
	require.Equal(t, "child printed *** \uFFFD", err.Error())
	require.Equal(t, "child printed *** \uFFFD", srv.redact("child printed env-sec\x00ret-3 \xff"))
}
