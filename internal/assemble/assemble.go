// Package assemble assembles kedge from its configuration: the GitHub client, the
// git repository, the renderer and the cluster source, wired into a
// reconciler. The CLI and the demo share it.
package assemble

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kedge-io/kedge/internal/config"
	"github.com/kedge-io/kedge/internal/dashboard"
	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/forge"
	"github.com/kedge-io/kedge/internal/gitops/restart"
	"github.com/kedge-io/kedge/internal/gitrepo"
	"github.com/kedge-io/kedge/internal/migrate"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/plan"
	"github.com/kedge-io/kedge/internal/reconcile"
	"github.com/kedge-io/kedge/internal/route"
	"github.com/kedge-io/kedge/internal/waves"
)

// Source reads the cluster once per cycle.
type Source func(context.Context) (*objects.Set, error)

// Options are what the configuration does not say.
type Options struct {
	DryRun bool
	Log    *slog.Logger
	// Now is the clock cycles read (merge times, soak times); nil is the
	// wall clock.
	Now func() time.Time
	// ObservePush is told of every git push to every repository (see
	// gitrepo.Options.ObservePush); nil for none.
	ObservePush func(took time.Duration, err error)
}

// Service is an assembled kedge.
type Service struct {
	Reconciler *reconcile.Reconciler
	Forge      *forge.Client
}

// PlanOptions maps the configuration onto planning options; repoRoot is
// a checkout, or empty for none.
func PlanOptions(cfg *config.Config, repoRoot string) plan.Options {
	return plan.Options{
		Drift: drift.Options{
			Cluster:           cfg.Cluster,
			IncludeNamespaces: cfg.Namespaces.Include,
			ExcludeNamespaces: cfg.Namespaces.Exclude,
			Kinds:             cfg.Workloads.Kinds,
			OptOutAnnotation:  cfg.Workloads.OptOutAnnotation,
			Images:            cfg.Images.Identity(),
		},
		RepoRoot:    repoRoot,
		RepoURLs:    RepoURLs(cfg),
		Paths:       cfg.Repo.Paths,
		Annotations: restart.Annotations{Restart: cfg.Restart.Annotation, Target: cfg.Restart.TargetAnnotation},
		HelmValues:  cfg.Helm.Prefer == config.HelmPreferValues,
		Migrations:  MigrationPolicies(cfg),
		// A chart larger than this, uncompressed with its subcharts, is
		// over budget and not rendered.
		MaxChartBytes: MaxChartBytes(cfg),
	}
}

// Waves maps the waves key.
func Waves(cfg *config.Config) []waves.Wave {
	out := make([]waves.Wave, 0, len(cfg.Waves))
	for _, w := range cfg.Waves {
		out = append(out, waves.Wave{
			Name: w.Name, Names: w.Namespaces, Labels: w.NamespaceSelector,
			Soak: w.Soak, MaxUnhealthy: w.MaxUnhealthy, MaxProxyRestarts: w.MaxProxyRestarts,
		})
	}
	return out
}

// MigrationPolicies maps the migrations key; each policy keeps its key so
// that a target the mesh does not know is reported as
// "migrations[i].to".
func MigrationPolicies(cfg *config.Config) []migrate.Policy {
	out := make([]migrate.Policy, 0, len(cfg.Migrations))
	for i, m := range cfg.Migrations {
		out = append(out, migrate.Policy{
			Key: fmt.Sprintf("migrations[%d]", i), From: m.From, To: m.To,
			NamespaceSelector: m.Namespaces, OptOutLabel: m.OptOutLabel, Waypoint: m.Waypoint,
		})
	}
	return out
}

// RepoURLs are the addresses GitOps controllers in the cluster may use for
// the repository: its GitHub address (also github.com's, for a GitHub
// Enterprise mirror of a public repository) and the clone URL kedge uses.
func RepoURLs(cfg *config.Config) []string {
	var out []string
	if cfg.Repo.Owner != "" && cfg.Repo.Name != "" {
		out = append(out, WebURL(cfg), "https://github.com/"+cfg.Repo.Owner+"/"+cfg.Repo.Name)
	}
	if cfg.Repo.URL != "" {
		out = append(out, cfg.Repo.URL)
	}
	return out
}

// WebURL is the repository's web address: github.com for the public API,
// the API's host for GitHub Enterprise Server (https://HOST/api/v3/).
func WebURL(cfg *config.Config) string {
	host := "https://github.com"
	if u, err := url.Parse(cfg.GitHub.APIURL); err == nil && u.Host != "" && u.Host != "api.github.com" {
		host = u.Scheme + "://" + u.Host
	}
	return host + "/" + cfg.Repo.Owner + "/" + cfg.Repo.Name
}

// CloneURL is repo.url, else the web address with .git.
func CloneURL(cfg *config.Config) string {
	if cfg.Repo.URL != "" {
		return cfg.Repo.URL
	}
	return WebURL(cfg) + ".git"
}

// CacheDir is where the repository is cloned and reused across cycles.
func CacheDir(cfg *config.Config) (string, error) {
	if cfg.Git.CacheDir != "" {
		return filepath.Join(cfg.Git.CacheDir, cfg.Cluster), nil
	}
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	safe := strings.NewReplacer("/", "_", ":", "_").Replace(cfg.Repo.Owner + "_" + cfg.Repo.Name)
	return filepath.Join(base, "kedge", cfg.Cluster, safe), nil
}

// New assembles the service. cfg must have passed Validate(ModeRun).
func New(ctx context.Context, cfg *config.Config, source Source, opts Options) (*Service, error) {
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := ConfigureRendering(cfg); err != nil {
		return nil, err
	}
	renderer, err := dashboard.NewRenderer(cfg.Templates.Dir)
	if err != nil {
		return nil, &config.Error{Key: "templates.dir", Msg: err.Error()}
	}
	// One pool for every repository: they share the write pacing and the
	// installation tokens.
	pool, err := forge.NewPool(ctx, forge.Config{
		APIURL: cfg.GitHub.APIURL, Token: cfg.GitHub.Token, AppID: cfg.GitHub.AppID,
		InstallationID: cfg.GitHub.InstallationID, PrivateKeyFile: cfg.GitHub.PrivateKeyFile,
		MinMutationGap: cfg.Limits.MutationGap, MaxRetryAfter: cfg.Limits.MaxRetryAfter,
	})
	if err != nil {
		return nil, fmt.Errorf("github: %w", err)
	}
	client, err := pool.Client(ctx, cfg.Repo.Owner, cfg.Repo.Name)
	if err != nil {
		return nil, fmt.Errorf("github: %w", err)
	}
	dir, err := CacheDir(cfg)
	if err != nil {
		return nil, err
	}
	gitOpts := gitrepo.Options{
		URL: CloneURL(cfg), Dir: dir, BaseBranch: cfg.Repo.BaseBranch, Auth: gitAuth{client},
		AuthorName: cfg.Git.AuthorName, AuthorEmail: cfg.Git.AuthorEmail, ObservePush: opts.ObservePush,
	}
	settings := reconcile.Settings{
		Cluster:              cfg.Cluster,
		Plan:                 PlanOptions(cfg, ""),
		RepoWebURL:           WebURL(cfg),
		Labels:               cfg.PR.Labels,
		Draft:                cfg.PR.Draft,
		MaxOpenPRs:           cfg.Limits.MaxOpenPRs,
		MaxNewPRsPerCycle:    cfg.Limits.MaxNewPRsPerCycle,
		ReviewersKey:         cfg.Reviewers.NamespaceKey,
		ReviewersByNamespace: cfg.Reviewers.ByNamespace,
		Grace:                cfg.Rollout.Grace,
		Waves:                Waves(cfg),
		ResumeLabel:          cfg.Rollout.ResumeLabel,
		DryRun:               opts.DryRun,
		Rules:                Rules(cfg),
	}
	puller, err := ChartPuller(cfg)
	if err != nil {
		return nil, err
	}
	charts := &ChartPulls{Puller: puller, Log: log}
	rec := reconcile.New(settings, reconcile.Deps{
		Source:   source,
		Charts:   charts.Pull,
		OpenRepo: func(ctx context.Context) (*gitrepo.Repo, error) { return gitrepo.Open(ctx, gitOpts) },
		Forge:    client,
		OpenTarget: func(ctx context.Context, t route.Target) (*gitrepo.Repo, error) {
			return openTarget(ctx, cfg, pool, t, opts.ObservePush)
		},
		ForgeFor: func(ctx context.Context, repo string) (*forge.Client, error) {
			owner, name, _ := strings.Cut(repo, "/")
			return pool.Client(ctx, owner, name)
		},
		Renderer: renderer,
		Log:      log,
		Now:      opts.Now,
	})
	return &Service{Reconciler: rec, Forge: client}, nil
}

// Rules are the repositories kedge may write to (see RouteRules); nil
// without repos:, when kedge writes to repo: alone as it always has.
func Rules(cfg *config.Config) []route.Rule {
	if len(cfg.Repos) == 0 {
		return nil
	}
	return RouteRules(cfg)
}

// TargetCloneURL is how kedge clones a repository the rules admit: the
// rule's cloneURL with {owner} and {name} replaced, else the repository's
// address on the GitHub web host. It never carries a token.
func TargetCloneURL(cfg *config.Config, t route.Target) string {
	if u := t.Rule.CloneURLFor(t.Repo); u != "" {
		return u
	}
	host := strings.TrimSuffix(WebURL(cfg), "/"+cfg.Repo.Owner+"/"+cfg.Repo.Name)
	return host + "/" + t.Repo + ".git"
}

// TargetCacheDir is the clone of one repository branch, reused across
// cycles. It sits beside repo:'s clone, never inside its worktree.
func TargetCacheDir(cfg *config.Config, t route.Target) (string, error) {
	base := ""
	if cfg.Git.CacheDir != "" {
		base = filepath.Join(cfg.Git.CacheDir, cfg.Cluster+"-repos")
	} else {
		dir, err := os.UserCacheDir()
		if err != nil {
			dir = os.TempDir()
		}
		base = filepath.Join(dir, "kedge", cfg.Cluster+"-repos")
	}
	branch := t.Branch
	if branch == "" {
		branch = "default"
	}
	safe := strings.NewReplacer("/", "_", ":", "_", "\\", "_").Replace(t.Repo + "@" + branch)
	return filepath.Join(base, safe), nil
}

func openTarget(ctx context.Context, cfg *config.Config, pool *forge.Pool, t route.Target, observePush func(time.Duration, error)) (*gitrepo.Repo, error) {
	dir, err := TargetCacheDir(cfg, t)
	if err != nil {
		return nil, err
	}
	owner, name, _ := strings.Cut(t.Repo, "/")
	client, err := pool.Client(ctx, owner, name)
	if err != nil {
		return nil, err
	}
	return gitrepo.Open(ctx, gitrepo.Options{
		URL: TargetCloneURL(cfg, t), Dir: dir, BaseBranch: t.Branch, Auth: gitAuth{client},
		AuthorName: cfg.Git.AuthorName, AuthorEmail: cfg.Git.AuthorEmail, ObservePush: observePush,
	})
}

// gitAuth hands git a fresh installation token before each clone, fetch
// and push (tokens live an hour).
type gitAuth struct{ client *forge.Client }

func (a gitAuth) Token(ctx context.Context) (string, error) { return a.client.GitToken(ctx) }
