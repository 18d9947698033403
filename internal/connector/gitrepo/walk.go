package gitrepo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/storage"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/graphmill/graphmill/internal/connector"
	"github.com/graphmill/graphmill/internal/errs"
)

// cloneDir is the bare clone's directory inside Env.CacheDir.
const cloneDir = "repo.git"

// fetchedRef points at the last commit fetched completely: it is written
// only once the commit's pack is stored, so a fetch interrupted midway
// (killed, cancelled, cut) is redone rather than trusted, and it is the
// "have" of the next fetch, whose thin pack assumes every object of it.
const fetchedRef = plumbing.ReferenceName("refs/heads/graphmill-fetched")

// state is the connector state saved by a successful sync.
type state struct {
	Commit string `json:"commit"`
}

// Walk fetches the branch tip into the cached clone (only what is missing)
// and reports every selected file of its tree: Unchanged when w knows the
// file at its blob hash, Item with the content otherwise (every file with
// opts.FullSync). Files removed at the source are not reported. The tip is
// recorded with SetState.
func (c *Connector) Walk(ctx context.Context, env connector.Env, cfg connector.Config, opts connector.Options, w connector.Walker) error {
	if env.CacheDir == "" {
		return errors.New("git connector: no cache directory in the environment")
	}
	r, tip, branch, err := connect(ctx, env, cfg)
	if err != nil {
		return err
	}
	defer r.close()
	s := r.s
	sto, err := openClone(filepath.Join(env.CacheDir, cloneDir), s.url, c.maxFetches())
	if err != nil {
		return err
	}

	fetched := false
	var have []plumbing.Hash
	if ref, err := sto.Reference(fetchedRef); err == nil {
		have = []plumbing.Hash{ref.Hash()}
	}
	if len(have) == 0 || have[0] != tip {
		if err := r.fetch(ctx, sto, tip, have, ""); err != nil {
			return err
		}
		if err := sto.SetReference(plumbing.NewHashReference(fetchedRef, tip)); err != nil {
			return fmt.Errorf("record fetched commit: %w", err)
		}
		fetched = true
	}
	prev := previousCommit(w.State(), sto)
	tree, err := commitTree(sto, tip)
	if err != nil {
		return err
	}
	details := map[string]any{"branch": branch, "commit": tip.String(), "fetched": fetched}
	if !prev.IsZero() && prev != tip {
		details["previous_commit"] = prev.String()
		if counts, err := changeCounts(sto, prev, tree, s); err == nil {
			details["changes"] = counts
		}
	}
	w.Log(ctx, connector.LevelInfo, fmt.Sprintf("%s at %s", branch, tip.String()[:12]), details)

	if err := c.report(ctx, sto, tree, s, tip, opts.FullSync, w); err != nil {
		return err
	}
	return connector.SaveState(w, state{Commit: tip.String()})
}

// report walks tree and reports every selected file.
func (*Connector) report(ctx context.Context, sto storage.Storer, tree *object.Tree, s settings, tip plumbing.Hash, full bool, w connector.Walker) error {
	return eachFile(tree, s, func(name string, blob plumbing.Hash) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		version := blob.String()
		if known, ok := w.Known(name); ok && known == version && !full {
			return w.Unchanged(ctx, name)
		}
		content, err := readBlob(sto, blob)
		if err != nil {
			return fmt.Errorf("read %s: %w", name, err)
		}
		err = w.Item(ctx, connector.Item{
			ExternalID: name,
			Version:    version,
			Title:      path.Base(name),
			URL:        s.sourceURL(tip.String(), name),
			Filename:   path.Base(name),
			Content:    content,
		})
		if errors.Is(err, connector.ErrSkipItem) {
			return nil
		}
		return err
	})
}

// errStop ends eachFile early without an error.
var errStop = errors.New("stop")

// eachFile calls fn with the path and blob hash of every selected regular
// file of tree, in tree order, until fn returns an error (errStop: none).
func eachFile(tree *object.Tree, s settings, fn func(name string, blob plumbing.Hash) error) error {
	walker := object.NewTreeWalker(tree, true, nil)
	defer walker.Close()
	for {
		name, entry, err := walker.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("walk tree: %w", err)
		}
		if !isFile(entry.Mode) || !s.selects(name, entry.Mode) {
			continue
		}
		if err := fn(name, entry.Hash); err != nil {
			if errors.Is(err, errStop) {
				return nil
			}
			return err
		}
	}
}

// Test authenticates, resolves the branch and lists one selected file of
// its tip. It fetches the tip's trees without blobs when the server allows
// partial clones, into a temporary directory removed afterwards, so it
// never touches the clone a sync may be using.
func (*Connector) Test(ctx context.Context, env connector.Env, cfg connector.Config) error {
	r, tip, branch, err := connect(ctx, env, cfg)
	if err != nil {
		return err
	}
	defer r.close()
	s := r.s
	dir, err := os.MkdirTemp(env.CacheDir, "test-")
	if err != nil {
		return fmt.Errorf("git connector test directory: %w", err)
	}
	defer func() { _ = os.RemoveAll(dir) }()
	sto := filesystem.NewStorage(osfs.New(dir), cache.NewObjectLRUDefault())
	if err := r.fetch(ctx, sto, tip, nil, packp.FilterBlobNone()); err != nil {
		return err
	}
	tree, err := commitTree(sto, tip)
	if err != nil {
		return err
	}
	found := false
	err = eachFile(tree, s, func(string, plumbing.Hash) error {
		found = true
		return errStop
	})
	if err != nil {
		return err
	}
	if !found {
		return errs.Errorf(errs.BadGateway, "no file on branch %q matches the globs", branch)
	}
	return nil
}

func (c *Connector) maxFetches() int {
	if c.MaxFetches > 0 {
		return c.MaxFetches
	}
	return MaxFetchesDefault
}

// openClone opens (creating it if needed) the bare clone in dir. A clone
// of another repository (the URL changed) or one that took maxFetches
// fetches is removed first.
func openClone(dir, repoURL string, maxFetches int) (*filesystem.Storage, error) {
	sto := filesystem.NewStorage(osfs.New(dir), cache.NewObjectLRUDefault())
	cfg, err := sto.Config()
	if err == nil {
		origin, ok := cfg.Remotes["origin"]
		shallow, err := sto.Shallow()
		if ok && len(origin.URLs) == 1 && origin.URLs[0] == repoURL && err == nil && len(shallow) < maxFetches {
			return sto, nil
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return nil, fmt.Errorf("reset git cache: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create git cache: %w", err)
	}
	sto = filesystem.NewStorage(osfs.New(dir), cache.NewObjectLRUDefault())
	cfg = config.NewConfig()
	cfg.Core.IsBare = true
	cfg.Remotes["origin"] = &config.RemoteConfig{Name: "origin", URLs: []string{repoURL}}
	if err := sto.SetConfig(cfg); err != nil {
		return nil, fmt.Errorf("write git cache config: %w", err)
	}
	if err := sto.SetReference(plumbing.NewSymbolicReference(plumbing.HEAD, fetchedRef)); err != nil {
		return nil, fmt.Errorf("write git cache HEAD: %w", err)
	}
	return sto, nil
}

// previousCommit is the commit of the last successful sync when the clone
// still holds it (to log what changed since), else the zero hash.
func previousCommit(raw json.RawMessage, sto storage.Storer) plumbing.Hash {
	var st state
	if len(raw) == 0 || json.Unmarshal(raw, &st) != nil || !plumbing.IsHash(st.Commit) {
		return plumbing.ZeroHash
	}
	h := plumbing.NewHash(st.Commit)
	if sto.HasEncodedObject(h) != nil {
		return plumbing.ZeroHash
	}
	return h
}

func commitTree(sto storage.Storer, h plumbing.Hash) (*object.Tree, error) {
	commit, err := object.GetCommit(sto, h)
	if err != nil {
		return nil, fmt.Errorf("read commit %s: %w", h, err)
	}
	tree, err := commit.Tree()
	if err != nil {
		return nil, fmt.Errorf("read tree of %s: %w", h, err)
	}
	return tree, nil
}

// changeCounts counts the selected files added, modified and deleted
// between the previous synced commit and tree, for the sync log.
func changeCounts(sto storage.Storer, prev plumbing.Hash, tree *object.Tree, s settings) (map[string]int, error) {
	prevTree, err := commitTree(sto, prev)
	if err != nil {
		return nil, err
	}
	changes, err := object.DiffTree(prevTree, tree)
	if err != nil {
		return nil, fmt.Errorf("diff trees: %w", err)
	}
	counts := map[string]int{"added": 0, "modified": 0, "deleted": 0}
	for _, ch := range changes {
		switch {
		case ch.From.Name == "" && s.selects(ch.To.Name, ch.To.TreeEntry.Mode):
			counts["added"]++
		case ch.To.Name == "" && s.selects(ch.From.Name, ch.From.TreeEntry.Mode):
			counts["deleted"]++
		case ch.From.Name != "" && ch.To.Name != "" && s.selects(ch.To.Name, ch.To.TreeEntry.Mode):
			counts["modified"]++
		}
	}
	return counts, nil
}

func isFile(m filemode.FileMode) bool {
	return m == filemode.Regular || m == filemode.Executable || m == filemode.Deprecated
}

func readBlob(sto storage.Storer, h plumbing.Hash) ([]byte, error) {
	blob, err := object.GetBlob(sto, h)
	if err != nil {
		return nil, err
	}
	rd, err := blob.Reader()
	if err != nil {
		return nil, err
	}
	defer func() { _ = rd.Close() }()
	return io.ReadAll(rd)
}
