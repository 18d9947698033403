package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/url"
	"slices"
	"strings"

	"github.com/graphmill/graphmill/internal/connector"
	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/postgres"
)

// The domain's own config fields, taken by every integration: they are
// stored in columns (the scheduler and the deletion guard read them
// without opening the sealed config) and shown in the config.
const (
	FieldSyncInterval      = "sync_interval_minutes"
	FieldMaxDeleteFraction = "max_delete_fraction"
)

// maskSuffix ends a masked secret.
const maskSuffix = "***"

// settings are the domain fields of a config.
type settings struct {
	SyncInterval      *int
	MaxDeleteFraction float64
}

// fieldsOf lists a descriptor's fields, required first.
func fieldsOf(d connector.Descriptor) []connector.Field {
	return slices.Concat(d.RequiredFields, d.OptionalFields)
}

// checkConfig checks cfg against d: every required field present and not
// empty, no unknown field, each value of its field's type. It takes the
// domain fields out of cfg and returns them. Errors: invalid_argument
// naming the field.
func checkConfig(d connector.Descriptor, cfg connector.Config) (settings, error) {
	st := settings{MaxDeleteFraction: MaxDeleteFractionDefault}
	if raw, ok := cfg[FieldSyncInterval]; ok {
		n, err := integerOf(raw)
		if err != nil || n < SyncIntervalMin || n > SyncIntervalMax {
			return st, errs.Errorf(errs.Invalid, "config field %s must be an integer from %d to %d (minutes)", FieldSyncInterval, SyncIntervalMin, SyncIntervalMax)
		}
		st.SyncInterval = &n
		delete(cfg, FieldSyncInterval)
	}
	if raw, ok := cfg[FieldMaxDeleteFraction]; ok {
		var f float64
		if err := json.Unmarshal(raw, &f); err != nil || !(f > 0 && f <= 1) {
			return st, errs.Errorf(errs.Invalid, "config field %s must be a number greater than 0 and at most 1", FieldMaxDeleteFraction)
		}
		st.MaxDeleteFraction = f
		delete(cfg, FieldMaxDeleteFraction)
	}
	known := map[string]connector.Field{}
	for _, f := range fieldsOf(d) {
		known[f.Name] = f
	}
	for _, name := range slices.Sorted(maps.Keys(cfg)) {
		f, ok := known[name]
		if !ok {
			return st, errs.Errorf(errs.Invalid, "config field %q is not a field of %s", name, d.Name)
		}
		if err := checkType(f, cfg[name]); err != nil {
			return st, err
		}
	}
	for _, f := range d.RequiredFields {
		raw, ok := cfg[f.Name]
		if !ok || empty(raw) {
			return st, errs.Errorf(errs.Invalid, "config field %s is required for %s", f.Name, d.Name)
		}
	}
	return st, nil
}

// empty reports a JSON null, "" or [].
func empty(raw json.RawMessage) bool {
	s := string(bytes.TrimSpace(raw))
	return s == "null" || s == `""` || s == "[]"
}

func integerOf(raw json.RawMessage) (int, error) {
	var f float64
	if err := json.Unmarshal(raw, &f); err != nil {
		return 0, err
	}
	if f != math.Trunc(f) || math.Abs(f) > math.MaxInt32 {
		return 0, fmt.Errorf("not an integer")
	}
	return int(f), nil
}

// checkType checks one value against its field's type.
func checkType(f connector.Field, raw json.RawMessage) error {
	bad := func(what string) error {
		return errs.Errorf(errs.Invalid, "config field %s must be %s", f.Name, what)
	}
	if string(bytes.TrimSpace(raw)) == "null" {
		return bad("set (not null)")
	}
	switch f.Type {
	case connector.TypeString:
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return bad("a string")
		}
	case connector.TypeURL:
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return bad("a URL string")
		}
		if s != "" && !absoluteURL(s) {
			return bad("an absolute URL (scheme and host)")
		}
	case connector.TypeArray:
		var ss []string
		if json.Unmarshal(raw, &ss) != nil {
			return bad("an array of strings")
		}
	case connector.TypeInteger:
		if _, err := integerOf(raw); err != nil {
			return bad(fmt.Sprintf("an integer from %d to %d", -math.MaxInt32, math.MaxInt32))
		}
	case connector.TypeBoolean:
		var b bool
		if json.Unmarshal(raw, &b) != nil {
			return bad("a boolean")
		}
	default:
		return fmt.Errorf("connector field %s has the unknown type %q", f.Name, f.Type)
	}
	return nil
}

func absoluteURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && u.Scheme != "" && u.Host != ""
}

// mask hides a secret: its first four characters and "***" when it is
// long enough that they do not give it away, else "***" alone.
func mask(secret string) string {
	r := []rune(secret)
	if len(r) <= 8 {
		return maskSuffix
	}
	return string(r[:4]) + maskSuffix
}

// secretValues are the secret strings of cfg under d, for redaction.
func secretValues(d connector.Descriptor, cfg connector.Config) []string {
	var out []string
	for _, f := range fieldsOf(d) {
		if f.Secret {
			if v := cfg.String(f.Name); v != "" {
				out = append(out, v)
			}
		}
	}
	return out
}

// redact replaces every secret of cfg in s, cleaned (postgres.Text).
func redact(s string, secrets []string) string {
	// Cleaned first: a secret split by a NUL would be whole once the NUL
	// is dropped where the text is stored.
	s = postgres.Text(s)
	for _, v := range secrets {
		if len(v) >= 3 {
			s = strings.ReplaceAll(s, v, maskSuffix)
		}
	}
	return s
}

// view is cfg as the full view shows it: secrets masked, the domain
// fields added.
func view(d connector.Descriptor, cfg connector.Config, st settings) map[string]any {
	out := map[string]any{}
	secret := map[string]bool{}
	for _, f := range fieldsOf(d) {
		secret[f.Name] = f.Secret
	}
	for k, raw := range cfg {
		if secret[k] {
			out[k] = mask(cfg.String(k))
			continue
		}
		out[k] = raw
	}
	if st.SyncInterval != nil {
		out[FieldSyncInterval] = *st.SyncInterval
	}
	out[FieldMaxDeleteFraction] = st.MaxDeleteFraction
	return out
}

// mergeSecrets prepares a config replacing stored: a secret sent back
// masked (as the full view showed it) keeps the stored secret; and when a
// target field (where credentials are sent) changes, every secret must be
// given again, unmasked, in the same request, so that a stored credential
// never goes to a new host. Errors: invalid_argument.
func mergeSecrets(d connector.Descriptor, stored, next connector.Config) error {
	var changedTarget string
	for _, f := range fieldsOf(d) {
		if f.Target && !sameJSON(stored[f.Name], next[f.Name]) {
			changedTarget = f.Name
			break
		}
	}
	for _, f := range fieldsOf(d) {
		if !f.Secret {
			continue
		}
		old := stored.String(f.Name)
		raw, given := next[f.Name]
		if !given || old == "" {
			continue
		}
		var v string
		if json.Unmarshal(raw, &v) != nil || v != mask(old) {
			continue // a new value
		}
		if changedTarget != "" {
			return errs.Errorf(errs.Invalid, "changing config field %s requires %s again in the same request", changedTarget, f.Name)
		}
		next[f.Name] = stored[f.Name]
	}
	return nil
}

// sameJSON compares two JSON values by meaning (absent equals absent).
func sameJSON(a, b json.RawMessage) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return bytes.Equal(xb, yb)
}
