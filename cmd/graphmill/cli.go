package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/graphmill/graphmill/internal/client"
)

// Exit codes of the client commands (README, "Command-line client").
const (
	exitError  = 1 // any other error: network, server error, bad answer
	exitUsage  = 2 // bad command line, or no server/token/project known
	exitAuth   = 3 // the server refused the token (401 or 403)
	exitFailed = 4 // the work ran but part of it failed (an ingested file, a job)
)

// exitError carries the exit code a command ends with.
type exitCodeError struct {
	code int
	err  error
}

func (e *exitCodeError) Error() string { return e.err.Error() }
func (e *exitCodeError) Unwrap() error { return e.err }

// exitCode is the process exit code for an error run returned.
func exitCode(err error) int {
	if ee, ok := errors.AsType[*exitCodeError](err); ok {
		return ee.code
	}
	return exitError
}

// withCode makes err end the process with code.
func withCode(code int, err error) error { return &exitCodeError{code: code, err: err} }

// usageErr is a command line that cannot run.
func usageErr(format string, args ...any) error {
	return withCode(exitUsage, fmt.Errorf(format, args...))
}

// cliConfig is the client's configuration file, written by graphmill login.
type cliConfig struct {
	Server  string `json:"server"`
	Token   string `json:"token"`
	Project string `json:"project,omitempty"`
}

// cli is what the client commands share: the environment, the streams and
// the global flags.
type cli struct {
	ctx     context.Context
	environ []string
	stdin   io.Reader
	stdout  io.Writer
	stderr  io.Writer
	json    bool   // --json: machine-readable output
	project string // --project
	// requestTimeout bounds an ordinary request (--request-timeout).
	requestTimeout time.Duration
	http           *clientHTTP // built from requestTimeout by open
}

// getenv looks a variable up in the command's environment.
func (c *cli) getenv(name string) string {
	prefix := name + "="
	for i := len(c.environ) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(c.environ[i], prefix); ok {
			return v
		}
	}
	return ""
}

// configPath is the client's configuration file: graphmill/config.json in
// the user's configuration folder (XDG_CONFIG_HOME, else the platform's).
func (c *cli) configPath() (string, error) {
	dir := c.getenv("XDG_CONFIG_HOME")
	if dir == "" {
		var err error
		if dir, err = os.UserConfigDir(); err != nil {
			return "", fmt.Errorf("find the configuration folder: %w", err)
		}
	}
	return filepath.Join(dir, "graphmill", "config.json"), nil
}

// config is the configuration file with GRAPHMILL_URL, GRAPHMILL_TOKEN and
// GRAPHMILL_PROJECT over it, and --project over everything.
func (c *cli) config() (cliConfig, error) {
	var cfg cliConfig
	path, err := c.configPath()
	if err != nil {
		return cfg, err
	}
	raw, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return cfg, fmt.Errorf("read %s: %w", path, err)
	default:
		if err := json.Unmarshal(raw, &cfg); err != nil {
			return cfg, fmt.Errorf("read %s: %w", path, err)
		}
	}
	for name, field := range map[string]*string{"GRAPHMILL_URL": &cfg.Server, "GRAPHMILL_TOKEN": &cfg.Token, "GRAPHMILL_PROJECT": &cfg.Project} {
		if v := c.getenv(name); v != "" {
			*field = v
		}
	}
	if c.project != "" {
		cfg.Project = c.project
	}
	if cfg.Server == "" || cfg.Token == "" {
		return cfg, usageErr("no server or token: run graphmill login --server URL --token TOKEN, or set GRAPHMILL_URL and GRAPHMILL_TOKEN")
	}
	return cfg, nil
}

// saveConfig writes the configuration file, readable by its owner only.
func (c *cli) saveConfig(cfg cliConfig) (string, error) {
	path, err := c.configPath()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("create %s: %w", filepath.Dir(path), err)
	}
	raw, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return "", fmt.Errorf("encode the configuration: %w", err)
	}
	// Write a new file and rename it: an existing file keeps no wider mode.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(raw, '\n'), 0o600); err != nil {
		return "", fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	return path, nil
}

// session is a configured connection to a server.
type session struct {
	*cli
	cfg cliConfig
	api *client.Client
}

// connect builds the generated client for the configured server, every
// request carrying the token (and the project, for routes that take it
// from X-Project-ID).
func (c *cli) connect() (*session, error) {
	cfg, err := c.config()
	if err != nil {
		return nil, err
	}
	return c.open(cfg)
}

// open builds the generated client for cfg's server.
func (c *cli) open(cfg cliConfig) (*session, error) {
	s := &session{cli: c, cfg: cfg}
	if c.requestTimeout < 0 {
		return nil, usageErr("--request-timeout must not be negative")
	}
	if c.http == nil {
		c.http = newClientHTTP(c.requestTimeout)
	}
	var err error
	s.api, err = client.NewClient(strings.TrimRight(cfg.Server, "/"), client.WithHTTPClient(c.http),
		client.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
			s.authorize(r)
			return nil
		}))
	if err != nil {
		return nil, usageErr("server %q: %w", cfg.Server, err)
	}
	return s, nil
}

// connectProject is connect with the project resolved (projectID), for
// the commands whose routes need one.
func (c *cli) connectProject() (*session, error) {
	s, err := c.connect()
	if err != nil {
		return nil, err
	}
	if _, err := s.projectID(); err != nil {
		return nil, err
	}
	return s, nil
}

// withSession is a RunE that opens a session with connect (c.connect, or
// c.connectProject for the commands whose routes need a project) and runs
// fn in it with the command's arguments.
func withSession(connect func() (*session, error), fn func(s *session, args []string) error) func(*cobra.Command, []string) error {
	return func(_ *cobra.Command, args []string) error {
		s, err := connect()
		if err != nil {
			return err
		}
		return fn(s, args)
	}
}

// authorize sets the token and, when known, the project on r.
func (s *session) authorize(r *http.Request) {
	r.Header.Set("Authorization", "Bearer "+s.cfg.Token)
	if s.cfg.Project != "" && r.Header.Get("X-Project-ID") == "" {
		r.Header.Set("X-Project-ID", s.cfg.Project)
	}
}

// projectID is the project the commands work in: --project,
// GRAPHMILL_PROJECT or the configuration file, else the caller's only
// project.
func (s *session) projectID() (string, error) {
	if s.cfg.Project != "" {
		return s.cfg.Project, nil
	}
	list, err := call[client.ListProject](s.api.ListProjects(s.ctx, &client.ListProjectsParams{})) //nolint:bodyclose // call closes it
	if err != nil {
		return "", err
	}
	projects := deref(list.Data)
	if len(projects) != 1 {
		return "", usageErr("the token sees %d projects: pass --project ID (or GRAPHMILL_PROJECT)", len(projects))
	}
	s.cfg.Project = projects[0].Id
	return s.cfg.Project, nil
}

// call reads a generated client call's answer: T decoded from a 2xx body,
// else the problem's detail as an error (exitAuth for 401 and 403).
func call[T any](res *http.Response, err error) (T, error) {
	var out T
	if err != nil {
		return out, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return out, fmt.Errorf("%s %s: read the answer: %w", res.Request.Method, res.Request.URL.Path, err)
	}
	if res.StatusCode/100 != 2 {
		return out, problemError(res, body)
	}
	if len(body) == 0 {
		return out, nil
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return out, fmt.Errorf("%s %s: decode the answer: %w", res.Request.Method, res.Request.URL.Path, err)
	}
	return out, nil
}

// problemError is an error answer as an error: the problem's detail (or
// title), with the exit code its status calls for.
func problemError(res *http.Response, body []byte) error {
	var p client.Problem
	msg := strings.TrimSpace(string(body))
	if json.Unmarshal(body, &p) == nil && (p.Title != "" || p.Detail != nil) {
		msg = p.Title
		if p.Detail != nil && *p.Detail != "" {
			msg = *p.Detail
		}
	}
	err := fmt.Errorf("%s %s: %d %s", res.Request.Method, res.Request.URL.Path, res.StatusCode, msg)
	if res.StatusCode == http.StatusUnauthorized || res.StatusCode == http.StatusForbidden {
		return withCode(exitAuth, err)
	}
	return err
}

// listAll reads every page of a list route, limit items a page: page
// asks for one window and returns its items; the last page is the first
// shorter than limit.
func listAll[T any](limit int64, page func(limit, offset *int64) (*[]T, error)) ([]T, error) {
	return listUpTo(limit, math.MaxInt64, page)
}

// listUpTo is listAll that stops once it has most items, and returns no
// more than most (empty, not nil, for none: --json prints []).
func listUpTo[T any](limit, most int64, page func(limit, offset *int64) (*[]T, error)) ([]T, error) {
	all := []T{}
	for offset := int64(0); int64(len(all)) < most; offset += limit {
		data, err := page(&limit, &offset)
		if err != nil {
			return nil, err
		}
		all = append(all, deref(data)...)
		if int64(len(deref(data))) < limit {
			break
		}
	}
	return all[:min(int64(len(all)), most)], nil
}

// deref is the value of an optional list (empty, not nil, for none or
// null: --json prints []).
func deref[T any](p *[]T) []T {
	if p == nil || *p == nil {
		return []T{}
	}
	return *p
}

// str is an optional string's value ("" for none).
func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// emit writes v as indented JSON (--json) or, for people, the table rows
// gives (a header row first).
func (c *cli) emit(v any, rows func() [][]string) error {
	if c.json {
		enc := json.NewEncoder(c.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	tw := tabwriter.NewWriter(c.stdout, 2, 4, 2, ' ', 0)
	for _, row := range rows() {
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	return tw.Flush()
}

// when formats an optional time for a table.
func when(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.Local().Format(time.DateTime)
}

// clientCommands are the commands that talk to a running server through
// the generated client.
func clientCommands(c *cli) []*cobra.Command {
	return []*cobra.Command{
		loginCommand(c), ingestCommand(c), jobsCommand(c), searchCommand(c),
		graphCommand(c), eventsCommand(c), tokensCommand(c), chatCommand(c), agentsCommand(c),
	}
}

// loginCommand is graphmill login: it checks the token against the server
// and writes the configuration file.
func loginCommand(c *cli) *cobra.Command {
	var cfg cliConfig
	cmd := &cobra.Command{
		Use:   "login",
		Short: "Save the server URL and API token for the client commands (checked against the server)",
		Args:  noArgs,
		RunE: func(*cobra.Command, []string) error {
			if cfg.Server == "" || cfg.Token == "" {
				return usageErr("login needs --server and --token")
			}
			s, err := c.open(cfg)
			if err != nil {
				return err
			}
			list, err := call[client.ListProject](s.api.ListProjects(c.ctx, &client.ListProjectsParams{})) //nolint:bodyclose // call closes it
			if err != nil {
				return err
			}
			path, err := c.saveConfig(cfg)
			if err != nil {
				return err
			}
			out := map[string]any{"server": cfg.Server, "config": path, "projects": len(deref(list.Data))}
			return c.emit(out, func() [][]string {
				return [][]string{{"logged in to " + cfg.Server + ", " + fmt.Sprint(len(deref(list.Data))) + " project(s); configuration in " + path}}
			})
		},
	}
	cmd.Flags().StringVar(&cfg.Server, "server", "", "server URL, e.g. http://127.0.0.1:8080")
	cmd.Flags().StringVar(&cfg.Token, "token", "", "API token (gm_...)")
	cmd.Flags().StringVar(&cfg.Project, "default-project", "", "project the commands use when --project is not given")
	return cmd
}
