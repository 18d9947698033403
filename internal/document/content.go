package document

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/graphmill/graphmill/internal/errs"
)

// Content is the bytes of an upload that is not held as Upload.Data: read
// at any offset (format detection) and streamed once to storage, with its
// size and SHA-256 known beforehand.
type Content interface {
	io.ReaderAt
	Size() int64
	SHA256() [sha256.Size]byte
}

// ErrTooLarge reports an upload over the configured limit.
var ErrTooLarge = errs.New(errs.PayloadTooLarge, "the document exceeds the upload limit")

// Spool is an upload written to a temporary file while it was read and
// hashed, so that a large upload is never held in memory. Close removes
// the file.
type Spool struct {
	f    *os.File
	size int64
	sum  [sha256.Size]byte
}

// spoolBuffer is the copy buffer of NewSpool.
const spoolBuffer = 64 << 10

// ErrSpool wraps a failure of the spool file itself (the directory is
// missing or full): the server's fault, not the request's.
var ErrSpool = errors.New("upload spool")

// NewSpool copies r into a new file in dir (the system's temporary
// directory when empty), hashing it on the way. More than max bytes is
// ErrTooLarge; a read error is returned as it is; a failure of the file
// wraps ErrSpool. On error nothing is left behind.
func NewSpool(dir string, r io.Reader, maxBytes int64) (*Spool, error) {
	f, err := os.CreateTemp(dir, "graphmill-upload-*")
	if err != nil {
		return nil, fmt.Errorf("%w: create file: %w", ErrSpool, err)
	}
	s := &Spool{f: f}
	h := sha256.New()
	src := &readErrs{r: io.LimitReader(r, maxBytes+1)}
	n, err := io.CopyBuffer(io.MultiWriter(f, h), src, make([]byte, spoolBuffer))
	switch {
	case err == nil && n > maxBytes:
		err = ErrTooLarge
	case err != nil && src.err == nil:
		err = fmt.Errorf("%w: write file: %w", ErrSpool, err)
	}
	if err != nil {
		_ = s.Close()
		return nil, err
	}
	s.size = n
	h.Sum(s.sum[:0])
	return s, nil
}

// readErrs remembers the error its reader returned, so that a copy's
// error can be told apart from the writer's.
type readErrs struct {
	r   io.Reader
	err error
}

func (r *readErrs) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		r.err = err
	}
	return n, err
}

// CheckSpoolDir reports whether uploads can be spooled in dir (the
// system's temporary directory when empty), by creating and removing a
// file there: start-up calls it so that a missing or read-only directory
// stops the server instead of failing every upload.
func CheckSpoolDir(dir string) error {
	f, err := os.CreateTemp(dir, "graphmill-upload-check-*")
	if err != nil {
		return fmt.Errorf("upload spool directory %q (GRAPHMILL_UPLOAD_SPOOL_DIR): %w", dir, err)
	}
	return errors.Join(f.Close(), os.Remove(f.Name()))
}

// ReadAt implements io.ReaderAt.
func (s *Spool) ReadAt(p []byte, off int64) (int, error) { return s.f.ReadAt(p, off) }

// Size is the number of bytes spooled.
func (s *Spool) Size() int64 { return s.size }

// SHA256 is the checksum of the bytes spooled.
func (s *Spool) SHA256() [sha256.Size]byte { return s.sum }

// Close removes the file.
func (s *Spool) Close() error {
	return errors.Join(s.f.Close(), os.Remove(s.f.Name()))
}

// stringContent is content held in a string (a decoded JSON upload), read
// without copying it.
type stringContent struct {
	*strings.Reader
	sum [sha256.Size]byte
}

// StringContent returns s as Content. It hashes s in slices, so that the
// string is never copied whole.
func StringContent(s string) Content {
	h := sha256.New()
	buf := make([]byte, spoolBuffer)
	for i := 0; i < len(s); i += len(buf) {
		n := copy(buf, s[i:])
		h.Write(buf[:n])
	}
	c := stringContent{Reader: strings.NewReader(s)}
	h.Sum(c.sum[:0])
	return c
}

// SHA256 implements Content.
func (c stringContent) SHA256() [sha256.Size]byte { return c.sum }

// bytesContent is Upload.Data as Content.
type bytesContent []byte

func (b bytesContent) ReadAt(p []byte, off int64) (int, error) {
	if off >= int64(len(b)) {
		return 0, io.EOF
	}
	n := copy(p, b[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (b bytesContent) Size() int64 { return int64(len(b)) }

func (b bytesContent) SHA256() [sha256.Size]byte { return sha256.Sum256(b) }
