// Package smtptest runs a real SMTP server (emersion/go-smtp) on a
// loopback port for tests, recording the messages it receives.
package smtptest

import (
	"crypto/tls"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"strings"
	"sync"
	"testing"

	smtp "github.com/emersion/go-smtp"
	"github.com/stretchr/testify/require"
)

// Received is one message as the server got it.
type Received struct {
	From string
	Rcpt []string
	Data []byte
	TLS  bool
}

// Server is a running test SMTP server.
type Server struct {
	// Addr is the server's host:port.
	Addr string

	mu       sync.Mutex
	msgs     []Received
	rcptErr  *smtp.SMTPError
	rcptLeft int // RCPT TO answered with rcptErr before it is cleared (0: until cleared)
}

type session struct {
	srv *Server
	cur Received
}

func (s *session) Mail(from string, _ *smtp.MailOptions) error { s.cur.From = from; return nil }

func (s *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	s.srv.mu.Lock()
	defer s.srv.mu.Unlock()
	if err := s.srv.rcptErr; err != nil {
		if s.srv.rcptLeft > 0 {
			s.srv.rcptLeft--
			if s.srv.rcptLeft == 0 {
				s.srv.rcptErr = nil
			}
		}
		return err
	}
	s.cur.Rcpt = append(s.cur.Rcpt, to)
	return nil
}

func (s *session) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s.cur.Data = b
	s.srv.mu.Lock()
	s.srv.msgs = append(s.srv.msgs, s.cur)
	s.srv.mu.Unlock()
	return nil
}

func (s *session) Reset()        { s.cur = Received{TLS: s.cur.TLS} }
func (s *session) Logout() error { return nil }

// Start starts a server that offers STARTTLS with cert when cert is set
// (or speaks TLS from the first byte when implicit is also set), and stops
// it when the test ends.
func Start(t testing.TB, cert *tls.Certificate, implicit bool) *Server {
	t.Helper()
	srv := &Server{}
	s := smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) {
		_, isTLS := c.TLSConnectionState()
		return &session{srv: srv, cur: Received{TLS: isTLS}}, nil
	}))
	s.Domain = "localhost"
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	if cert != nil {
		s.TLSConfig = &tls.Config{Certificates: []tls.Certificate{*cert}, MinVersion: tls.VersionTLS12}
		if implicit {
			l = tls.NewListener(l, s.TLSConfig)
		}
	}
	srv.Addr = l.Addr().String()
	go func() { _ = s.Serve(l) }()
	t.Cleanup(func() { _ = s.Close() })
	return srv
}

// FailRcpt answers the next times RCPT TO commands with err (every one
// until the next call when times is 0); a nil err clears it.
func (s *Server) FailRcpt(err *smtp.SMTPError, times int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rcptErr, s.rcptLeft = err, times
}

// Messages returns the messages received so far.
func (s *Server) Messages() []Received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Received(nil), s.msgs...)
}

// Parts reads a multipart/alternative message body: content type to
// decoded content.
func Parts(t testing.TB, m *mail.Message) map[string]string {
	t.Helper()
	mt, params, err := mime.ParseMediaType(m.Header.Get("Content-Type"))
	require.NoError(t, err)
	require.Equal(t, "multipart/alternative", mt)
	out := map[string]string{}
	r := multipart.NewReader(m.Body, params["boundary"])
	for {
		p, err := r.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		ct, _, err := mime.ParseMediaType(p.Header.Get("Content-Type"))
		require.NoError(t, err)
		var body io.Reader = p
		if strings.EqualFold(p.Header.Get("Content-Transfer-Encoding"), "quoted-printable") {
			body = quotedprintable.NewReader(p)
		}
		b, err := io.ReadAll(body)
		require.NoError(t, err)
		out[ct] = string(b)
	}
	return out
}
