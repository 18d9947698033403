package main

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/config"
)

// oidcAudience is the audience the OIDC test servers are configured with.
const oidcAudience = "graphmill-test"

// oidcIssuer is a fake identity provider: discovery document and JWKS
// served over httptest, and an RSA key to sign tokens with.
type oidcIssuer struct {
	url string
	key *rsa.PrivateKey
	kid string
}

func newRSAKey(t *testing.T) *rsa.PrivateKey {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	return key
}

func newOIDCIssuer(t *testing.T) *oidcIssuer {
	t.Helper()
	iss := &oidcIssuer{key: newRSAKey(t), kid: "key-" + uuid.NewString()[:8]}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"issuer":                                iss.url,
			"jwks_uri":                              iss.url + "/jwks",
			"authorization_endpoint":                iss.url + "/authorize",
			"token_endpoint":                        iss.url + "/token",
			"response_types_supported":              []string{"code"},
			"subject_types_supported":               []string{"public"},
			"id_token_signing_alg_values_supported": []string{"RS256"},
		})
	})
	mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{
			Key: &iss.key.PublicKey, KeyID: iss.kid, Algorithm: string(jose.RS256), Use: "sig",
		}}})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	iss.url = srv.URL
	return iss
}

// claims returns valid claims for sub from this issuer, with overrides
// applied (a nil value removes the claim).
func (i *oidcIssuer) claims(sub string, overrides map[string]any) map[string]any {
	now := time.Now()
	c := map[string]any{
		"iss":            i.url,
		"aud":            oidcAudience,
		"sub":            sub,
		"iat":            now.Unix(),
		"exp":            now.Add(time.Hour).Unix(),
		"jti":            uuid.NewString(),
		"email":          sub + "@example.com",
		"email_verified": true,
		"name":           "User " + sub,
	}
	for k, v := range overrides {
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
	}
	return c
}

// token signs claims with this issuer's key.
func (i *oidcIssuer) token(t *testing.T, claims map[string]any) string {
	t.Helper()
	return signJWT(t, i.key, i.kid, claims)
}

// signJWT signs claims with key (RS256), naming kid in the header.
func signJWT(t *testing.T, key *rsa.PrivateKey, kid string, claims map[string]any) string {
	t.Helper()
	signer, err := jose.NewSigner(
		jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: key, KeyID: kid}},
		(&jose.SignerOptions{}).WithType("JWT"),
	)
	require.NoError(t, err)
	payload, err := json.Marshal(claims)
	require.NoError(t, err)
	jws, err := signer.Sign(payload)
	require.NoError(t, err)
	raw, err := jws.CompactSerialize()
	require.NoError(t, err)
	return raw
}

// withOIDC configures the server to accept tokens of iss.
func withOIDC(iss *oidcIssuer) serverOption {
	return func(c *config.Config) {
		c.OIDCIssuer = iss.url
		c.OIDCAudience = oidcAudience
	}
}

// superadminUser is a row of GET /api/superadmin/users.
type superadminUser struct {
	ID                     string `json:"id"`
	IdentityProviderUserID string `json:"identityProviderUserId"`
	DisplayName            string `json:"displayName"`
	PrimaryEmail           string `json:"primaryEmail"`
}

// usersBySubject lists (as the admin) the users whose identity provider id
// is sub.
func (s *testServer) usersBySubject(sub string) []superadminUser {
	s.t.Helper()
	var page struct {
		Data []superadminUser `json:"data"`
		Meta struct {
			Total int `json:"total"`
		} `json:"meta"`
	}
	s.must(200, "GET", "/api/superadmin/users?limit=100", s.admin, nil).Decode(s.t, &page)
	require.Less(s.t, page.Meta.Total, 100, "the test database holds more users than one page")
	var out []superadminUser
	for _, u := range page.Data {
		if u.IdentityProviderUserID == sub {
			out = append(out, u)
		}
	}
	return out
}

// withT returns the server's helpers bound to a subtest's t.
func (s *testServer) withT(t *testing.T) *testServer {
	c := *s
	c.t = t
	return &c
}

// requireUnauthenticated checks a refusal is a 401 problem with code
// unauthenticated.
func requireUnauthenticated(t *testing.T, r response) {
	t.Helper()
	require.Equal(t, http.StatusUnauthorized, r.Status, "body: %s", r.Body)
	require.Equal(t, "application/problem+json", r.Header.Get("Content-Type"))
	require.Equal(t, "unauthenticated", r.JSON(t)["code"])
}

func TestOIDCValidTokenCreatesUserOnce(t *testing.T) {
	t.Parallel()
	iss := newOIDCIssuer(t)
	s := newServer(t, withOIDC(iss))
	sub := "sub-" + uuid.NewString()

	var me struct {
		IsSuperadmin bool   `json:"isSuperadmin"`
		UserID       string `json:"userId"`
	}
	s.must(200, "GET", "/api/superadmin/me", iss.token(t, iss.claims(sub, nil)), nil).Decode(t, &me)
	require.False(t, me.IsSuperadmin)

	users := s.usersBySubject(sub)
	require.Len(t, users, 1)
	require.Equal(t, me.UserID, users[0].ID)
	require.Equal(t, sub+"@example.com", users[0].PrimaryEmail)
	require.Equal(t, "User "+sub, users[0].DisplayName)

	// A new token (not cached) for the same subject finds the same user
	// and refreshes its profile.
	second := iss.token(t, iss.claims(sub, map[string]any{"name": "Renamed", "email": "renamed@example.com"}))
	var again struct {
		UserID string `json:"userId"`
	}
	s.must(200, "GET", "/api/superadmin/me", second, nil).Decode(t, &again)
	require.Equal(t, me.UserID, again.UserID)

	users = s.usersBySubject(sub)
	require.Len(t, users, 1)
	require.Equal(t, me.UserID, users[0].ID)
	require.Equal(t, "Renamed", users[0].DisplayName)
	require.Equal(t, "renamed@example.com", users[0].PrimaryEmail)

	// The OIDC user is not a superadmin: superadmin routes are refused.
	r := s.do("GET", "/api/superadmin/users", second, nil)
	require.Equal(t, http.StatusForbidden, r.Status, "body: %s", r.Body)
	require.Equal(t, "permission_denied", r.JSON(t)["code"])
}

func TestOIDCUserSeesProjectsOnlyAsMember(t *testing.T) {
	t.Parallel()
	iss := newOIDCIssuer(t)
	s := newServer(t, withOIDC(iss))
	project, _ := s.defaultProject()
	sub := "sub-" + uuid.NewString()
	tok := iss.token(t, iss.claims(sub, nil))

	type projectList struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
		Total int `json:"total"`
	}
	var list projectList
	s.must(200, "GET", "/api/projects", tok, nil).Decode(t, &list)
	require.Empty(t, list.Data)
	require.Zero(t, list.Total)
	r := s.must(404, "GET", "/api/projects/"+project, tok, nil)
	require.Equal(t, "not_found", r.JSON(t)["code"])

	users := s.usersBySubject(sub)
	require.Len(t, users, 1)
	s.addMember(project, users[0].ID, "viewer")

	// The same (cached) token now sees the project: the membership change
	// dropped the cached principal.
	list = projectList{}
	s.must(200, "GET", "/api/projects", tok, nil).Decode(t, &list)
	require.Len(t, list.Data, 1)
	require.Equal(t, project, list.Data[0].ID)
	var got struct {
		ID string `json:"id"`
	}
	s.must(200, "GET", "/api/projects/"+project, tok, nil).Decode(t, &got)
	require.Equal(t, project, got.ID)
}

func TestOIDCRefusesBadTokens(t *testing.T) {
	t.Parallel()
	iss := newOIDCIssuer(t)
	other := newOIDCIssuer(t)
	s := newServer(t, withOIDC(iss))
	sub := "sub-" + uuid.NewString()
	past := time.Now().Add(-time.Hour)
	// Control: this server accepts this issuer's well-formed tokens, so
	// each refusal below is down to the one thing its token changes.
	s.must(200, "GET", "/api/superadmin/me", iss.token(t, iss.claims("control-"+sub, nil)), nil)

	cases := map[string]string{
		// Same kid, same claims, but signed by a key the issuer never
		// published.
		"bad signature": signJWT(t, newRSAKey(t), iss.kid, iss.claims(sub, nil)),
		// A token that is valid at another issuer.
		"other issuer": other.token(t, other.claims(sub, nil)),
		// Signed with the right key but claiming another issuer.
		"issuer claim":   iss.token(t, iss.claims(sub, map[string]any{"iss": other.url})),
		"wrong audience": iss.token(t, iss.claims(sub, map[string]any{"aud": "someone-else"})),
		"expired": iss.token(t, iss.claims(sub, map[string]any{
			"iat": past.Add(-time.Hour).Unix(), "exp": past.Unix(),
		})),
		"no subject":  iss.token(t, iss.claims(sub, map[string]any{"sub": nil})),
		"garbage":     "this-is-not-a-jwt",
		"garbage jwt": "eyJhbGciOiJSUzI1NiJ9.e30.c2ln",
	}
	for name, tok := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			sub := s.withT(t)
			requireUnauthenticated(t, sub.do("GET", "/api/superadmin/me", tok, nil))
			requireUnauthenticated(t, sub.do("GET", "/api/projects", tok, nil))
		})
	}
}

func TestOIDCRefusalsCreateNoUser(t *testing.T) {
	t.Parallel()
	iss := newOIDCIssuer(t)
	other := newOIDCIssuer(t)
	s := newServer(t, withOIDC(iss))
	sub := "sub-" + uuid.NewString()

	for _, tok := range []string{
		signJWT(t, newRSAKey(t), iss.kid, iss.claims(sub, nil)),
		other.token(t, other.claims(sub, nil)),
		iss.token(t, iss.claims(sub, map[string]any{"aud": "someone-else"})),
	} {
		requireUnauthenticated(t, s.do("GET", "/api/superadmin/me", tok, nil))
	}
	require.Empty(t, s.usersBySubject(sub))

	// The same subject with a valid token is accepted, so the refusals
	// above were about the tokens, not the subject.
	s.must(200, "GET", "/api/superadmin/me", iss.token(t, iss.claims(sub, nil)), nil)
	require.Len(t, s.usersBySubject(sub), 1)
}

func TestOIDCConfigNeedsAudience(t *testing.T) {
	t.Parallel()
	_, err := config.Load([]string{"GRAPHMILL_OIDC_ISSUER=https://issuer.example.com"})
	require.ErrorContains(t, err, "GRAPHMILL_OIDC_AUDIENCE")

	_, err = config.Load([]string{"GRAPHMILL_OIDC_AUDIENCE=graphmill"})
	require.ErrorContains(t, err, "GRAPHMILL_OIDC_ISSUER")

	cfg, err := config.Load([]string{
		"GRAPHMILL_OIDC_ISSUER=https://issuer.example.com", "GRAPHMILL_OIDC_AUDIENCE=graphmill",
	})
	require.NoError(t, err)
	require.Equal(t, "https://issuer.example.com", cfg.OIDCIssuer)
	require.Equal(t, "graphmill", cfg.OIDCAudience)
}

// While the identity provider cannot be reached, OIDC callers get 503 (their
// token may be fine) and API tokens keep working.
func TestOIDCIssuerDown(t *testing.T) {
	t.Parallel()
	iss := newOIDCIssuer(t)
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "down", http.StatusBadGateway)
	}))
	t.Cleanup(down.Close)
	tok := iss.token(t, iss.claims("sub-down", nil))

	s := newServer(t, func(c *config.Config) { c.OIDCIssuer = down.URL; c.OIDCAudience = oidcAudience })
	r := s.must(503, "GET", "/api/projects", tok, nil)
	require.Equal(t, "unavailable", r.JSON(t)["code"])
	require.Contains(t, r.Detail(t), "identity provider")
	s.must(200, "GET", "/api/projects", s.admin, nil)
	var users pagedBody
	s.must(200, "GET", "/api/superadmin/users", s.admin, nil).Decode(t, &users)
	require.Equal(t, 1, users.Meta.Total)
}

// TestOIDCSessionScopesFollowRoles: an OIDC session holds the scopes of
// the user's roles (DESIGN 4), not every scope: what it may do where the
// role does not decide (routes open to any member, tokens it mints) grows
// with the role.
func TestOIDCSessionScopesFollowRoles(t *testing.T) {
	t.Parallel()
	iss := newOIDCIssuer(t)
	s := newServer(t, withOIDC(iss))
	project, _ := s.defaultProject()
	sub := "sub-" + uuid.NewString()
	tok := iss.token(t, iss.claims(sub, nil))
	mint := func(status int, scopes ...string) response {
		t.Helper()
		return s.must(status, "POST", "/api/tokens", tok, map[string]any{"name": "cli", "scopes": scopes})
	}

	// No role yet: the personal scopes only.
	s.must(200, "GET", "/api/projects", tok, nil)
	mint(201, "admin:read", "notifications:read")
	require.Contains(t, mint(403, "graph:read").Detail(t), "graph:read")

	users := s.usersBySubject(sub)
	require.Len(t, users, 1)
	s.addMember(project, users[0].ID, "viewer")
	mint(201, "graph:read", "documents:read", "search:read", "mcp:use", "tasks:read")
	require.Contains(t, mint(403, "graph:read", "graph:write").Detail(t), "graph:write")
	r := s.must(403, "POST", "/api/projects/"+project+"/tokens", tok, map[string]any{"name": "up", "scopes": []string{"documents:write"}})
	require.Contains(t, r.Detail(t), "documents:write")
	// A route only the scope guards: the registry is for MCP admins.
	r = s.must(403, "GET", "/api/admin/mcp-registry/search?q=x", tok, nil)
	require.Contains(t, r.Detail(t), "mcp:admin")

	s.addMember(project, users[0].ID, "editor")
	mint(201, "graph:write", "documents:write", "extraction:write", "tasks:write")
	require.Contains(t, mint(403, "providers:write").Detail(t), "providers:write")
	require.Contains(t, mint(403, "mcp:admin").Detail(t), "mcp:admin")

	s.addMember(project, users[0].ID, "admin")
	mint(201, allScopes...)

	var tokens listBody
	s.must(200, "GET", "/api/tokens", tok, nil).Decode(t, &tokens)
	require.Len(t, tokens.Data, 4, "only the allowed tokens were created")
}

// TestOIDCMintedTokenLifetime: a token minted with an OIDC session lives
// at most GRAPHMILL_OIDC_TOKEN_MAX_LIFETIME: that long when no expiry is
// asked for, and a later expiry is refused.
func TestOIDCMintedTokenLifetime(t *testing.T) {
	t.Parallel()
	iss := newOIDCIssuer(t)
	s := newServer(t, withOIDC(iss), func(c *config.Config) { c.OIDCTokenMaxLifetime = 2 * time.Hour })
	project, _ := s.defaultProject()
	sub := "sub-" + uuid.NewString()
	tok := iss.token(t, iss.claims(sub, nil))
	s.must(200, "GET", "/api/projects", tok, nil)
	s.addMember(project, s.usersBySubject(sub)[0].ID, "viewer")

	type minted struct {
		ID        string     `json:"id"`
		Token     string     `json:"token"`
		ExpiresAt *time.Time `json:"expiresAt"`
	}
	var m minted
	before := time.Now()
	s.must(201, "POST", "/api/tokens", tok, map[string]any{"name": "cli", "scopes": []string{"graph:read"}}).Decode(t, &m)
	require.NotNil(t, m.ExpiresAt, "no expiry asked: the longest allowed")
	require.WithinDuration(t, before.Add(2*time.Hour), *m.ExpiresAt, time.Minute)

	r := s.must(400, "POST", "/api/projects/"+project+"/tokens", tok, map[string]any{
		"name": "long", "scopes": []string{"graph:read"}, "expiresAt": time.Now().Add(3 * time.Hour).UTC().Format(time.RFC3339),
	})
	require.Contains(t, r.Detail(t), "GRAPHMILL_OIDC_TOKEN_MAX_LIFETIME")
	in := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	s.must(201, "POST", "/api/projects/"+project+"/tokens", tok, map[string]any{
		"name": "short", "scopes": []string{"graph:read", "admin:write"}, "expiresAt": in.Format(time.RFC3339),
	}).Decode(t, &m)
	require.True(t, in.Equal(*m.ExpiresAt))

	// The minted token works, and mints nothing that outlives it.
	s.must(200, "GET", "/api/graph/objects", m.Token, nil)
	var child minted
	s.must(201, "POST", "/api/projects/"+project+"/tokens", m.Token, map[string]any{"name": "child", "scopes": []string{"graph:read"}}).Decode(t, &child)
	require.True(t, in.Equal(*child.ExpiresAt), "capped at its minting token's expiry")
}
