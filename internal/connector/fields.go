package connector

import (
	"net/url"
	"strings"

	"github.com/graphmill/graphmill/internal/errs"
)

// ParseHTTPURL parses raw, the value of the config field field, as an
// http or https URL with a host and without credentials. Errors are
// errs.Invalid naming the field.
func ParseHTTPURL(field, raw string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return nil, errs.Errorf(errs.Invalid, "%s is not a valid URL", field)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, errs.Errorf(errs.Invalid, "%s must be an http or https URL", field)
	}
	if u.Hostname() == "" {
		return nil, errs.Errorf(errs.Invalid, "%s has no host", field)
	}
	if u.User != nil {
		return nil, errs.Errorf(errs.Invalid, "%s must not contain credentials", field)
	}
	return u, nil
}

// IntBetween returns the integer field name, def when it is absent or
// null. Errors: errs.Invalid naming the field when it is not an integer
// from lo to hi.
func (c Config) IntBetween(name string, def, lo, hi int) (int, error) {
	raw, ok := c[name]
	if !ok || string(raw) == "null" {
		return def, nil
	}
	const unset = -1 << 62
	n := c.Int(name, unset)
	if n == unset || n < lo || n > hi {
		return 0, errs.Errorf(errs.Invalid, "%s must be an integer from %d to %d", name, lo, hi)
	}
	return n, nil
}
