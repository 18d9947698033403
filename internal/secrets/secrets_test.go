package secrets_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/secrets"
)

func TestSealOpen(t *testing.T) {
	box, err := secrets.New(secrets.GenerateKey())
	require.NoError(t, err)
	place := secrets.Place("org_provider_credentials", "secret", "row-1")
	sealed := box.Seal([]byte("AIza-very-secret"), place)
	require.True(t, strings.HasPrefix(sealed, "v1:"))
	require.NotContains(t, sealed, "very-secret")
	got, err := box.Open(sealed, place)
	require.NoError(t, err)
	require.Equal(t, "AIza-very-secret", string(got))

	// Two seals of the same value differ (random nonce).
	require.NotEqual(t, sealed, box.Seal([]byte("AIza-very-secret"), place))

	// Moved to another row, or tampered: refused.
	_, err = box.Open(sealed, secrets.Place("org_provider_credentials", "secret", "row-2"))
	require.ErrorIs(t, err, secrets.ErrOpen)
	tampered := sealed[:len(sealed)-2] + "AA"
	_, err = box.Open(tampered, place)
	require.ErrorIs(t, err, secrets.ErrOpen)
	_, err = box.Open("plain", place)
	require.ErrorIs(t, err, secrets.ErrOpen)
}

func TestRotation(t *testing.T) {
	oldKey, newKey := secrets.GenerateKey(), secrets.GenerateKey()
	oldBox, err := secrets.New(oldKey)
	require.NoError(t, err)
	place := secrets.Place("t", "c", "1")
	sealed := oldBox.Seal([]byte("x"), place)

	rotated, err := secrets.New(newKey, oldKey)
	require.NoError(t, err)
	got, err := rotated.Open(sealed, place)
	require.NoError(t, err)
	require.Equal(t, "x", string(got))
	require.False(t, rotated.Current(sealed))
	require.True(t, rotated.Current(rotated.Seal([]byte("x"), place)))

	// Without the old key it no longer opens.
	fresh, err := secrets.New(newKey)
	require.NoError(t, err)
	_, err = fresh.Open(sealed, place)
	require.ErrorIs(t, err, secrets.ErrOpen)
}

func TestBadKeys(t *testing.T) {
	_, err := secrets.New("")
	require.ErrorContains(t, err, "must decode to 32 bytes")
	_, err = secrets.New("not base64 !!")
	require.ErrorContains(t, err, "not base64")
	_, err = secrets.New(secrets.GenerateKey(), "c2hvcnQ=")
	require.ErrorContains(t, err, "old secret key 1")
}

func TestKeyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "data", "secret-key")
	k1, err := secrets.LoadOrCreateKeyFile(path)
	require.NoError(t, err)
	st, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	k2, err := secrets.LoadOrCreateKeyFile(path)
	require.NoError(t, err)
	require.Equal(t, k1, k2)

	require.NoError(t, os.WriteFile(path, []byte("garbage"), 0o600))
	_, err = secrets.LoadOrCreateKeyFile(path)
	require.Error(t, err)
}
