package email

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	htmltemplate "html/template"
	"io/fs"
	"strings"
	texttemplate "text/template"
)

//go:embed templates/*.tmpl
var templateFS embed.FS

// Template names.
const (
	TemplateInvitation = "invitation"
	// TemplateNotification is an important notification (internal/notification).
	TemplateNotification = "notification"
	// TemplateDigest is the daily digest of unread notifications.
	TemplateDigest = "digest"
)

// Rendered is the body of one message: both parts are always present.
type Rendered struct {
	HTML string
	Text string
}

// Templates renders the templates built into the binary: NAME.html.tmpl
// with html/template (values escaped for HTML) and NAME.txt.tmpl with
// text/template.
type Templates struct {
	html map[string]*htmltemplate.Template
	text map[string]*texttemplate.Template
}

// NewTemplates parses the built-in templates; every name has both parts.
func NewTemplates() (*Templates, error) {
	t := &Templates{html: map[string]*htmltemplate.Template{}, text: map[string]*texttemplate.Template{}}
	files, err := fs.Glob(templateFS, "templates/*.tmpl")
	if err != nil {
		return nil, fmt.Errorf("list email templates: %w", err)
	}
	for _, f := range files {
		src, err := templateFS.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("read email template %s: %w", f, err)
		}
		base := strings.TrimSuffix(strings.TrimPrefix(f, "templates/"), ".tmpl")
		switch name, kind, _ := strings.Cut(base, "."); kind {
		case "html":
			p, err := htmltemplate.New(name).Option("missingkey=error").Parse(string(src))
			if err != nil {
				return nil, fmt.Errorf("parse email template %s: %w", f, err)
			}
			t.html[name] = p
		case "txt":
			p, err := texttemplate.New(name).Option("missingkey=error").Parse(string(src))
			if err != nil {
				return nil, fmt.Errorf("parse email template %s: %w", f, err)
			}
			t.text[name] = p
		default:
			return nil, fmt.Errorf("email template %s: want NAME.html.tmpl or NAME.txt.tmpl", f)
		}
	}
	for name := range t.html {
		if t.text[name] == nil {
			return nil, fmt.Errorf("email template %s has no text part", name)
		}
	}
	for name := range t.text {
		if t.html[name] == nil {
			return nil, fmt.Errorf("email template %s has no HTML part", name)
		}
	}
	return t, nil
}

// Has reports whether name is a built-in template.
func (t *Templates) Has(name string) bool { return t.html[name] != nil }

// Render renders template name with data, a JSON object as the job row
// stores it. A missing key is an error, not an empty string.
func (t *Templates) Render(name string, data json.RawMessage) (Rendered, error) {
	h, x := t.html[name], t.text[name]
	if h == nil {
		return Rendered{}, fmt.Errorf("unknown email template %q", name)
	}
	var v map[string]any
	if err := json.Unmarshal(data, &v); err != nil {
		return Rendered{}, fmt.Errorf("email template %s: data is not a JSON object: %w", name, err)
	}
	var hb, tb bytes.Buffer
	if err := h.Execute(&hb, v); err != nil {
		return Rendered{}, fmt.Errorf("render email template %s (HTML): %w", name, err)
	}
	if err := x.Execute(&tb, v); err != nil {
		return Rendered{}, fmt.Errorf("render email template %s (text): %w", name, err)
	}
	return Rendered{HTML: hb.String(), Text: tb.String()}, nil
}
