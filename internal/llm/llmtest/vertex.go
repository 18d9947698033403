package llmtest

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Vertex AI limits of the fake, as the real service has them.
const (
	vertexPredictBatchMax = 250
	jwtBearerGrant        = "urn:ietf:params:oauth:grant-type:jwt-bearer" //nolint:gosec // a grant type name, not a credential
	cloudPlatformScope    = "https://www.googleapis.com/auth/cloud-platform"
	// TokenPath is the path of the fake's OAuth token endpoint.
	TokenPath = "/token"
	// PrivateKeyID is the private_key_id of ServiceAccountJSON.
	PrivateKeyID = "llmtest-key-1"
)

// Vertex fakes Vertex AI (API version v1beta1, as genai uses) and the OAuth
// token endpoint of Google's service-account flow:
//
//	POST /token  (grant_type jwt-bearer; the RS256 assertion is verified)
//	GET  /v1beta1/publishers/google/models
//	POST /v1beta1/projects/{p}/locations/{l}/publishers/google/models/{m}:generateContent
//	POST /v1beta1/projects/{p}/locations/{l}/publishers/google/models/{m}:streamGenerateContent?alt=sse
//	POST /v1beta1/projects/{p}/locations/{l}/publishers/google/models/{m}:predict
//	POST /v1beta1/projects/{p}/locations/{l}/publishers/google/models/{m}:embedContent
//
// API requests must carry a bearer token this fake's token endpoint issued
// (tokens are unique across fakes; 401
// UNAUTHENTICATED otherwise) and name the fake's project and location (404
// otherwise). predict takes at most 250 instances, and one for Gemini
// embedding models; each prediction reports statistics.token_count
// (WordTokens).
type Vertex struct {
	*Fake
	Project, Location string
	ClientEmail       string

	key *rsa.PrivateKey

	tmu           sync.Mutex
	tokens        map[string]bool
	tokenFailures []failure
}

// NewVertex starts a Vertex AI fake for project and location, with a fresh
// RSA key for its service account, closed when the test ends. Its model
// list holds Gemini, embedding and other publisher models.
func NewVertex(t testing.TB, project, location string) *Vertex {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatalf("llmtest: generate RSA key: %v", err)
	}
	v := &Vertex{
		Fake:        newFake(t),
		Project:     project,
		Location:    location,
		ClientEmail: "graphmill-test@" + project + ".iam.gserviceaccount.com",
		key:         key,
		tokens:      map[string]bool{},
	}
	v.models = []Model{
		{Name: "gemini-2.5-flash"},
		{Name: "gemini-2.5-pro"},
		{Name: "gemini-embedding-001"},
		{Name: "text-embedding-005"},
		{Name: "text-multilingual-embedding-002"},
		{Name: "imagen-4.0-generate-001"},
		{Name: "chirp-2"},
	}
	v.route = v.serve
	return v
}

// ServiceAccountJSON is a valid service-account key file for the fake:
// its private key is the fake's and its token_uri the fake's token
// endpoint.
func (v *Vertex) ServiceAccountJSON() []byte {
	der, err := x509.MarshalPKCS8PrivateKey(v.key)
	if err != nil {
		panic(fmt.Sprintf("llmtest: marshal key: %v", err))
	}
	b, err := json.MarshalIndent(map[string]string{
		"type":                        "service_account",
		"project_id":                  v.Project,
		"private_key_id":              PrivateKeyID,
		"private_key":                 string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email":                v.ClientEmail,
		"client_id":                   "100000000000000000001",
		"auth_uri":                    "https://accounts.google.com/o/oauth2/auth",
		"token_uri":                   v.URL() + TokenPath,
		"auth_provider_x509_cert_url": "https://www.googleapis.com/oauth2/v1/certs",
		"universe_domain":             "googleapis.com",
	}, "", "  ")
	if err != nil {
		panic(fmt.Sprintf("llmtest: marshal service account: %v", err))
	}
	return b
}

// FailTokenNext makes the next n token requests fail with status and body
// (an OAuth error JSON, {"error": "invalid_grant", ...}, when empty).
func (v *Vertex) FailTokenNext(n, status int, body string) {
	if body == "" {
		body = `{"error":"invalid_grant","error_description":"Invalid JWT Signature."}`
	}
	v.tmu.Lock()
	defer v.tmu.Unlock()
	for range n {
		v.tokenFailures = append(v.tokenFailures, failure{status: status, body: body})
	}
}

func (v *Vertex) serve(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	if path == TokenPath {
		v.token(w, r)
		return
	}
	endpoint, model, method := EndpointUnknown, "", ""
	prefix := fmt.Sprintf("/v1beta1/projects/%s/locations/%s/publishers/google/models/", v.Project, v.Location)
	foreign := false
	switch {
	case path == "/v1beta1/publishers/google/models":
		endpoint = EndpointModels
	case strings.HasPrefix(path, prefix):
		model, method, _ = strings.Cut(strings.TrimPrefix(path, prefix), ":")
		switch method {
		case "generateContent":
			endpoint = EndpointGenerate
		case "streamGenerateContent":
			endpoint = EndpointStream
		case "predict", "embedContent":
			endpoint = EndpointEmbed
		}
	case strings.HasPrefix(path, "/v1beta1/projects/"):
		foreign = true
	}
	req, err := v.record(r, endpoint, model)
	if err != nil {
		writeError(w, http.StatusBadRequest, "unreadable body")
		return
	}
	if !v.authorized(r) {
		writeError(w, http.StatusUnauthorized, "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.")
		return
	}
	wantMethod := http.MethodPost
	if endpoint == EndpointModels {
		wantMethod = http.MethodGet
	}
	if foreign {
		writeError(w, http.StatusNotFound, "Project or location not found.")
		return
	}
	if endpoint == EndpointUnknown || r.Method != wantMethod {
		writeError(w, http.StatusNotFound, "Method not found.")
		return
	}
	if endpoint == EndpointStream {
		v.serveStream(w, r, model, req.Body)
		return
	}
	v.api(w, endpoint, func() (any, int) {
		switch {
		case endpoint == EndpointModels:
			return v.modelsPage(r.URL.Query().Get("pageToken"), vertexModel, "publisherModels")
		case endpoint == EndpointGenerate:
			return v.generateResponse(model, req.Body)
		case method == "predict":
			return v.predict(model, req.Body)
		default:
			return v.embedContent(req.Body)
		}
	})
}

func vertexModel(m Model) map[string]any {
	return map[string]any{
		"name":        "publishers/google/models/" + m.Name,
		"versionId":   "001",
		"launchStage": "GA",
	}
}

func (v *Vertex) authorized(r *http.Request) bool {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return false
	}
	v.tmu.Lock()
	defer v.tmu.Unlock()
	return v.tokens[tok]
}

func (v *Vertex) predict(model string, body []byte) (any, int) {
	var pr struct {
		Instances []struct {
			Content string `json:"content"`
		} `json:"instances"`
		Parameters struct {
			OutputDimensionality int `json:"outputDimensionality"`
		} `json:"parameters"`
	}
	if err := json.Unmarshal(body, &pr); err != nil {
		return badRequest("Invalid JSON payload received. %v", err)
	}
	limit := vertexPredictBatchMax
	if strings.Contains(model, "gemini") {
		limit = 1
	}
	switch {
	case len(pr.Instances) == 0:
		return badRequest("instances must not be empty")
	case len(pr.Instances) > limit:
		return badRequest("Unable to submit request because the model supports up to %d instances per request, got %d.", limit, len(pr.Instances))
	}
	preds := make([]any, len(pr.Instances))
	chars := 0
	for i, in := range pr.Instances {
		if strings.TrimSpace(in.Content) == "" {
			return badRequest("instances[%d].content must not be empty", i)
		}
		chars += len(in.Content)
		preds[i] = map[string]any{"embeddings": map[string]any{
			"values":     Vector(in.Content, pr.Parameters.OutputDimensionality),
			"statistics": map[string]any{"token_count": WordTokens(in.Content), "truncated": false},
		}}
	}
	return map[string]any{"predictions": preds, "metadata": map[string]any{"billableCharacterCount": chars}}, http.StatusOK
}

func (v *Vertex) embedContent(body []byte) (any, int) {
	var er struct {
		Content struct {
			Parts []struct {
				Text string `json:"text"`
			} `json:"parts"`
		} `json:"content"`
		Config struct {
			OutputDimensionality int `json:"outputDimensionality"`
		} `json:"embedContentConfig"`
	}
	if err := json.Unmarshal(body, &er); err != nil {
		return badRequest("Invalid JSON payload received. %v", err)
	}
	var parts []string
	for _, p := range er.Content.Parts {
		parts = append(parts, p.Text)
	}
	text := strings.Join(parts, " ")
	if strings.TrimSpace(text) == "" {
		return badRequest("content must not be empty")
	}
	return map[string]any{
		"embedding":     map[string]any{"values": Vector(text, er.Config.OutputDimensionality)},
		"usageMetadata": map[string]any{"promptTokenCount": WordTokens(text), "totalTokenCount": WordTokens(text)},
		"truncated":     false,
	}, http.StatusOK
}

// token is the OAuth token endpoint: it verifies the JWT-bearer assertion
// against the service account's public key and issues an access token.
func (v *Vertex) token(w http.ResponseWriter, r *http.Request) {
	req, err := v.record(r, EndpointToken, "")
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_request"})
		return
	}
	v.tmu.Lock()
	var fl *failure
	if len(v.tokenFailures) > 0 {
		fl = &v.tokenFailures[0]
		v.tokenFailures = v.tokenFailures[1:]
	}
	v.tmu.Unlock()
	if fl != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(fl.status)
		_, _ = io.WriteString(w, fl.body)
		return
	}
	oauthErr := func(code, desc string) {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": code, "error_description": desc})
	}
	if r.Method != http.MethodPost {
		oauthErr("invalid_request", "POST required")
		return
	}
	form, err := url.ParseQuery(string(req.Body))
	if err != nil {
		oauthErr("invalid_request", "bad form")
		return
	}
	if form.Get("grant_type") != jwtBearerGrant {
		oauthErr("unsupported_grant_type", "Invalid grant_type: "+form.Get("grant_type"))
		return
	}
	if err := v.verifyAssertion(form.Get("assertion")); err != nil {
		oauthErr("invalid_grant", err.Error())
		return
	}
	var nonce [8]byte
	_, _ = rand.Read(nonce[:])
	v.tmu.Lock()
	tok := "ya29.llmtest-" + strconv.Itoa(len(v.tokens)+1) + "-" + hex.EncodeToString(nonce[:])
	v.tokens[tok] = true
	v.tmu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": 3600})
}

// verifyAssertion checks an RS256 JWT signed by the service account's key:
// key id, signature, issuer, audience (the token endpoint), scope and
// expiry.
func (v *Vertex) verifyAssertion(jwt string) error {
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		return fmt.Errorf("malformed assertion")
	}
	var header struct {
		Alg string `json:"alg"`
		Kid string `json:"kid"`
	}
	if err := decodeSegment(parts[0], &header); err != nil {
		return fmt.Errorf("bad header: %w", err)
	}
	if header.Alg != "RS256" || header.Kid != PrivateKeyID {
		return fmt.Errorf("unexpected alg %q or kid %q", header.Alg, header.Kid)
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return fmt.Errorf("bad signature encoding")
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err := rsa.VerifyPKCS1v15(&v.key.PublicKey, crypto.SHA256, sum[:], sig); err != nil {
		return fmt.Errorf("invalid JWT signature")
	}
	var claims struct {
		Iss   string `json:"iss"`
		Aud   string `json:"aud"`
		Scope string `json:"scope"`
		Exp   int64  `json:"exp"`
		Iat   int64  `json:"iat"`
	}
	if err := decodeSegment(parts[1], &claims); err != nil {
		return fmt.Errorf("bad claims: %w", err)
	}
	now := time.Now().Unix()
	switch {
	case claims.Iss != v.ClientEmail:
		return fmt.Errorf("unknown issuer")
	case claims.Aud != v.URL()+TokenPath:
		return fmt.Errorf("invalid audience")
	case !strings.Contains(" "+claims.Scope+" ", " "+cloudPlatformScope+" "):
		return fmt.Errorf("missing scope %s", cloudPlatformScope)
	case claims.Exp < now || claims.Iat > now+300:
		return fmt.Errorf("assertion expired or not yet valid")
	}
	return nil
}

func decodeSegment(s string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}
