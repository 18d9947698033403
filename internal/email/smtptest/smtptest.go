// Package smtptest runs a real SMTP server (github.com/emersion/go-smtp)
// on a loopback port for tests: it records the messages it accepts and
// can offer STARTTLS or implicit TLS, require AUTH PLAIN, refuse
// recipients and delay its reply to a message.
package smtptest

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	smtp "github.com/emersion/go-smtp"
)

// Message is one message as the server accepted it.
type Message struct {
	From string
	Rcpt []string
	Data []byte
	// TLS is whether the session ran over TLS (STARTTLS or implicit).
	TLS bool
	// User is the authenticated user ("" without AUTH).
	User string
}

// Options configure the server; the zero value is plain SMTP without
// authentication.
type Options struct {
	// TLS, when set, is offered with STARTTLS, or spoken from the first
	// byte when Implicit is set.
	TLS      *tls.Config
	Implicit bool
	// Users, when set, are the accounts (name to password) of AUTH PLAIN,
	// which every message then needs. go-smtp offers AUTH over TLS only.
	Users map[string]string
	// AuthErr, when set, is the reply to every AUTH attempt.
	AuthErr *smtp.SMTPError
	// ReplyDelay is how long the server waits, after recording a message,
	// before it answers the end of its DATA.
	ReplyDelay time.Duration
}

// Server is a running test SMTP server.
type Server struct {
	// Addr is the server's host:port on 127.0.0.1.
	Addr string
	opts Options

	mu       sync.Mutex
	msgs     []Message
	rcptErr  *smtp.SMTPError
	rcptLeft int // > 0: how many more RCPT TO get rcptErr
}

// Start starts a server that is closed when the test ends.
func Start(t testing.TB, o Options) *Server {
	t.Helper()
	srv := &Server{opts: o}
	s := smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) {
		_, isTLS := c.TLSConnectionState()
		base := &session{srv: srv, cur: Message{TLS: isTLS}}
		if o.Users != nil || o.AuthErr != nil {
			return &authSession{session: base}, nil
		}
		return base, nil
	}))
	s.Domain = "localhost"
	var lc net.ListenConfig
	l, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("smtptest: listen: %v", err)
	}
	if o.TLS != nil {
		s.TLSConfig = o.TLS
		if o.Implicit {
			l = tls.NewListener(l, o.TLS)
		}
	}
	srv.Addr = l.Addr().String()
	go func() { _ = s.Serve(l) }()
	t.Cleanup(func() { _ = s.Close() })
	return srv
}

// Messages returns the messages accepted so far.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.msgs...)
}

// FailRcpt answers the next times RCPT TO commands with err (every one
// when times is 0); a nil err accepts them again.
func (s *Server) FailRcpt(err *smtp.SMTPError, times int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rcptErr, s.rcptLeft = err, times
}

type session struct {
	srv  *Server
	cur  Message
	user string
}

func (s *session) needAuth() error {
	if s.srv.opts.Users != nil && s.user == "" {
		return smtp.ErrAuthRequired
	}
	return nil
}

func (s *session) Mail(from string, _ *smtp.MailOptions) error {
	if err := s.needAuth(); err != nil {
		return err
	}
	s.cur.From = from
	return nil
}

func (s *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	if err := s.needAuth(); err != nil {
		return err
	}
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
	m := s.cur
	m.Data, m.User = b, s.user
	s.srv.mu.Lock()
	s.srv.msgs = append(s.srv.msgs, m)
	s.srv.mu.Unlock()
	time.Sleep(s.srv.opts.ReplyDelay)
	return nil
}

func (s *session) Reset()        { s.cur = Message{TLS: s.cur.TLS} }
func (s *session) Logout() error { return nil }

// authSession is a session offering AUTH PLAIN.
type authSession struct{ *session }

func (s *authSession) AuthMechanisms() []string { return []string{sasl.Plain} }

func (s *authSession) Auth(mech string) (sasl.Server, error) {
	if mech != sasl.Plain {
		return nil, errors.New("unsupported mechanism")
	}
	return sasl.NewPlainServer(func(identity, username, password string) error {
		if e := s.srv.opts.AuthErr; e != nil {
			return e
		}
		if want, ok := s.srv.opts.Users[username]; !ok || want != password || (identity != "" && identity != username) {
			return smtp.ErrAuthFailed
		}
		s.user = username
		return nil
	}), nil
}
