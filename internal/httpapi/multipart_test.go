package httpapi_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphmill/graphmill/internal/httpapi"
)

// TestMultipartDetail: why a multipart body does not parse is said
// without any of the text the client sent (a header line, a stray line).
func TestMultipartDetail(t *testing.T) {
	t.Parallel()
	const evil = "<script>alert(1)</script>"
	nextPart := func(boundary, body string) error {
		r := multipart.NewReader(strings.NewReader(body), boundary)
		for {
			p, err := r.NextPart()
			if err != nil {
				return err
			}
			if _, err := io.Copy(io.Discard, p); err != nil {
				return err
			}
		}
	}
	for name, c := range map[string]struct {
		err  error
		want string
	}{
		"HeaderWithoutColon": {nextPart("b", "--b\r\n"+evil+"\r\n\r\ndata\r\n--b--\r\n"), "a part's header is malformed"},
		"HeaderBadName":      {nextPart("b", "--b\r\nX "+evil+": v\r\n\r\ndata\r\n--b--\r\n"), "a part's header is malformed"},
		// The reader's error for a line where a boundary belongs (as
		// mime/multipart words it).
		"StrayLine":      {fmt.Errorf("multipart: expecting a new Part; got line %q", evil+"\r\n"), "not delimited by the boundary"},
		"Truncated":      {nextPart("b", "--b\r\nContent-Disposition: form-data; name=\"f\"\r\n\r\n"+evil), "ends before its closing boundary"},
		"EmptyBoundary":  {nextPart("", "--\r\n"), "no boundary parameter"},
		"TooManyHeaders": {nextPart("b", "--b\r\n"+strings.Repeat("X-A: "+evil+"\r\n", 20000)+"\r\n\r\n--b--\r\n"), "too large"},
	} {
		require.Error(t, c.err, name)
		got := httpapi.MultipartDetail(c.err)
		require.Contains(t, got, c.want, "%s: %v", name, c.err)
		require.NotContains(t, got, "script", name)
		require.NotContains(t, got, "alert", name)
	}

	// A form parsed by net/http.
	for ct, want := range map[string]string{
		"multipart/form-data":             "no boundary parameter",
		"multipart/form-data; boundary=b": "a part's header is malformed",
	} {
		req := httptest.NewRequest(http.MethodPost, "/", bytes.NewBufferString("--b\r\n"+evil+"\r\n\r\nx\r\n--b--\r\n"))
		req.Header.Set("Content-Type", ct)
		err := req.ParseMultipartForm(1 << 20)
		require.Error(t, err, ct)
		require.Contains(t, httpapi.MultipartDetail(err), want, ct)
	}
	require.Equal(t, "the body could not be read", httpapi.MultipartDetail(errors.New("read tcp: connection reset by "+evil)))
}
