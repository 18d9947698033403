package mcpregistry

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/danielgtaylor/huma/v2"
	"github.com/google/uuid"
	apiv0 "github.com/modelcontextprotocol/registry/pkg/api/v0"
	"github.com/modelcontextprotocol/registry/pkg/model"

	"github.com/graphmill/graphmill/internal/errs"
	"github.com/graphmill/graphmill/internal/postgres"
)

// RegistryServers is a registry listing as the registry sent it (the
// types of github.com/modelcontextprotocol/registry/pkg/api/v0).
type RegistryServers apiv0.ServerListResponse

// RegistryServer is one registry entry as the registry sent it.
type RegistryServer apiv0.ServerResponse

// registryEntrySchema describes an entry without copying the registry's
// whole server.json schema into the OpenAPI document.
func registryEntrySchema() *huma.Schema {
	obj := func(doc string) *huma.Schema {
		return &huma.Schema{Type: huma.TypeObject, Description: doc, AdditionalProperties: true}
	}
	return &huma.Schema{
		Type: huma.TypeObject, AdditionalProperties: true,
		Description: "An entry of the official MCP registry (its v0.1 API): the server.json and the registry's metadata.",
		Properties: map[string]*huma.Schema{
			"server": obj("The server.json: name, title, description, version, repository, packages, remotes."),
			"_meta":  obj("Registry metadata (io.modelcontextprotocol.registry/official: status, publishedAt, isLatest)."),
		},
	}
}

// Schema implements huma.SchemaProvider.
func (RegistryServer) Schema(huma.Registry) *huma.Schema { return registryEntrySchema() }

// Schema implements huma.SchemaProvider.
func (RegistryServers) Schema(huma.Registry) *huma.Schema {
	return &huma.Schema{
		Type: huma.TypeObject, AdditionalProperties: true, Description: "Matching entries of the official MCP registry (latest versions).",
		Properties: map[string]*huma.Schema{
			"servers":  {Type: huma.TypeArray, Items: registryEntrySchema()},
			"metadata": {Type: huma.TypeObject, AdditionalProperties: true, Description: "nextCursor (for the cursor parameter) and count."},
		},
	}
}

// RegistrySearchLimit is the page size asked of the official registry.
const RegistrySearchLimit = 30

// registryNamePattern is the registry's server name syntax (reverse DNS,
// one slash).
var registryNamePattern = regexp.MustCompile(`^[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+$`) //nolint:gochecknoglobals // compiled pattern, constant

// registryGet fetches path from the registry into v. Errors: not_found
// (404), bad_gateway (unreachable or failing).
func (s *Service) registryGet(ctx context.Context, path string, v any) error {
	base := strings.TrimRight(s.cfg.RegistryURL, "/")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
	if err != nil {
		return fmt.Errorf("registry request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	res, err := s.http.Do(req)
	if err != nil {
		if errs.CodeOf(err) == errs.FailedPrecondition {
			return errs.Errorf(errs.BadGateway, "the MCP registry at %s is not reachable from this server: %s", base, errs.MessageOf(err))
		}
		return errs.Errorf(errs.BadGateway, "the MCP registry at %s is unreachable", base)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 8<<20))
	if err != nil {
		return errs.Errorf(errs.BadGateway, "the MCP registry at %s closed the connection", base)
	}
	switch {
	case res.StatusCode == http.StatusNotFound:
		return errs.New(errs.NotFound, "no such server in the MCP registry")
	case res.StatusCode != http.StatusOK:
		return errs.Errorf(errs.BadGateway, "the MCP registry at %s answered %d", base, res.StatusCode)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return errs.Errorf(errs.BadGateway, "the MCP registry at %s answered something that is not its JSON", base)
	}
	return nil
}

// SearchRegistry lists the latest versions of the registry's servers
// matching q (a substring of the name). Errors: bad_gateway.
func (s *Service) SearchRegistry(ctx context.Context, q, cursor string) (RegistryServers, error) {
	v := url.Values{"version": {"latest"}, "limit": {strconv.Itoa(RegistrySearchLimit)}}
	if q = strings.TrimSpace(q); q != "" {
		v.Set("search", q)
	}
	if cursor != "" {
		v.Set("cursor", cursor)
	}
	var out apiv0.ServerListResponse
	if err := s.registryGet(ctx, "/v0.1/servers?"+v.Encode(), &out); err != nil {
		return RegistryServers{}, err
	}
	if out.Servers == nil {
		out.Servers = []apiv0.ServerResponse{}
	}
	return RegistryServers(out), nil
}

// RegistryServer returns the latest version of a registry server.
// Errors: invalid_argument (malformed name), not_found, bad_gateway.
func (s *Service) RegistryServer(ctx context.Context, name string) (RegistryServer, error) {
	if !registryNamePattern.MatchString(name) || len(name) > 200 {
		return RegistryServer{}, errs.New(errs.Invalid, "a registry server name reads namespace/name, for example io.github.owner/server")
	}
	var out apiv0.ServerResponse
	err := s.registryGet(ctx, "/v0.1/servers/"+url.PathEscape(name)+"/versions/latest", &out)
	return RegistryServer(out), err
}

// InstallInput installs a registry server into a project.
type InstallInput struct {
	ServerName string
	Env        map[string]string
	// Caller installs: a server with a usable remote is installed as that
	// remote when the caller may not create stdio servers (CheckStdio).
	Caller Caller
}

// InstallResult is the created record and the outcome of its first sync.
type InstallResult struct {
	Server    Server      `json:"server"`
	Sync      *SyncResult `json:"sync,omitempty"`
	SyncError string      `json:"syncError,omitempty" doc:"Why the first sync failed; the record is kept and can be synced again."`
}

// placeholder matches {name} in registry values.
var placeholder = regexp.MustCompile(`\{([A-Za-z0-9_.-]+)\}`) //nolint:gochecknoglobals // compiled pattern, constant

// fill resolves a registry input: the caller's value for name, else its
// value with placeholders filled, else its default. missing collects the
// required names left without a value. With vars not nil (arguments and
// URLs, which are stored and shown in plain text), a value of the caller
// (it may be a secret) is not written in: it stays a {name} placeholder
// and goes into vars, which are sealed and filled in only when the
// process starts or the request is made.
func fill(name string, in model.InputWithVariables, env map[string]string, missing map[string]bool, vars map[string]string) (string, bool) {
	if v, ok := env[name]; ok && v != "" {
		if vars != nil && varName.MatchString(name) {
			vars[name] = v
			return "{" + name + "}", true
		}
		return v, true
	}
	v := in.Value
	if v != "" {
		complete := true
		v = placeholder.ReplaceAllStringFunc(v, func(m string) string {
			key := m[1 : len(m)-1]
			if ev, ok := env[key]; ok && ev != "" {
				if vars != nil {
					vars[key] = ev
					return m
				}
				return ev
			}
			if vi, ok := in.Variables[key]; ok && vi.Default != "" {
				return vi.Default
			}
			if vi, ok := in.Variables[key]; ok && vi.IsRequired || !ok {
				missing[key] = true
			}
			complete = false
			return ""
		})
		if complete {
			return v, true
		}
		return "", false
	}
	if in.Default != "" {
		return in.Default, true
	}
	if in.IsRequired {
		missing[name] = true
	}
	return "", false
}

// packageRecord maps a registry package to a stdio record, its arguments
// holding placeholders of vars (see fill). ok is false for registry types
// without a runner here.
func packageRecord(p model.Package, env map[string]string, missing map[string]bool, vars map[string]string) (ServerInput, bool) {
	in := ServerInput{Type: TypeStdio, Env: map[string]string{}}
	procEnv := map[string]string{}
	for _, ev := range p.EnvironmentVariables {
		if v, ok := fill(ev.Name, ev.InputWithVariables, env, missing, nil); ok {
			procEnv[ev.Name] = v
		}
	}
	for k, v := range env {
		if _, ok := procEnv[k]; !ok && envName.MatchString(k) {
			procEnv[k] = v
		}
	}
	names := slices.Sorted(maps.Keys(procEnv))
	switch p.RegistryType {
	case model.RegistryTypeNPM:
		ref := p.Identifier
		if p.Version != "" {
			ref += "@" + p.Version
		}
		in.Command, in.Args = "npx", []string{"-y", ref}
	case model.RegistryTypePyPI:
		ref := p.Identifier
		if p.Version != "" {
			ref += "==" + p.Version
		}
		in.Command, in.Args = "uvx", []string{ref}
	case model.RegistryTypeOCI:
		// docker passes only the variables named with -e into the container.
		in.Command, in.Args = "docker", []string{"run", "-i", "--rm"}
		for _, k := range names {
			in.Args = append(in.Args, "-e", k)
		}
		in.Args = append(in.Args, p.Identifier)
	default:
		return ServerInput{}, false
	}
	for _, a := range p.PackageArguments {
		key := a.Name
		if key == "" {
			key = a.ValueHint
		}
		v, ok := fill(key, a.InputWithVariables, env, missing, vars)
		if !ok {
			continue
		}
		if a.Type == model.ArgumentTypeNamed {
			in.Args = append(in.Args, a.Name, v)
		} else {
			in.Args = append(in.Args, v)
		}
	}
	in.Env = procEnv
	return in, true
}

// remoteRecord maps a registry remote to an sse or http record, its URL
// holding placeholders of vars (see fill); header values are sealed, so
// they are filled in.
func remoteRecord(r model.Transport, env map[string]string, missing map[string]bool, vars map[string]string) (ServerInput, bool) {
	in := ServerInput{Headers: map[string]string{}}
	switch r.Type {
	case model.TransportTypeStreamableHTTP:
		in.Type = TypeHTTP
	case model.TransportTypeSSE:
		in.Type = TypeSSE
	default:
		return ServerInput{}, false
	}
	u, _ := fill("", model.InputWithVariables{Input: model.Input{Value: r.URL}, Variables: r.Variables}, env, missing, vars)
	in.URL = u
	for _, h := range r.Headers {
		if v, ok := fill(h.Name, h.InputWithVariables, env, missing, nil); ok {
			in.Headers[h.Name] = v
		}
	}
	return in, true
}

// Install creates a project's server from the latest registry version of
// in.ServerName and syncs it: the first package with a runner (npm, PyPI,
// OCI) becomes a stdio record, else the first remote an sse or http
// record; a remote is preferred when the caller may not create stdio
// servers. Errors: invalid_argument (a required variable is missing: each
// is named), not_found, permission_denied, failed_precondition (nothing
// installable), bad_gateway (registry down).
func (s *Service) Install(ctx context.Context, project uuid.UUID, in InstallInput) (InstallResult, error) {
	entry, err := s.RegistryServer(ctx, in.ServerName)
	if err != nil {
		return InstallResult{}, err
	}
	sj := entry.Server
	env := in.Env
	if env == nil {
		env = map[string]string{}
	}
	var chosen *ServerInput
	var chosenMissing map[string]bool
	var chosenVars map[string]string
	stdioErr := s.CheckStdio(in.Caller)
	for _, p := range sj.Packages {
		missing, vars := map[string]bool{}, map[string]string{}
		if rec, ok := packageRecord(p, env, missing, vars); ok {
			chosen, chosenMissing, chosenVars = &rec, missing, vars
			break
		}
	}
	if chosen == nil || stdioErr != nil {
		for _, r := range sj.Remotes {
			missing, vars := map[string]bool{}, map[string]string{}
			if rec, ok := remoteRecord(r, env, missing, vars); ok {
				chosen, chosenMissing, chosenVars = &rec, missing, vars
				break
			}
		}
	}
	if chosen == nil {
		return InstallResult{}, errs.Errorf(errs.FailedPrecondition, "the registry server %s has no npm, PyPI or OCI package and no sse or streamable-http remote", sj.Name)
	}
	if chosen.Type == TypeStdio && stdioErr != nil {
		return InstallResult{}, stdioErr
	}
	if len(chosenMissing) > 0 {
		names := slices.Sorted(maps.Keys(chosenMissing))
		return InstallResult{}, errs.Errorf(errs.Invalid, "config.env misses required variables: %s", strings.Join(names, ", "))
	}
	chosen.Name = sj.Name
	if sj.Title != "" {
		chosen.Name = sj.Title
	}
	chosen.Name = postgres.Text(chosen.Name) // the registry's: a display name
	srv, err := s.createServer(ctx, project, *chosen, chosenVars)
	if err != nil {
		return InstallResult{}, err
	}
	res := InstallResult{Server: srv}
	sr, err := s.Sync(ctx, project, srv.ID)
	if err != nil {
		if errs.CodeOf(err) == errs.Internal {
			return InstallResult{}, err
		}
		res.SyncError = errs.MessageOf(err)
		return res, nil
	}
	res.Sync = &sr
	return res, nil
}
