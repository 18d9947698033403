// Package secrets seals values stored at rest (provider credentials,
// integration configuration, MCP server env and headers) with AES-256-GCM.
//
// A sealed value reads "v1:<keyId>:<base64url(nonce|ciphertext)>". The key
// id is derived from the key itself, so old keys (GRAPHMILL_SECRET_KEYS_OLD)
// still open what they sealed after a rotation while new values are sealed
// with the current key. Callers pass additional data naming where the value
// lives (table, column, row id): a sealed value copied to another row or
// column does not open.
package secrets

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// KeySize is the length of a key in bytes.
const KeySize = 32

const version = "v1"

// ErrOpen is returned for a value that does not open: tampered, sealed for
// another place, or sealed with a key this process does not hold.
var ErrOpen = errors.New("secret does not open with the configured keys (tampered, moved, or sealed with an unknown key)")

// Box seals with the current key and opens with any known key.
type Box struct {
	current string
	aeads   map[string]cipher.AEAD
}

// New builds a box from the current key and retired ones, each base64
// (standard or URL alphabet, padded or not) of 32 bytes.
func New(current string, old ...string) (*Box, error) {
	b := &Box{aeads: map[string]cipher.AEAD{}}
	id, err := b.add(current)
	if err != nil {
		return nil, fmt.Errorf("secret key: %w", err)
	}
	b.current = id
	for i, k := range old {
		if strings.TrimSpace(k) == "" {
			continue
		}
		if _, err := b.add(k); err != nil {
			return nil, fmt.Errorf("old secret key %d: %w", i+1, err)
		}
	}
	return b, nil
}

func (b *Box) add(encoded string) (string, error) {
	key, err := DecodeKey(encoded)
	if err != nil {
		return "", err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return "", err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(key)
	id := hex.EncodeToString(sum[:4])
	b.aeads[id] = aead
	return id, nil
}

// DecodeKey reads a base64 key and checks its length.
func DecodeKey(encoded string) ([]byte, error) {
	s := strings.TrimSpace(encoded)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if key, err := enc.DecodeString(s); err == nil {
			if len(key) != KeySize {
				return nil, fmt.Errorf("must decode to %d bytes, not %d", KeySize, len(key))
			}
			return key, nil
		}
	}
	return nil, errors.New("is not base64")
}

// GenerateKey returns a new random key, base64 encoded.
func GenerateKey() string {
	key := make([]byte, KeySize)
	_, _ = rand.Read(key) // crypto/rand.Read never fails
	return base64.StdEncoding.EncodeToString(key)
}

// LoadOrCreateKeyFile reads the key kept in path, creating it (0600) with a
// new random key when it does not exist. Only the embedded default keeps its
// key in the data directory.
func LoadOrCreateKeyFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		k := strings.TrimSpace(string(b))
		if _, err := DecodeKey(k); err != nil {
			return "", fmt.Errorf("%s: the key %w", path, err)
		}
		return k, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("read secret key: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("create data directory: %w", err)
	}
	k := GenerateKey()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		if errors.Is(err, os.ErrExist) { // created concurrently: use that one
			return LoadOrCreateKeyFile(path)
		}
		return "", fmt.Errorf("create secret key: %w", err)
	}
	if _, err := f.WriteString(k + "\n"); err != nil {
		_ = f.Close()
		return "", fmt.Errorf("write secret key: %w", err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("write secret key: %w", err)
	}
	return k, nil
}

// Place names where a sealed value is stored; it is bound to the value as
// additional data.
func Place(table, column, rowID string) []byte {
	return []byte(table + "\x00" + column + "\x00" + rowID)
}

// Seal encrypts plaintext for place with the current key.
func (b *Box) Seal(plaintext, place []byte) string {
	aead := b.aeads[b.current]
	nonce := make([]byte, aead.NonceSize())
	_, _ = rand.Read(nonce)
	out := aead.Seal(nonce, nonce, plaintext, place)
	return version + ":" + b.current + ":" + base64.RawURLEncoding.EncodeToString(out)
}

// Open decrypts a value sealed for place.
func (b *Box) Open(sealed string, place []byte) ([]byte, error) {
	parts := strings.SplitN(sealed, ":", 3)
	if len(parts) != 3 || parts[0] != version {
		return nil, ErrOpen
	}
	aead, ok := b.aeads[parts[1]]
	if !ok {
		return nil, ErrOpen
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || len(raw) < aead.NonceSize() {
		return nil, ErrOpen
	}
	pt, err := aead.Open(nil, raw[:aead.NonceSize()], raw[aead.NonceSize():], place)
	if err != nil {
		return nil, ErrOpen
	}
	return pt, nil
}

// Current reports whether sealed uses the current key (false: a rotation
// should re-seal it).
func (b *Box) Current(sealed string) bool {
	parts := strings.SplitN(sealed, ":", 3)
	return len(parts) == 3 && parts[1] == b.current
}
