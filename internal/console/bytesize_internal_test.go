package console

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestByteSize: bytes under 1 KB, else one decimal in the largest unit
// whose rounded value stays under 1024.
func TestByteSize(t *testing.T) {
	t.Parallel()
	for n, want := range map[int64]string{
		0:                "0 B",
		1023:             "1023 B",
		1024:             "1.0 KB",
		18951:            "18.5 KB",
		1024*1024 - 1:    "1.0 MB",
		5*1024*1024 + 1:  "5.0 MB",
		3 << 30:          "3.0 GB",
		2000 * (1 << 40): "2000.0 TB",
		1536 * (1 << 20): "1.5 GB",
		1048524:          "1023.9 KB",
	} {
		require.Equal(t, want, byteSize(n), n)
	}
	require.Equal(t, "18951 bytes", exactBytes(18951))
}
