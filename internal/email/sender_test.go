package email

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net"
	"net/http"
	"net/http/httptest"
	"net/mail"
	"strings"
	"sync"
	"testing"

	smtp "github.com/emersion/go-smtp"
	"github.com/stretchr/testify/require"
	gomail "github.com/wneessen/go-mail"

	"github.com/graphmill/graphmill/internal/email/smtptest"
	"github.com/graphmill/graphmill/internal/jobqueue"
)

// testCert returns a certificate for 127.0.0.1 and a client TLS config
// trusting it.
func testCert(t *testing.T) (tls.Certificate, *tls.Config) {
	t.Helper()
	ts := httptest.NewTLSServer(http.NotFoundHandler())
	t.Cleanup(ts.Close)
	tr, ok := ts.Client().Transport.(*http.Transport)
	require.True(t, ok)
	return ts.TLS.Certificates[0], &tls.Config{RootCAs: tr.TLSClientConfig.RootCAs, MinVersion: tls.VersionTLS12}
}

// startSMTP starts a test server: offering STARTTLS with cert when it is
// set, speaking TLS from the first byte when implicit is set too.
func startSMTP(t *testing.T, cert *tls.Certificate, implicit bool) *smtptest.Server {
	t.Helper()
	o := smtptest.Options{Implicit: implicit}
	if cert != nil {
		o.TLS = &tls.Config{Certificates: []tls.Certificate{*cert}, MinVersion: tls.VersionTLS12}
	}
	return smtptest.Start(t, o)
}

func senderFor(t *testing.T, srv *smtptest.Server, scheme string, tlsConfig *tls.Config) *Sender {
	t.Helper()
	set, ok, err := ParseSettings(scheme+"://"+srv.Addr, "Graphmill <noreply@graphmill.test>")
	require.NoError(t, err)
	require.True(t, ok)
	return NewSender(set, tlsConfig)
}

func invitation(t *testing.T) Message {
	t.Helper()
	tpl, err := NewTemplates()
	require.NoError(t, err)
	body, err := tpl.Render(TemplateInvitation, json.RawMessage(`{"inviterName":"Ada <admin>","projectName":"Atlas & Co","role":"project_admin","link":"https://graphmill.test/invitations/accept?token=tok123","expiresAt":"2026-12-01"}`))
	require.NoError(t, err)
	return Message{To: mail.Address{Name: "Bob Example", Address: "bob@example.com"}, Subject: "You are invited to Atlas & Co", Body: body}
}

// parts reads the message's multipart/alternative body: content type to
// decoded content.
func parts(t *testing.T, m *mail.Message) map[string]string {
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

func TestSendPlainLoopback(t *testing.T) {
	t.Parallel()
	srv := startSMTP(t, nil, false)
	require.NoError(t, senderFor(t, srv, "smtp", nil).Send(context.Background(), invitation(t)))

	msgs := srv.Messages()
	require.Len(t, msgs, 1)
	require.False(t, msgs[0].TLS)
	require.Equal(t, "noreply@graphmill.test", msgs[0].From)
	require.Equal(t, []string{"bob@example.com"}, msgs[0].Rcpt)
	m, err := mail.ReadMessage(bytes.NewReader(msgs[0].Data))
	require.NoError(t, err)
	from, err := m.Header.AddressList("From")
	require.NoError(t, err)
	require.Equal(t, []*mail.Address{{Name: "Graphmill", Address: "noreply@graphmill.test"}}, from)
	to, err := m.Header.AddressList("To")
	require.NoError(t, err)
	require.Equal(t, []*mail.Address{{Name: "Bob Example", Address: "bob@example.com"}}, to)
	subject, err := new(mime.WordDecoder).DecodeHeader(m.Header.Get("Subject"))
	require.NoError(t, err)
	require.Equal(t, "You are invited to Atlas & Co", subject)
	require.NotEmpty(t, m.Header.Get("Message-ID"))
	require.NotEmpty(t, m.Header.Get("Date"))

	p := parts(t, m)
	require.Len(t, p, 2)
	require.Contains(t, p["text/plain"], "Accept the invitation: https://graphmill.test/invitations/accept?token=tok123")
	require.Contains(t, p["text/plain"], `Ada <admin> invited you to join the project "Atlas & Co"`)
	require.Contains(t, p["text/html"], `<a href="https://graphmill.test/invitations/accept?token=tok123">`)
	require.Contains(t, p["text/html"], "Ada &lt;admin&gt; invited you")
	require.Contains(t, p["text/html"], "<strong>Atlas &amp; Co</strong>")
}

func TestSendStartTLS(t *testing.T) {
	t.Parallel()
	cert, client := testCert(t)
	srv := startSMTP(t, &cert, false)
	require.NoError(t, senderFor(t, srv, "smtp", client).Send(context.Background(), invitation(t)))
	msgs := srv.Messages()
	require.Len(t, msgs, 1)
	require.True(t, msgs[0].TLS, "STARTTLS offered, so used even on loopback")
}

func TestSendStartTLSUntrusted(t *testing.T) {
	t.Parallel()
	cert, _ := testCert(t)
	srv := startSMTP(t, &cert, false)
	err := senderFor(t, srv, "smtp", nil).Send(context.Background(), invitation(t))
	require.Error(t, err)
	require.False(t, jobqueue.IsPermanent(err), "a TLS failure is retried")
	require.Empty(t, srv.Messages())
}

func TestSendImplicitTLS(t *testing.T) {
	t.Parallel()
	cert, client := testCert(t)
	srv := startSMTP(t, &cert, true)
	require.NoError(t, senderFor(t, srv, "smtps", client).Send(context.Background(), invitation(t)))
	msgs := srv.Messages()
	require.Len(t, msgs, 1)
	require.True(t, msgs[0].TLS)
}

func TestSendTemporaryReplyIsRetryable(t *testing.T) {
	t.Parallel()
	srv := startSMTP(t, nil, false)
	srv.FailRcpt(&smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "try again later"}, 0)
	err := senderFor(t, srv, "smtp", nil).Send(context.Background(), invitation(t))
	require.Error(t, err)
	require.False(t, jobqueue.IsPermanent(err))
	require.Equal(t, 451, ReplyCode(err))
	require.Contains(t, err.Error(), "try again later")

	srv.FailRcpt(nil, 0)
	require.NoError(t, senderFor(t, srv, "smtp", nil).Send(context.Background(), invitation(t)))
	require.Len(t, srv.Messages(), 1)
}

func TestSendPermanentReplyFails(t *testing.T) {
	t.Parallel()
	srv := startSMTP(t, nil, false)
	srv.FailRcpt(&smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "no such mailbox here"}, 0)
	err := senderFor(t, srv, "smtp", nil).Send(context.Background(), invitation(t))
	require.Error(t, err)
	require.True(t, jobqueue.IsPermanent(err))
	require.Equal(t, 550, ReplyCode(err))
	require.Contains(t, err.Error(), "no such mailbox here")
	require.Empty(t, srv.Messages())
}

func TestSendConnectionErrorIsRetryable(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	err = senderFor(t, &smtptest.Server{Addr: addr}, "smtp", nil).Send(context.Background(), invitation(t))
	require.Error(t, err)
	require.False(t, jobqueue.IsPermanent(err))
	require.Equal(t, 0, ReplyCode(err))
}

func TestSendRefusesHeaderInjection(t *testing.T) {
	t.Parallel()
	srv := startSMTP(t, nil, false)
	s := senderFor(t, srv, "smtp", nil)
	m := invitation(t)
	m.Subject = "hello\r\nBcc: victim@example.com"
	err := s.Send(context.Background(), m)
	require.Error(t, err)
	require.True(t, jobqueue.IsPermanent(err))

	m = invitation(t)
	m.To.Name = "Bob\r\nBcc: victim@example.com"
	err = s.Send(context.Background(), m)
	require.Error(t, err)
	require.True(t, jobqueue.IsPermanent(err))

	m = invitation(t)
	m.To.Address = "not an address"
	require.True(t, jobqueue.IsPermanent(s.Send(context.Background(), m)))
	require.Empty(t, srv.Messages())
}

func TestTLSPolicy(t *testing.T) {
	t.Parallel()
	require.Equal(t, gomail.TLSMandatory, tlsPolicy("smtp.example.com"))
	require.Equal(t, gomail.TLSMandatory, tlsPolicy("10.0.0.1"))
	require.Equal(t, gomail.TLSOpportunistic, tlsPolicy("localhost"))
	require.Equal(t, gomail.TLSOpportunistic, tlsPolicy("127.0.0.1"))
	require.Equal(t, gomail.TLSOpportunistic, tlsPolicy("::1"))
}

// senderURL is a sender for the SMTP URL u, trusting tlsConfig's roots.
func senderURL(t *testing.T, u string, tlsConfig *tls.Config) *Sender {
	t.Helper()
	set, ok, err := ParseSettings(u, "Graphmill <noreply@graphmill.test>")
	require.NoError(t, err)
	require.True(t, ok)
	return NewSender(set, tlsConfig)
}

// TestSendAuthPlainOverStartTLS: the credentials of the URL go with AUTH
// PLAIN after STARTTLS; the server checks them.
func TestSendAuthPlainOverStartTLS(t *testing.T) {
	t.Parallel()
	cert, client := testCert(t)
	srv := smtptest.Start(t, smtptest.Options{
		TLS:   &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		Users: map[string]string{"mailer": "s3cret p@ss"},
	})
	require.NoError(t, senderURL(t, "smtp://mailer:s3cret%20p%40ss@"+srv.Addr, client).Send(context.Background(), invitation(t)))
	msgs := srv.Messages()
	require.Len(t, msgs, 1)
	require.True(t, msgs[0].TLS)
	require.Equal(t, "mailer", msgs[0].User)
	require.Equal(t, []string{"bob@example.com"}, msgs[0].Rcpt)

	// Without credentials the server refuses the message.
	err := senderURL(t, "smtp://"+srv.Addr, client).Send(context.Background(), invitation(t))
	require.Error(t, err)
	require.Len(t, srv.Messages(), 1)
}

// TestSendAuthWrongPassword: a wrong password is answered 535 (5.7.8), a
// permanent reply: the job fails at once with the server's reply, nothing
// is sent. A temporary authentication failure (454) is retried.
func TestSendAuthWrongPassword(t *testing.T) {
	t.Parallel()
	cert, client := testCert(t)
	srvTLS := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	srv := smtptest.Start(t, smtptest.Options{TLS: srvTLS, Users: map[string]string{"mailer": "s3cret"}})
	err := senderURL(t, "smtp://mailer:wrong@"+srv.Addr, client).Send(context.Background(), invitation(t))
	require.Error(t, err)
	require.Equal(t, 535, ReplyCode(err))
	require.True(t, jobqueue.IsPermanent(err), "%v", err)
	require.NotContains(t, err.Error(), "wrong", "the password is not in the error")
	require.Empty(t, srv.Messages())

	busy := smtptest.Start(t, smtptest.Options{
		TLS: srvTLS, Users: map[string]string{"mailer": "s3cret"},
		AuthErr: &smtp.SMTPError{Code: 454, EnhancedCode: smtp.EnhancedCode{4, 7, 0}, Message: "temporary authentication failure"},
	})
	err = senderURL(t, "smtp://mailer:s3cret@"+busy.Addr, client).Send(context.Background(), invitation(t))
	require.Error(t, err)
	require.Equal(t, 454, ReplyCode(err))
	require.False(t, jobqueue.IsPermanent(err))
	require.Empty(t, busy.Messages())
}

// remoteSender is a sender for smtp://example.com:PORT (a host name that
// is not loopback, so STARTTLS is required) whose connections reach srv;
// dialled records the addresses go-mail asked for.
func remoteSender(t *testing.T, srv *smtptest.Server, client *tls.Config) (s *Sender, dialled func() []string) {
	t.Helper()
	_, port, err := net.SplitHostPort(srv.Addr)
	require.NoError(t, err)
	s = senderURL(t, "smtp://example.com:"+port, client)
	var mu sync.Mutex
	var addrs []string
	s.dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		mu.Lock()
		addrs = append(addrs, addr)
		mu.Unlock()
		var d net.Dialer
		return d.DialContext(ctx, network, srv.Addr)
	}
	return s, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), addrs...)
	}
}

// TestSendStartTLSRequiredToRemoteHost: to a host that is not loopback,
// a server without STARTTLS never receives the message; one offering it
// receives it over TLS (the certificate checked against the host name).
func TestSendStartTLSRequiredToRemoteHost(t *testing.T) {
	t.Parallel()
	cert, client := testCert(t)
	plain := smtptest.Start(t, smtptest.Options{})
	s, dialled := remoteSender(t, plain, client)
	err := s.Send(context.Background(), invitation(t))
	require.Error(t, err)
	require.False(t, jobqueue.IsPermanent(err), "retried: the server may offer STARTTLS later")
	require.Empty(t, plain.Messages())
	_, port, _ := net.SplitHostPort(plain.Addr)
	require.Equal(t, []string{"example.com:" + port}, dialled(), "the connection was to the remote name")

	secure := smtptest.Start(t, smtptest.Options{TLS: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}})
	s, _ = remoteSender(t, secure, client)
	require.NoError(t, s.Send(context.Background(), invitation(t)))
	msgs := secure.Messages()
	require.Len(t, msgs, 1)
	require.True(t, msgs[0].TLS)
}
