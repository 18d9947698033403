// Package gitrepo is the git connector: it syncs the files of a repository
// at one branch over smart HTTP, each stored as an upload of it would be
// (Markdown, HTML, PDF, DOCX and text files, whatever their name; binary
// files are skipped by the integration domain).
//
// The repository is kept as a shallow bare clone in the integration's cache
// directory. Each walk asks the server for the branch tip and fetches only
// what is missing, negotiating with the commit of the last successful sync
// (the connector's state), so an unchanged repository costs one ref
// advertisement and no pack. Every file of the tip's tree that the globs
// select is reported: Unchanged when the version stored by the last sync is
// its blob hash, Item with its content otherwise. A file removed at the
// source is not reported, so the integration domain deletes its document
// after the complete walk.
//
// All network traffic goes through Env.HTTP: the connector drives go-git's
// upload-pack session itself on a transport built from that client, instead
// of go-git's Clone/Fetch, which only reach transports through a
// process-wide protocol registry.
package gitrepo

import (
	"fmt"
	"net/url"
	"path"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/gitignore"

	"github.com/graphmill/graphmill/internal/connector"
	"github.com/graphmill/graphmill/internal/document"
	"github.com/graphmill/graphmill/internal/errs"
)

// Name is the provider type of the git connector.
const Name = "git"

// Config field names.
const (
	fieldURL     = "repository_url"
	fieldBranch  = "branch"
	fieldInclude = "include"
	fieldExclude = "exclude"
	fieldToken   = "access_token"
)

// tokenUser is the user name sent with the access token in HTTP basic
// auth. GitHub documents it; GitLab, Gitea and Bitbucket accept any name
// with a token as the password.
const tokenUser = "x-access-token"

// MaxFetchesDefault bounds the incremental fetches into one clone.
const MaxFetchesDefault = 100

// Connector is the git connector. The zero value is ready to use.
type Connector struct {
	// MaxFetches is how many fetches a cached clone takes before it is
	// made again from scratch (0: MaxFetchesDefault). Every incremental
	// fetch adds a shallow boundary and the objects that changed, and
	// nothing is ever pruned, so a fresh depth-1 clone now and then keeps
	// the cache the size of one snapshot.
	MaxFetches int
}

// New returns the git connector.
func New() *Connector { return &Connector{} }

var _ connector.Connector = (*Connector)(nil)

// Descriptor returns the available integration "git".
func (*Connector) Descriptor() connector.Descriptor {
	return connector.Descriptor{
		Name:        Name,
		DisplayName: "Git repository",
		Description: "Documents (Markdown, text, HTML, PDF, DOCX, as an upload detects them) of a git repository at one branch, " +
			"fetched over HTTP(S) as a shallow clone and synced incrementally by commit.",
		Category: "code",
		AuthType: "token",
		RequiredFields: []connector.Field{{
			Name:        fieldURL,
			Type:        connector.TypeURL,
			Description: "HTTP(S) clone URL of the repository, without credentials (https://host/owner/repo.git).",
			Target:      true,
		}},
		OptionalFields: []connector.Field{
			{
				Name:        fieldBranch,
				Type:        connector.TypeString,
				Description: "Branch to sync; the repository's default branch when empty.",
			},
			{
				Name: fieldInclude,
				Type: connector.TypeArray,
				Description: "gitignore-style globs of the paths to sync (docs/**, *.md, src/**/*.go); " +
					"when empty, the files named as documents (Markdown, text, HTML, PDF, DOCX, or no extension: README, LICENSE; " +
					"not build files as Makefile or Dockerfile, files under bin/ or executables).",
			},
			{
				Name:        fieldExclude,
				Type:        connector.TypeArray,
				Description: "gitignore-style globs of the paths to skip, applied after include.",
			},
			{
				Name:        fieldToken,
				Type:        connector.TypeString,
				Description: "Access token for a private repository, sent as the password of HTTP basic auth.",
				Secret:      true,
			},
		},
		DocumentationURL: "https://git-scm.com/book/en/v2/Git-on-the-Server-Smart-HTTP",
	}
}

// Validate checks the repository URL (http or https only, no credentials
// in it), the branch name and the globs. Errors are errs.Invalid naming the
// field.
func (*Connector) Validate(cfg connector.Config) error {
	_, err := parseSettings(cfg)
	return err
}

// settings is a validated config.
type settings struct {
	url     string
	host    string
	branch  string
	include []gitignore.Pattern
	exclude []gitignore.Pattern
	token   string
}

func parseSettings(cfg connector.Config) (settings, error) {
	var s settings
	raw := strings.TrimSpace(cfg.String(fieldURL))
	if raw == "" {
		return s, errs.Errorf(errs.Invalid, "%s is required", fieldURL)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return s, errs.Errorf(errs.Invalid, "%s is not a valid URL", fieldURL)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return s, errs.Errorf(errs.Invalid, "%s must be an http or https URL (file, ssh and git URLs are not allowed)", fieldURL)
	}
	if u.Host == "" || u.Hostname() == "" {
		return s, errs.Errorf(errs.Invalid, "%s has no host", fieldURL)
	}
	if u.User != nil {
		return s, errs.Errorf(errs.Invalid, "%s must not contain credentials: put the token in %s", fieldURL, fieldToken)
	}
	if u.Fragment != "" || u.RawQuery != "" {
		return s, errs.Errorf(errs.Invalid, "%s must not have a query or fragment", fieldURL)
	}
	s.url = u.String()
	s.host = u.Host

	s.branch = strings.TrimSpace(cfg.String(fieldBranch))
	if s.branch != "" {
		if err := plumbing.NewBranchReferenceName(s.branch).Validate(); err != nil {
			return s, errs.Errorf(errs.Invalid, "%s %q is not a valid branch name", fieldBranch, s.branch)
		}
	}
	if s.include, err = parseGlobs(fieldInclude, cfg.Strings(fieldInclude)); err != nil {
		return s, err
	}
	if s.exclude, err = parseGlobs(fieldExclude, cfg.Strings(fieldExclude)); err != nil {
		return s, err
	}
	s.token = cfg.String(fieldToken)
	if strings.ContainsAny(s.token, "\r\n") {
		return s, errs.Errorf(errs.Invalid, "%s must be a single line", fieldToken)
	}
	return s, nil
}

// parseGlobs checks and compiles gitignore-style globs: every path segment
// must be a valid path.Match pattern, and negation ("!") is refused
// (exclude says what to skip).
func parseGlobs(field string, globs []string) ([]gitignore.Pattern, error) {
	patterns := make([]gitignore.Pattern, 0, len(globs))
	for _, g := range globs {
		g = strings.TrimSpace(g)
		if g == "" || g == "/" {
			return nil, errs.Errorf(errs.Invalid, "%s has an empty glob", field)
		}
		if strings.HasPrefix(g, "!") {
			return nil, errs.Errorf(errs.Invalid, "%s glob %q: negation is not supported, use %s", field, g, fieldExclude)
		}
		for seg := range strings.SplitSeq(strings.Trim(g, "/"), "/") {
			if seg == "**" {
				continue
			}
			if _, err := path.Match(seg, ""); err != nil {
				return nil, errs.Errorf(errs.Invalid, "%s glob %q is malformed", field, g)
			}
		}
		patterns = append(patterns, gitignore.ParsePattern(g, nil))
	}
	return patterns, nil
}

// selects reports whether the file at p, of tree mode mode, is one the
// connector offers: matched by an include glob and by no exclude glob;
// without include globs, a file named as a document
// (document.NamedAsDocument: Markdown, text, HTML, PDF or DOCX by its
// extension, or no extension and no program or build file, as README
// and LICENSE but not Makefile, bin/setup or an executable), so that a
// repository's source code is not extracted, at a model's cost, unless
// include names it. Whether an offered file is a document is decided as
// for an upload (document.PutSourced: format from the extension, else the
// content): a binary one is skipped with the reason in the sync log.
func (s settings) selects(p string, mode filemode.FileMode) bool {
	parts := strings.Split(p, "/")
	if len(s.include) > 0 && !matchAny(s.include, parts) {
		return false
	}
	if len(s.include) == 0 && !document.NamedAsDocument(p, mode == filemode.Executable) {
		return false
	}
	return !matchAny(s.exclude, parts)
}

func matchAny(patterns []gitignore.Pattern, parts []string) bool {
	for _, p := range patterns {
		if p.Match(parts, false) != gitignore.NoMatch {
			return true
		}
	}
	return false
}

// sourceURL names the file at commit: its page at that commit on the
// hosts whose layout is known (GitHub, GitLab), else, host-neutral, the
// VCS location form of pip and SPDX, git+<repository URL>@<commit>#<path>.
// The repository URL never carries credentials (Validate refuses them;
// the user info is dropped again here).
func (s settings) sourceURL(commit, p string) string {
	u, err := url.Parse(s.url)
	if err != nil {
		return ""
	}
	u.User = nil
	base := strings.TrimSuffix(strings.TrimSuffix(u.String(), "/"), ".git")
	rest := (&url.URL{Path: commit + "/" + p}).EscapedPath()
	switch strings.ToLower(u.Hostname()) {
	case "github.com":
		return base + "/blob/" + rest
	case "gitlab.com":
		return base + "/-/blob/" + rest
	}
	return "git+" + u.String() + "@" + commit + "#" + (&url.URL{Fragment: p}).EscapedFragment()
}

// redact removes the token from a message shown to the operator or
// logged, whatever produced the message.
func (s settings) redact(msg string) string {
	if s.token == "" {
		return msg
	}
	return strings.ReplaceAll(msg, s.token, "***")
}

// errRedacted is an error whose message had the token removed; it keeps
// the original for errors.Is.
type errRedacted struct {
	msg string
	err error
}

func (e *errRedacted) Error() string { return e.msg }
func (e *errRedacted) Unwrap() error { return e.err }

func (s settings) redactErr(err error) error {
	if err == nil || s.token == "" || !strings.Contains(err.Error(), s.token) {
		return err
	}
	return &errRedacted{msg: s.redact(err.Error()), err: err}
}

// errorf is fmt.Errorf for messages that may embed remote text.
func (s settings) errorf(format string, args ...any) error {
	return s.redactErr(fmt.Errorf(format, args...))
}
