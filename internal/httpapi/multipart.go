package httpapi

import (
	"errors"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"strings"
)

// MultipartDetail says why a multipart body does not parse, for a 400's
// detail, without repeating any of it: mime/multipart's errors quote the
// offending line (a part's header line, a stray line where a boundary
// belongs), text the client chose.
func MultipartDetail(err error) string {
	var header textproto.ProtocolError
	switch {
	case errors.As(err, &header):
		return "a part's header is malformed (each header line is Name: value, then an empty line)"
	case errors.Is(err, multipart.ErrMessageTooLarge):
		return "the part headers are too large or too many"
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "the body ends before its closing boundary"
	case errors.Is(err, http.ErrMissingBoundary), strings.HasPrefix(err.Error(), "multipart: boundary is empty"):
		return "the Content-Type has no boundary parameter"
	case strings.HasPrefix(err.Error(), "multipart:"):
		return "the parts are not delimited by the boundary the Content-Type names"
	}
	return "the body could not be read"
}
