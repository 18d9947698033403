package llm

import (
	"bytes"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/url"
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

// ValidateServiceAccountJSON checks that b is a usable Google
// service-account key file: a JSON object of type "service_account" with
// client_email, an RSA private_key in PEM form and an https token_uri
// (plain http only for a loopback host, as emulators and tests use). The
// error says what is wrong without ever repeating key material.
func ValidateServiceAccountJSON(b []byte) error {
	_, err := parseServiceAccount(b)
	return err
}

func parseServiceAccount(b []byte) (*serviceAccountFile, error) {
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
			return nil, fmt.Errorf("service account credentials: field %q must be a %s", typ.Field, typ.Type)
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
	if err := checkTokenURI(f.TokenURI); err != nil {
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

func checkTokenURI(s string) error {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return errors.New("service account credentials: token_uri is not an absolute URL")
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if isLoopback(u.Hostname()) {
			return nil
		}
	}
	return errors.New("service account credentials: token_uri must be an https URL")
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
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
