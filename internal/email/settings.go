// Package email sends Graphmill's email: the SMTP settings
// (GRAPHMILL_SMTP_URL, GRAPHMILL_EMAIL_FROM), the templates built into the
// binary and the sender that delivers one message over SMTP.
package email

import (
	"fmt"
	"net"
	"net/mail"
	"net/url"
	"strconv"
	"strings"
)

// Default ports per scheme.
const (
	portSubmission = 587
	portSMTPS      = 465
)

// Settings is a parsed GRAPHMILL_SMTP_URL with GRAPHMILL_EMAIL_FROM.
type Settings struct {
	// Host and Port locate the SMTP server.
	Host string
	Port int
	// ImplicitTLS is smtps://: TLS from the first byte. Otherwise STARTTLS
	// is required, except to a loopback host that does not offer it.
	ImplicitTLS bool
	// Username and Password authenticate when Username is not empty.
	Username string
	Password string
	// From is the sender of every message.
	From mail.Address
}

// ParseSettings reads the SMTP URL (smtp://user:pass@host:587 or
// smtps://user:pass@host:465) and the sender address. Both empty means
// email is off (ok false, no error); one without the other is an error.
func ParseSettings(smtpURL, from string) (s Settings, ok bool, err error) {
	if smtpURL == "" && from == "" {
		return Settings{}, false, nil
	}
	if smtpURL == "" || from == "" {
		return Settings{}, false, fmt.Errorf("GRAPHMILL_SMTP_URL and GRAPHMILL_EMAIL_FROM must be set together")
	}
	u, err := url.Parse(smtpURL)
	if err != nil {
		// url.Parse's error repeats the URL, password included.
		return Settings{}, false, fmt.Errorf("GRAPHMILL_SMTP_URL is not a URL")
	}
	switch u.Scheme {
	case "smtp":
		s.Port = portSubmission
	case "smtps":
		s.ImplicitTLS = true
		s.Port = portSMTPS
	default:
		return Settings{}, false, fmt.Errorf("GRAPHMILL_SMTP_URL must be smtp://host[:port] or smtps://host[:port]")
	}
	s.Host = u.Hostname()
	if s.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return Settings{}, false, fmt.Errorf("GRAPHMILL_SMTP_URL must be smtp://host[:port] or smtps://host[:port]")
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return Settings{}, false, fmt.Errorf("GRAPHMILL_SMTP_URL has an invalid port")
		}
		s.Port = n
	}
	if u.User != nil {
		s.Username = u.User.Username()
		s.Password, _ = u.User.Password()
	}
	a, err := ParseAddress(from)
	if err != nil {
		return Settings{}, false, fmt.Errorf("GRAPHMILL_EMAIL_FROM: %w", err)
	}
	s.From = a
	return s, true, nil
}

// ParseAddress validates one address ("a@example.com" or
// "Name <a@example.com>") with net/mail. Line breaks are refused anywhere,
// so that no header can be injected through a name.
func ParseAddress(s string) (mail.Address, error) {
	if strings.ContainsAny(s, "\r\n") {
		return mail.Address{}, fmt.Errorf("address %q contains a line break", s)
	}
	a, err := mail.ParseAddress(s)
	if err != nil {
		return mail.Address{}, fmt.Errorf("address %q: %w", s, err)
	}
	if strings.ContainsAny(a.Name, "\r\n") {
		return mail.Address{}, fmt.Errorf("address %q contains a line break", s)
	}
	return *a, nil
}

// Recipient validates a recipient given as a display name and a bare
// address (as a job row stores them): no line break in either, and an
// address net/mail accepts as exactly one addr-spec.
func Recipient(name, address string) (mail.Address, error) {
	if strings.ContainsAny(name, "\r\n") || strings.ContainsAny(address, "\r\n") {
		return mail.Address{}, fmt.Errorf("recipient contains a line break")
	}
	a, err := mail.ParseAddress(address)
	if err != nil || a.Address != address || a.Name != "" {
		return mail.Address{}, fmt.Errorf("recipient %q is not an email address", address)
	}
	return mail.Address{Name: name, Address: address}, nil
}

// loopback reports whether host is a loopback name or address, where plain
// SMTP is accepted when the server offers no STARTTLS. The name is not
// resolved: only localhost and literal loopback addresses count.
func loopback(host string) bool {
	if strings.EqualFold(strings.TrimSuffix(host, "."), "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
