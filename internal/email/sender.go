package email

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/mail"
	"net/textproto"
	"strings"
	"time"

	"github.com/google/uuid"
	gomail "github.com/wneessen/go-mail"

	"github.com/graphmill/graphmill/internal/jobqueue"
)

// Message is one email to send: both body parts are required.
type Message struct {
	// ID, when set, makes the Message-ID <ID@the sender's domain>: the
	// email job's id, the same at every attempt, so that a receiver can
	// de-duplicate a message sent again (delivery is at least once).
	// Zero: a random Message-ID.
	ID      uuid.UUID
	To      mail.Address
	Subject string
	Body    Rendered
}

// Sender delivers messages over SMTP, one connection per message.
type Sender struct {
	settings Settings
	tls      *tls.Config
	timeout  time.Duration
	// dial, when set, opens the connection instead of go-mail's dialer
	// (tests reach a local server under a remote host name).
	dial gomail.DialContextFunc
}

// NewSender returns a sender for settings. tlsConfig verifies the server
// (nil: the system's roots and the server's host name).
func NewSender(settings Settings, tlsConfig *tls.Config) *Sender {
	if tlsConfig == nil {
		tlsConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	} else {
		tlsConfig = tlsConfig.Clone()
	}
	if tlsConfig.ServerName == "" {
		tlsConfig.ServerName = settings.Host
	}
	return &Sender{settings: settings, tls: tlsConfig, timeout: 30 * time.Second}
}

// tlsPolicy is STARTTLS required, except to a loopback host, where plain
// SMTP is accepted when the server offers no STARTTLS (and STARTTLS is
// still used when it does).
func tlsPolicy(host string) gomail.TLSPolicy {
	if loopback(host) {
		return gomail.TLSOpportunistic
	}
	return gomail.TLSMandatory
}

// Send delivers m. An SMTP reply 5xx is returned marked
// jobqueue.Permanent (the job fails at once, the server's reply in its
// error); a 4xx reply, a connection or TLS error is returned as is, to be
// retried with backoff.
func (s *Sender) Send(ctx context.Context, m Message) error {
	msg, err := s.build(m)
	if err != nil {
		return jobqueue.Permanent(err)
	}
	opts := []gomail.Option{
		gomail.WithPort(s.settings.Port),
		gomail.WithTLSConfig(s.tls),
		gomail.WithTLSPolicy(tlsPolicy(s.settings.Host)),
		gomail.WithTimeout(s.timeout),
	}
	if s.settings.ImplicitTLS {
		opts = append(opts, gomail.WithSSL())
	}
	if s.dial != nil {
		opts = append(opts, gomail.WithDialContextFunc(s.dial))
	}
	if s.settings.Username != "" {
		opts = append(opts, gomail.WithSMTPAuth(gomail.SMTPAuthAutoDiscover),
			gomail.WithUsername(s.settings.Username), gomail.WithPassword(s.settings.Password))
	}
	c, err := gomail.NewClient(s.settings.Host, opts...)
	if err != nil {
		return jobqueue.Permanent(fmt.Errorf("smtp client: %w", err))
	}
	if err := c.DialAndSendWithContext(ctx, msg); err != nil {
		err = fmt.Errorf("send email to %s: %w", m.To.Address, err)
		if code := ReplyCode(err); code >= 500 && code < 600 {
			return jobqueue.Permanent(err)
		}
		return err
	}
	return nil
}

// build checks m and turns it into a MIME message: multipart/alternative
// with the text part first and the HTML part second.
func (s *Sender) build(m Message) (*gomail.Msg, error) {
	if strings.ContainsAny(m.Subject, "\r\n") {
		return nil, fmt.Errorf("email subject contains a line break")
	}
	if m.Subject == "" || m.Body.HTML == "" || m.Body.Text == "" {
		return nil, fmt.Errorf("email needs a subject and both body parts")
	}
	to, err := Recipient(m.To.Name, m.To.Address)
	if err != nil {
		return nil, err
	}
	msg := gomail.NewMsg()
	if err := msg.FromFormat(s.settings.From.Name, s.settings.From.Address); err != nil {
		return nil, fmt.Errorf("sender: %w", err)
	}
	if err := msg.AddToFormat(to.Name, to.Address); err != nil {
		return nil, fmt.Errorf("recipient: %w", err)
	}
	msg.Subject(m.Subject)
	if m.ID == uuid.Nil {
		msg.SetMessageID()
	} else {
		_, domain, _ := strings.Cut(s.settings.From.Address, "@")
		msg.SetMessageIDWithValue(m.ID.String() + "@" + domain)
	}
	msg.SetDate()
	msg.SetBodyString(gomail.TypeTextPlain, m.Body.Text)
	msg.AddAlternativeString(gomail.TypeTextHTML, m.Body.HTML)
	return msg, nil
}

// ReplyCode returns the SMTP reply code carried by err (0 when it carries
// none, as for a connection error).
func ReplyCode(err error) int {
	var se *gomail.SendError
	if errors.As(err, &se) {
		if c := se.ErrorCode(); c != 0 {
			return c
		}
	}
	var te *textproto.Error
	if errors.As(err, &te) {
		return te.Code
	}
	return 0
}
