package gitrepo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/sideband"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage"

	"github.com/graphmill/graphmill/internal/connector"
	"github.com/graphmill/graphmill/internal/errs"
)

// remote is an upload-pack session with the repository whose refs have
// been advertised.
type remote struct {
	s    settings
	sess transport.UploadPackSession
	adv  *packp.AdvRefs
}

// dial authenticates and reads the advertised refs (git ls-remote). The
// transport is go-git's smart HTTP client built on env.HTTP for this call
// alone: go-git's registry of protocols (client.InstallProtocol) is
// process-wide and is not used.
func dial(ctx context.Context, env connector.Env, s settings) (*remote, error) {
	if env.HTTP == nil {
		return nil, errors.New("git connector: no HTTP client in the environment")
	}
	ep, err := transport.NewEndpoint(s.url)
	if err != nil {
		return nil, errs.Errorf(errs.Invalid, "%s is not a valid repository URL", fieldURL)
	}
	var auth transport.AuthMethod
	if s.token != "" {
		auth = &githttp.BasicAuth{Username: tokenUser, Password: s.token}
	}
	sess, err := githttp.NewClient(env.HTTP).NewUploadPackSession(ep, auth)
	if err != nil {
		return nil, s.describe(err)
	}
	adv, err := sess.AdvertisedReferencesContext(ctx)
	if err != nil {
		_ = sess.Close()
		return nil, s.describe(err)
	}
	return &remote{s: s, sess: sess, adv: adv}, nil
}

func (r *remote) close() { _ = r.sess.Close() }

// connect validates cfg, dials the repository and resolves the branch to
// sync.
func connect(ctx context.Context, env connector.Env, cfg connector.Config) (*remote, plumbing.Hash, string, error) {
	s, err := parseSettings(cfg)
	if err != nil {
		return nil, plumbing.ZeroHash, "", err
	}
	r, err := dial(ctx, env, s)
	if err != nil {
		return nil, plumbing.ZeroHash, "", err
	}
	tip, branch, err := r.tip(s.branch)
	if err != nil {
		r.close()
		return nil, plumbing.ZeroHash, "", err
	}
	return r, tip, branch, nil
}

// tip resolves the branch to sync (the remote HEAD's branch when branch is
// empty) to its commit.
func (r *remote) tip(branch string) (plumbing.Hash, string, error) {
	refs, err := r.adv.AllReferences()
	if err != nil {
		return plumbing.ZeroHash, "", fmt.Errorf("read advertised refs: %w", err)
	}
	name := plumbing.HEAD
	if branch != "" {
		name = plumbing.NewBranchReferenceName(branch)
	} else if head, ok := refs[plumbing.HEAD]; ok && head.Type() == plumbing.SymbolicReference {
		branch = head.Target().Short()
	} else {
		branch = "HEAD"
	}
	ref, err := storer.ResolveReference(refs, name)
	if err != nil || ref.Hash().IsZero() {
		return plumbing.ZeroHash, "", errs.Errorf(errs.BadGateway, "branch %q not found in %s", branch, r.s.url)
	}
	return ref.Hash(), branch, nil
}

// fetch downloads the commit want at depth 1 into sto, telling the server
// the commits in have (the last synced one) so that it sends only the
// objects that changed since. A non-empty filter asks for a partial pack
// when the server allows it (Test fetches the trees only).
func (r *remote) fetch(ctx context.Context, sto storage.Storer, want plumbing.Hash, have []plumbing.Hash, filter packp.Filter) (err error) {
	req := packp.NewUploadPackRequestFromCapabilities(r.adv.Capabilities)
	req.Wants = []plumbing.Hash{want}
	req.Haves = have
	req.Depth = packp.DepthCommits(1)
	if err := req.Capabilities.Set(capability.Shallow); err != nil {
		return fmt.Errorf("request shallow: %w", err)
	}
	if r.adv.Capabilities.Supports(capability.NoProgress) {
		if err := req.Capabilities.Set(capability.NoProgress); err != nil {
			return fmt.Errorf("request no-progress: %w", err)
		}
	}
	// go-git hides thin-pack from the advertisement because its pack
	// writer cannot store a thin pack as a pack file. Without it a server
	// answering a shallow fetch resends the whole tree, so an incremental
	// fetch asks for a thin pack anyway and stores it through the parser,
	// which resolves the deltas against the objects of the last sync.
	thin := len(have) > 0
	if thin {
		if err := req.Capabilities.Set(capability.ThinPack); err != nil {
			return fmt.Errorf("request thin-pack: %w", err)
		}
	}
	if filter != "" && r.adv.Capabilities.Supports(capability.Filter) {
		if err := req.Capabilities.Set(capability.Filter); err != nil {
			return fmt.Errorf("request filter: %w", err)
		}
		req.Filter = filter
	}
	if req.Shallows, err = sto.Shallow(); err != nil {
		return fmt.Errorf("read shallow commits: %w", err)
	}
	resp, err := r.sess.UploadPack(ctx, req)
	if err != nil {
		if errors.Is(err, transport.ErrEmptyUploadPackRequest) {
			return nil
		}
		return r.s.describe(err)
	}
	defer func() {
		if cerr := resp.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close pack: %w", cerr)
		}
	}()
	var pack io.Reader = resp
	switch {
	case req.Capabilities.Supports(capability.Sideband64k):
		pack = sideband.NewDemuxer(sideband.Sideband64k, resp)
	case req.Capabilities.Supports(capability.Sideband):
		pack = sideband.NewDemuxer(sideband.Sideband, resp)
	}
	if err := storePack(sto, pack, thin); err != nil {
		return r.s.errorf("store pack from %s: %w", r.s.host, err)
	}
	// The new shallow boundaries are recorded once their commits are
	// stored, so that an interrupted fetch leaves a consistent clone.
	return mergeShallow(sto, resp.Shallows)
}

// storePack writes a full pack as a pack file and a thin pack's objects
// one by one (loose), resolving its deltas against sto.
func storePack(sto storage.Storer, pack io.Reader, thin bool) error {
	if !thin {
		return packfile.UpdateObjectStorage(sto, pack)
	}
	p, err := packfile.NewParserWithStorage(packfile.NewScanner(pack), sto)
	if err != nil {
		return err
	}
	_, err = p.Parse()
	return err
}

// mergeShallow adds the commits the server made shallow boundaries.
func mergeShallow(sto storage.Storer, add []plumbing.Hash) error {
	if len(add) == 0 {
		return nil
	}
	shallows, err := sto.Shallow()
	if err != nil {
		return fmt.Errorf("read shallow commits: %w", err)
	}
	seen := make(map[plumbing.Hash]bool, len(shallows))
	for _, h := range shallows {
		seen[h] = true
	}
	for _, h := range add {
		if !seen[h] {
			seen[h] = true
			shallows = append(shallows, h)
		}
	}
	if err := sto.SetShallow(shallows); err != nil {
		return fmt.Errorf("write shallow commits: %w", err)
	}
	return nil
}

// describe turns a transport error into a message for the operator. It
// never includes the token, nor text the server sent with an error status.
func (s settings) describe(err error) error {
	if err == nil {
		return nil
	}
	err = unwrapPlumbing(err)
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return s.redactErr(err)
	case errors.Is(err, transport.ErrAuthenticationRequired):
		if s.token == "" {
			return errs.Errorf(errs.BadGateway, "%s requires authentication: set %s", s.host, fieldToken)
		}
		return errs.Errorf(errs.BadGateway, "%s refused the access token (authentication failed)", s.host)
	case errors.Is(err, transport.ErrAuthorizationFailed):
		return errs.Errorf(errs.BadGateway, "%s denied access to the repository (the token lacks permission)", s.host)
	case errors.Is(err, transport.ErrRepositoryNotFound):
		return errs.Errorf(errs.BadGateway, "repository %s not found (or not visible without a token)", s.url)
	case errors.Is(err, transport.ErrEmptyRemoteRepository):
		return errs.Errorf(errs.BadGateway, "repository %s is empty", s.url)
	}
	var e *errs.Error
	if errors.As(err, &e) { // the egress guard's refusal
		return errs.Errorf(errs.BadGateway, "cannot reach %s: %s", s.host, s.redact(e.Message))
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return errs.Errorf(errs.BadGateway, "cannot reach %s: %s", s.host, s.redact(ue.Err.Error()))
	}
	var he *githttp.Err
	if errors.As(err, &he) && he.Response != nil {
		return errs.Errorf(errs.BadGateway, "%s answered HTTP %d", s.host, he.Response.StatusCode)
	}
	return errs.Errorf(errs.BadGateway, "git over HTTP with %s: %s", s.host, s.redact(err.Error()))
}

// unwrapPlumbing strips go-git's UnexpectedError and PermanentError
// wrappers, which do not implement Unwrap.
func unwrapPlumbing(err error) error {
	for {
		var ue *plumbing.UnexpectedError
		var pe *plumbing.PermanentError
		switch {
		case errors.As(err, &ue):
			err = ue.Err
		case errors.As(err, &pe):
			err = pe.Err
		default:
			return err
		}
	}
}
