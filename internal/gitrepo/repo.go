// Package gitrepo is kedge's Git layer: an on-disk clone of the GitOps
// repository that is fetched, not re-cloned, every cycle; one branch per
// change built directly from Git objects on top of the base branch's tip; and
// one push that carries every branch, each guarded by a lease on the remote
// tip kedge last saw, so a person's commits are never overwritten.
//
// The clone is shallow (depth 1, one branch, no tags) and on disk because
// in-memory clones of large GitOps repositories exhaust memory. Credentials
// are asked for right before each network operation and sent as basic auth
// (user "x-access-token"), never written into a remote URL or config file.
//
// A Repo is not safe for concurrent use.
package gitrepo

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage/memory"
)

// TokenUser is the basic-auth user name GitHub expects with an installation
// token.
const TokenUser = "x-access-token"

const remoteName = "origin"

// Auth hands out the token for the next network operation. It is called
// right before every clone, fetch, listing and push, because installation
// tokens expire after an hour.
type Auth interface {
	Token(ctx context.Context) (string, error)
}

// StaticToken is an Auth with a fixed token, e.g. a personal access token
// for development.
type StaticToken string

// Token returns the token itself.
func (t StaticToken) Token(context.Context) (string, error) { return string(t), nil }

// Options configures Open.
type Options struct {
	// URL is the clone URL: https://, http:// or file:// (or a plain local
	// path). It must not carry credentials.
	URL string
	// Dir is the cache directory for the clone, reused across cycles.
	Dir string
	// BaseBranch is the branch changes are built on. Empty means the
	// remote's default branch (its HEAD).
	BaseBranch string
	// Auth supplies the token for http(s) URLs; nil for anonymous access.
	// It is not used for local repositories.
	Auth Auth
	// AuthorName and AuthorEmail are kedge's identity: the author and
	// committer of every commit it makes, and how its commits are told
	// apart from anyone else's.
	AuthorName, AuthorEmail string
	// ObservePush, when set, is told of every push that tried the server
	// (branch updates and deletions alike), once, with how long it took
	// from connecting to the server's report or the failure, and the
	// push's error (nil when the server updated every branch sent).
	ObservePush func(took time.Duration, err error)
}

// Repo is an on-disk clone with the base branch checked out.
type Repo struct {
	opts       Options
	repo       *git.Repository
	endpoint   *transport.Endpoint
	baseBranch string
	baseTip    plumbing.Hash
	// remoteTips holds the remote branch tips kedge last saw, so that
	// PrepareBranch can tell an unchanged branch without going online.
	remoteTips map[string]plumbing.Hash
}

// Open clones opts.URL into opts.Dir on first use and fetches into the
// existing clone afterwards, then checks out the base branch's tip.
func Open(ctx context.Context, opts Options) (*Repo, error) {
	if err := validateOptions(opts); err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("gitrepo: %w", err)
	}
	opts.Dir = dir
	endpoint, err := transport.NewEndpoint(opts.URL)
	if err != nil {
		return nil, fmt.Errorf("gitrepo: parse repository URL %s: %w", redactURL(opts.URL), err)
	}
	switch endpoint.Protocol {
	case "http", "https", "file":
	default:
		return nil, fmt.Errorf("gitrepo: repository URL %s: unsupported protocol %q (use https, http or file)", redactURL(opts.URL), endpoint.Protocol)
	}

	r := &Repo{opts: opts, endpoint: endpoint, remoteTips: map[string]plumbing.Hash{}}
	r.baseBranch = opts.BaseBranch
	if r.baseBranch == "" {
		if r.baseBranch, err = r.remoteDefaultBranch(ctx); err != nil {
			return nil, err
		}
	}

	r.repo, err = openClone(dir)
	switch {
	case errors.Is(err, git.ErrRepositoryNotExists):
		if r.repo, err = r.clone(ctx); err != nil {
			return nil, err
		}
	case err != nil:
		return nil, fmt.Errorf("gitrepo: open %s: %w", dir, err)
	default:
		if err := r.pointOriginAtURL(); err != nil {
			return nil, err
		}
		if err := r.fetch(ctx, r.baseBranch); err != nil {
			return nil, err
		}
	}

	ref, err := r.repo.Reference(remoteRef(r.baseBranch), true)
	if err != nil {
		return nil, fmt.Errorf("gitrepo: base branch %q: %w", r.baseBranch, err)
	}
	r.baseTip = ref.Hash()
	if err := r.checkoutBase(); err != nil {
		return nil, err
	}
	return r, nil
}

// BaseBranch returns the branch changes are built on.
func (r *Repo) BaseBranch() string { return r.baseBranch }

// BaseTip returns the base branch's commit fetched by Open.
func (r *Repo) BaseTip() plumbing.Hash { return r.baseTip }

// Worktree returns the root of the checkout of BaseTip, for reading
// manifests. kedge never writes into it: branches are built from objects.
func (r *Repo) Worktree() string { return r.opts.Dir }

func validateOptions(opts Options) error {
	var missing []string
	for _, f := range []struct{ name, value string }{
		{"URL", opts.URL}, {"Dir", opts.Dir}, {"AuthorName", opts.AuthorName}, {"AuthorEmail", opts.AuthorEmail},
	} {
		if strings.TrimSpace(f.value) == "" {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("gitrepo: options %s must be set", strings.Join(missing, ", "))
	}
	if u, err := url.Parse(opts.URL); err == nil && u.User != nil {
		if _, hasPassword := u.User.Password(); hasPassword {
			return fmt.Errorf("gitrepo: repository URL %s carries a password; pass credentials through Auth", redactURL(opts.URL))
		}
	}
	if opts.BaseBranch != "" {
		if err := plumbing.NewBranchReferenceName(opts.BaseBranch).Validate(); err != nil {
			return fmt.Errorf("gitrepo: base branch %q: %w", opts.BaseBranch, err)
		}
	}
	return nil
}

// clone makes a shallow clone next to Dir and moves it into place, so Dir
// never holds a half-written clone after a crash.
func (r *Repo) clone(ctx context.Context) (*git.Repository, error) {
	dir := r.opts.Dir
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return nil, fmt.Errorf("gitrepo: %s is neither empty nor a Git repository", dir)
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return nil, fmt.Errorf("gitrepo: %w", err)
	}
	partial := dir + ".partial"
	if err := os.RemoveAll(partial); err != nil {
		return nil, fmt.Errorf("gitrepo: %w", err)
	}
	auth, token, err := r.auth(ctx)
	if err != nil {
		return nil, err
	}
	_, err = git.PlainCloneContext(ctx, partial, false, &git.CloneOptions{
		URL:           r.opts.URL,
		Auth:          auth,
		RemoteName:    remoteName,
		ReferenceName: plumbing.NewBranchReferenceName(r.baseBranch),
		SingleBranch:  true,
		Depth:         1,
		Tags:          git.NoTags,
		NoCheckout:    true,
	})
	if err != nil {
		_ = os.RemoveAll(partial)
		return nil, redact(withContext(ctx, fmt.Errorf("gitrepo: clone %s: %w", redactURL(r.opts.URL), err)), token)
	}
	_ = os.Remove(dir) // an empty directory may stand where the clone goes
	if err := os.Rename(partial, dir); err != nil {
		_ = os.RemoveAll(partial)
		return nil, fmt.Errorf("gitrepo: %w", err)
	}
	repo, err := openClone(dir)
	if err != nil {
		return nil, fmt.Errorf("gitrepo: open %s: %w", dir, err)
	}
	return repo, nil
}

// pointOriginAtURL follows a changed repository URL (a mirror, a GHE host
// rename) instead of failing on an old cache directory.
func (r *Repo) pointOriginAtURL() error {
	cfg, err := r.repo.Config()
	if err != nil {
		return fmt.Errorf("gitrepo: read config: %w", err)
	}
	origin, ok := cfg.Remotes[remoteName]
	if ok && len(origin.URLs) == 1 && origin.URLs[0] == r.opts.URL {
		return nil
	}
	cfg.Remotes[remoteName] = &config.RemoteConfig{
		Name:  remoteName,
		URLs:  []string{r.opts.URL},
		Fetch: []config.RefSpec{fetchSpec(r.baseBranch)},
	}
	if err := r.repo.SetConfig(cfg); err != nil {
		return fmt.Errorf("gitrepo: write config: %w", err)
	}
	return nil
}

// fetch brings branch's tip into refs/remotes/origin/<branch>, one commit
// deep: kedge only ever needs tips.
func (r *Repo) fetch(ctx context.Context, branch string) error {
	auth, token, err := r.auth(ctx)
	if err != nil {
		return err
	}
	err = r.repo.FetchContext(ctx, &git.FetchOptions{
		RemoteName: remoteName,
		RefSpecs:   []config.RefSpec{fetchSpec(branch)},
		Depth:      1,
		Auth:       auth,
		Tags:       git.NoTags,
		Force:      true,
	})
	switch {
	case err == nil, errors.Is(err, git.NoErrAlreadyUpToDate):
		return nil
	case isMissingRef(err):
		return fmt.Errorf("gitrepo: fetch %s: %w", branch, ErrBranchNotFound)
	default:
		return redact(withContext(ctx, fmt.Errorf("gitrepo: fetch %s from %s: %w", branch, redactURL(r.opts.URL), err)), token)
	}
}

func isMissingRef(err error) bool {
	var noMatch git.NoMatchingRefSpecError
	return errors.As(err, &noMatch)
}

// worktreeRef records the commit the worktree was last fully checked out at.
// HEAD cannot tell: it moves before the files are written.
const worktreeRef = plumbing.ReferenceName("refs/kedge/worktree")

// checkoutBase moves the worktree to the base tip unless it is there already,
// which saves resetting every file of a large repository each cycle.
func (r *Repo) checkoutBase() error {
	if ref, err := r.repo.Reference(worktreeRef, false); err == nil && ref.Hash() == r.baseTip {
		return nil
	}
	wt, err := r.repo.Worktree()
	if err != nil {
		return fmt.Errorf("gitrepo: worktree: %w", err)
	}
	if err := wt.Checkout(&git.CheckoutOptions{Hash: r.baseTip, Force: true}); err != nil {
		return fmt.Errorf("gitrepo: check out %s: %w", r.baseTip, err)
	}
	if err := r.repo.Storer.SetReference(plumbing.NewHashReference(worktreeRef, r.baseTip)); err != nil {
		return fmt.Errorf("gitrepo: record checkout: %w", err)
	}
	return nil
}

// remoteDefaultBranch reads the branch the remote's HEAD points at.
func (r *Repo) remoteDefaultBranch(ctx context.Context) (string, error) {
	refs, err := r.list(ctx)
	if err != nil {
		return "", err
	}
	for _, ref := range refs {
		if ref.Name() == plumbing.HEAD && ref.Type() == plumbing.SymbolicReference && ref.Target().IsBranch() {
			return ref.Target().Short(), nil
		}
	}
	return "", fmt.Errorf("gitrepo: %s does not name a default branch; set the base branch", redactURL(r.opts.URL))
}

// list is `git ls-remote`.
func (r *Repo) list(ctx context.Context) ([]*plumbing.Reference, error) {
	auth, token, err := r.auth(ctx)
	if err != nil {
		return nil, err
	}
	remote := git.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: remoteName, URLs: []string{r.opts.URL}})
	refs, err := remote.ListContext(ctx, &git.ListOptions{Auth: auth})
	if err != nil {
		return nil, redact(withContext(ctx, fmt.Errorf("gitrepo: list branches of %s: %w", redactURL(r.opts.URL), err)), token)
	}
	return refs, nil
}

// auth asks for a fresh token for an http(s) remote. The token is returned
// too, only so errors can be scrubbed of it.
func (r *Repo) auth(ctx context.Context) (transport.AuthMethod, string, error) {
	if r.opts.Auth == nil || (r.endpoint.Protocol != "http" && r.endpoint.Protocol != "https") {
		return nil, "", nil
	}
	token, err := r.opts.Auth.Token(ctx)
	if err != nil {
		return nil, "", fmt.Errorf("gitrepo: get token: %w", err)
	}
	return &githttp.BasicAuth{Username: TokenUser, Password: token}, token, nil
}

func fetchSpec(branch string) config.RefSpec {
	return config.RefSpec("+" + plumbing.NewBranchReferenceName(branch).String() + ":" + remoteRef(branch).String())
}

func remoteRef(branch string) plumbing.ReferenceName {
	return plumbing.NewRemoteReferenceName(remoteName, branch)
}

// withContext lets callers match a cancelled or timed-out operation with
// errors.Is even where a transport error does not wrap the context's error.
func withContext(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("%w (%w)", err, cerr)
	}
	return err
}

// redact removes token from err's message. Errors built by the transports do
// not carry it; this guards against one that does ever reaching a log.
func redact(err error, token string) error {
	if err == nil || token == "" || !strings.Contains(err.Error(), token) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), token, "[redacted]"))
}

func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "<unparsable URL>"
	}
	return u.Redacted()
}
