package llm

import (
	"bytes"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// serviceAccountFile is the part of a Google service-account key file this
// package reads.
type serviceAccountFile struct {
	Type           string `json:"type"`
	ProjectID      string `json:"project_id"`
	PrivateKeyID   string `json:"private_key_id"`
	PrivateKey     string `json:"private_key"`
	ClientEmail    string `json:"client_email"`
	TokenURI       string `json:"token_uri"`
	QuotaProjectID string `json:"quota_project_id"`
}

// AllowList names the destinations the operator allows beyond the
// providers' own (GRAPHMILL_EGRESS_ALLOW; *egress.Guard implements it).
type AllowList interface {
	// Names reports whether the list names host (and port) itself.
	Names(host, port string) bool
}

// googleTokenHosts are the hosts of Google's documented OAuth 2.0 token
// endpoints: https://oauth2.googleapis.com/token (what key files name
// today), https://accounts.google.com/o/oauth2/token and
// https://www.googleapis.com/oauth2/v4/token (older files).
func googleTokenHosts() []string {
	return []string{"oauth2.googleapis.com", "accounts.google.com", "www.googleapis.com"}
}

// ValidateServiceAccountJSON checks that b is a usable Google
// service-account key file: a JSON object of type "service_account" with
// client_email, an RSA private_key in PEM form and a token_uri that is one
// of Google's token endpoints over https, or a URL whose host allow names
// (emulators, tests; nil names nothing). The token request carries a
// signed assertion and goes wherever the file says, so a tenant's file
// must not point it at this server's own addresses. The error says what is
// wrong without ever repeating key material.
func ValidateServiceAccountJSON(b []byte, allow AllowList) error {
	_, err := parseServiceAccount(b, allow)
	return err
}

func parseServiceAccount(b []byte, allow AllowList) (*serviceAccountFile, error) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return nil, errors.New("service account credentials are empty")
	}
	if b[0] != '{' {
		if !json.Valid(b) {
			return nil, errors.New("service account credentials are not JSON")
		}
		return nil, errors.New("service account credentials must be a JSON object")
	}
	var f serviceAccountFile
	if err := json.Unmarshal(b, &f); err != nil {
		var syn *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case errors.As(err, &syn):
			return nil, fmt.Errorf("service account credentials are not JSON (syntax error at byte %d)", syn.Offset)
		case errors.As(err, &typ):
			return nil, fmt.Errorf("service account credentials: field %q must be of Go type %s, not JSON %s", typ.Field, typ.Type, typ.Value)
		default:
			return nil, errors.New("service account credentials are not JSON")
		}
	}
	switch f.Type {
	case "service_account":
	case "":
		return nil, errors.New(`service account credentials: "type" is missing; want "service_account"`)
	default:
		return nil, fmt.Errorf(`service account credentials: "type" is %q; want "service_account"`, truncate(f.Type, 40))
	}
	var missing []string
	if strings.TrimSpace(f.ClientEmail) == "" {
		missing = append(missing, "client_email")
	}
	if strings.TrimSpace(f.PrivateKey) == "" {
		missing = append(missing, "private_key")
	}
	if strings.TrimSpace(f.TokenURI) == "" {
		missing = append(missing, "token_uri")
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("service account credentials: missing %s", strings.Join(missing, ", "))
	}
	if !strings.Contains(f.ClientEmail, "@") {
		return nil, errors.New("service account credentials: client_email is not an email address")
	}
	if err := checkPrivateKey(f.PrivateKey); err != nil {
		return nil, err
	}
	if err := checkTokenURI(f.TokenURI, allow); err != nil {
		return nil, err
	}
	return &f, nil
}

func checkPrivateKey(s string) error {
	block, _ := pem.Decode([]byte(s))
	if block == nil {
		return errors.New("service account credentials: private_key is not a PEM-encoded key")
	}
	if k, err := x509.ParsePKCS8PrivateKey(block.Bytes); err == nil {
		if _, ok := k.(*rsa.PrivateKey); !ok {
			return errors.New("service account credentials: private_key is not an RSA key")
		}
		return nil
	}
	if _, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		return nil
	}
	return errors.New("service account credentials: private_key is not an RSA private key in PKCS#8 or PKCS#1 form")
}

func checkTokenURI(s string, allow AllowList) error {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return errors.New("service account credentials: token_uri is not an absolute URL")
	}
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if u.Scheme == "https" && u.User == nil && (port == "" || port == "443") && slices.Contains(googleTokenHosts(), host) {
		return nil
	}
	if (u.Scheme == "https" || u.Scheme == "http") && allow != nil && allow.Names(host, port) {
		return nil
	}
	return errors.New("service account credentials: token_uri must be one of Google's token endpoints over https " +
		"(https://oauth2.googleapis.com/token, https://accounts.google.com/o/oauth2/token, https://www.googleapis.com/oauth2/v4/token) " +
		"or a URL whose host GRAPHMILL_EGRESS_ALLOW names")
}

// secrets returns the strings of the file that must never appear in an
// error: the private key (whole and line by line) and its id.
func (f *serviceAccountFile) secrets() []string {
	out := []string{f.PrivateKey, f.PrivateKeyID}
	for _, line := range strings.Split(f.PrivateKey, "\n") {
		line = strings.TrimSpace(line)
		if len(line) >= 16 && !strings.HasPrefix(line, "-----") {
			out = append(out, line)
		}
	}
	return out
}
