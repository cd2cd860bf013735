package doctor

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kedge-io/kedge/internal/assemble"
	"github.com/kedge-io/kedge/internal/cluster"
	"github.com/kedge-io/kedge/internal/config"
	"github.com/kedge-io/kedge/internal/gitrepo"
	"github.com/kedge-io/kedge/internal/mesh"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/route"
)

// The checks, by the name each line starts with.
const (
	checkConfig       = "configuration"
	checkKubernetes   = "kubernetes permissions"
	checkIstio        = "istio"
	checkLease        = "lease"
	checkGitHub       = "github credentials"
	checkRepositories = "repositories"
	checkDashboard    = "dashboard issue"
)

// Env is what the checks are made with, assembled as `kedge run` assembles
// the service.
type Env struct {
	// ConfigFile is the configuration file read, "" for none.
	ConfigFile string
	// Config is the validated configuration; nil when it is not valid,
	// and ConfigErr says why.
	Config    *config.Config
	ConfigErr error
	// Kube reaches the API server; nil with KubeErr when it cannot be
	// reached, or for a configuration that reads a snapshot.
	Kube    *rest.Config
	KubeErr error
	// ClusterPermissions lists what the live cluster source reads and may
	// not (cluster.Live.MissingPermissions).
	ClusterPermissions func(context.Context) ([]cluster.Permission, error)
	// Lease is the leader Lease, nil when server.leaderElection is off or
	// when LeaseErr says why it cannot be placed.
	Lease    *Lease
	LeaseErr error
	// HTTPClient reaches GitHub; nil for the default client.
	HTTPClient *http.Client
}

// Lease is where the leader Lease lives and what taking it needs.
type Lease struct {
	Namespace, Name string
	Permissions     []cluster.Permission
}

// checker carries what one check finds for the next ones.
type checker struct {
	env Env
	// kubeOK is set once the Kubernetes permissions hold.
	kubeOK bool
	// setup is the cluster's Istio and GitOps objects, read once.
	setup    *objects.Set
	setupErr error
	// access is what the credentials check found; nil when it failed.
	access *githubAccess
	// reachable holds the repositories the repository checks could clone.
	reachable map[string]bool
}

func configResult(env Env) Result {
	file := env.ConfigFile
	if file == "" {
		file = "defaults and KEDGE_* environment"
	}
	if env.Config == nil {
		fix := "correct the key; config/kedge.example.yaml documents every key"
		var cfgErr *config.Error
		if errors.As(env.ConfigErr, &cfgErr) && cfgErr.Key != "" {
			fix = "correct " + cfgErr.Key + "; config/kedge.example.yaml documents it"
		}
		return Result{Check: checkConfig, Status: Fail, Detail: fmt.Sprintf("%s: %v", file, env.ConfigErr), Fix: fix}
	}
	cfg := env.Config
	return Result{Check: checkConfig, Status: Pass, Detail: fmt.Sprintf("%s is valid: cluster %s, repository %s/%s", file, cfg.Cluster, cfg.Repo.Owner, cfg.Repo.Name)}
}

// noCluster is the result of a check that needs the live cluster when
// there is none to check.
func (c *checker) noCluster(check string) (Result, bool) {
	switch {
	case c.env.Kube != nil:
		return Result{}, false
	case c.env.KubeErr != nil:
		return Result{Check: check, Status: Fail, Detail: "cannot reach the cluster: " + c.env.KubeErr.Error(),
			Fix: "run doctor in the cluster with kedge's ServiceAccount, or set source.kubeconfig"}, true
	default:
		return Result{Check: check, Status: Skip, Detail: "source.snapshot reads a snapshot, not a cluster",
			Fix: "unset source.snapshot to check the cluster kedge will run against"}, true
	}
}

func (c *checker) kubernetes(ctx context.Context) Result {
	if r, none := c.noCluster(checkKubernetes); none {
		return r
	}
	missing, err := c.env.ClusterPermissions(ctx)
	if err != nil {
		return Result{Check: checkKubernetes, Status: Fail, Detail: "cannot ask the API server: " + err.Error(),
			Fix: "check that the API server is reachable with these credentials"}
	}
	if len(missing) > 0 {
		return Result{Check: checkKubernetes, Status: Fail, Detail: "missing permission " + permissionList(missing),
			Fix: "apply deploy/rbac.yaml (kubectl apply -k deploy/, or the Helm chart), which binds kedge's ServiceAccount to the ClusterRole that grants them"}
	}
	c.kubeOK = true
	return Result{Check: checkKubernetes, Status: Pass, Detail: "every list and watch kedge needs is granted (asked with SelfSubjectAccessReview)"}
}

func permissionList(ps []cluster.Permission) string {
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = p.String()
	}
	return strings.Join(parts, "; ")
}

// readSetup reads the cluster's Istio and GitOps objects once.
func (c *checker) readSetup(ctx context.Context) (*objects.Set, error) {
	if c.setup == nil && c.setupErr == nil {
		c.setup, c.setupErr = cluster.ReadSetup(ctx, c.env.Kube, nil)
	}
	return c.setup, c.setupErr
}

// unread is the result of a check whose cluster read failed: skipped when
// a permission it needs is missing, which the permissions check names.
func (c *checker) unread(check string, err error) Result {
	if apierrors.IsForbidden(err) && !c.kubeOK {
		return Result{Check: check, Status: Skip, Detail: "cannot read the cluster: forbidden", Fix: "grant the Kubernetes permissions above first"}
	}
	return Result{Check: check, Status: Fail, Detail: "cannot read the cluster: " + err.Error(), Fix: "check that the API server is reachable with these credentials"}
}

func (c *checker) istio(ctx context.Context) Result {
	if r, none := c.noCluster(checkIstio); none {
		return r
	}
	set, err := c.readSetup(ctx)
	if err != nil {
		return c.unread(checkIstio, err)
	}
	return istioResult(set)
}

// istioResult says which revisions and tags the cluster's injector
// objects make, and names what in them kedge cannot model.
func istioResult(set *objects.Set) Result {
	m := mesh.New(set.MutatingWebhookConfigurations, set.ConfigMaps, set.ProxyConfigs...)
	revisions := m.Revisions()
	if len(revisions) == 0 {
		return Result{Check: checkIstio, Status: Fail,
			Detail: "no sidecar injector found: no MutatingWebhookConfiguration has a *.sidecar-injector.istio.io webhook and no injector ConfigMap has the istio.io/rev label",
			Fix:    "install Istio's sidecar injector (istiod), or run kedge against the cluster that has it"}
	}
	var found, problems []string
	for _, r := range revisions {
		what := r.Name + " ("
		if r.Image != "" {
			what += r.Image + ", "
		}
		if r.ConfigMap != "" {
			what += "ConfigMap " + r.ConfigMap
		} else {
			what += "no injector ConfigMap"
		}
		found = append(found, what+")")
		switch {
		case r.HasWebhooks && r.Image == "":
			problems = append(problems, fmt.Sprintf("revision %s: its injector webhooks answer, but no readable injector ConfigMap says which proxy it injects", r.Name))
		case !r.HasWebhooks:
			problems = append(problems, fmt.Sprintf("revision %s: ConfigMap %s but no injector webhook, so no pod gets it", r.Name, r.ConfigMap))
		}
	}
	detail := "revisions " + strings.Join(found, ", ")
	if tags := m.Tags(); len(tags) > 0 {
		var named []string
		for _, tag := range slices.Sorted(maps.Keys(tags)) {
			named = append(named, tag+" → "+tags[tag])
		}
		detail += "; tags " + strings.Join(named, ", ")
	}
	problems = append(problems, m.Warnings()...)
	if len(problems) > 0 {
		return Result{Check: checkIstio, Status: Fail, Detail: detail + "; kedge cannot model: " + strings.Join(problems, "; "),
			Fix: "correct or remove these objects: kedge reads injection only from Istio's injector webhooks and ConfigMaps as istiod's charts install them"}
	}
	return Result{Check: checkIstio, Status: Pass, Detail: detail}
}

func (c *checker) lease(ctx context.Context) Result {
	if c.env.LeaseErr != nil {
		return Result{Check: checkLease, Status: Fail, Detail: c.env.LeaseErr.Error(), Fix: "set server.leaseNamespace to kedge's namespace"}
	}
	if c.env.Lease == nil {
		return Result{Check: checkLease, Status: Pass, Detail: "server.leaderElection is off: a single replica, no Lease"}
	}
	if r, none := c.noCluster(checkLease); none {
		return r
	}
	l := c.env.Lease
	where := l.Namespace + "/" + l.Name
	client, err := kubernetes.NewForConfig(c.env.Kube)
	if err != nil {
		return Result{Check: checkLease, Status: Fail, Detail: err.Error()}
	}
	if _, err := client.CoreV1().Namespaces().Get(ctx, l.Namespace, metav1.GetOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return Result{Check: checkLease, Status: Fail, Detail: fmt.Sprintf("Lease %s: namespace %s does not exist", where, l.Namespace),
				Fix: "create namespace " + l.Namespace + " (kedge's own), or set server.leaseNamespace to kedge's namespace"}
		}
		return c.unread(checkLease, err)
	}
	missing, err := cluster.CheckPermissions(ctx, c.env.Kube, l.Permissions)
	if err != nil {
		return Result{Check: checkLease, Status: Fail, Detail: "cannot ask the API server: " + err.Error()}
	}
	if len(missing) > 0 {
		return Result{Check: checkLease, Status: Fail, Detail: fmt.Sprintf("Lease %s: missing permission %s", where, permissionList(missing)),
			Fix: "apply deploy/rbac.yaml in namespace " + l.Namespace + " (kubectl apply -k deploy/, or the Helm chart)"}
	}
	return Result{Check: checkLease, Status: Pass, Detail: fmt.Sprintf("Lease %s: namespace %s exists; kedge may create, read and renew the Lease", where, l.Namespace)}
}

// repository is one repository kedge writes to.
type repository struct {
	name, cloneURL, branch string
}

// repositoriesOf are repo: and every repository the cluster applies from
// that a repos: rule admits.
func (c *checker) repositoriesOf(ctx context.Context) ([]repository, *Result) {
	cfg := c.env.Config
	own := cfg.Repo.Owner + "/" + cfg.Repo.Name
	repos := []repository{{name: own, cloneURL: assemble.CloneURL(cfg), branch: cfg.Repo.BaseBranch}}
	if len(cfg.Repos) == 0 {
		return repos, nil
	}
	if r, none := c.noCluster(checkRepositories); none {
		r.Detail = "repos: admits the repositories the cluster applies from: " + r.Detail
		return repos, &r
	}
	set, err := c.readSetup(ctx)
	if err != nil {
		r := c.unread(checkRepositories, err)
		r.Detail = "repos: admits the repositories the cluster applies from: " + r.Detail
		return repos, &r
	}
	targets, _ := route.Targets(set, assemble.Rules(cfg))
	for _, t := range targets {
		if strings.EqualFold(t.Repo, own) && (cfg.Repo.BaseBranch == "" || t.Branch == cfg.Repo.BaseBranch) {
			continue
		}
		repos = append(repos, repository{name: t.Repo, cloneURL: assemble.TargetCloneURL(cfg, t), branch: t.Branch})
	}
	return repos, nil
}

func (c *checker) repositories(ctx context.Context) []Result {
	repos, unlisted := c.repositoriesOf(ctx)
	c.reachable = map[string]bool{}
	var out []Result
	for _, repo := range repos {
		check := "repository " + repo.name
		if repo.branch != "" {
			check += "@" + repo.branch
		}
		branch, err := gitrepo.Probe(ctx, gitrepo.Options{URL: repo.cloneURL, BaseBranch: repo.branch, Auth: c.gitAuth()})
		if err != nil {
			// go-git ends some errors with an empty detail ("repository not
			// found: ").
			why := strings.TrimRight(err.Error(), ": ")
			out = append(out, Result{Check: check, Status: Fail, Detail: "cannot clone " + repo.cloneURL + ": " + why,
				Fix: "check that the repository exists under this name (repo.owner and repo.name, or the repos: rule) and that kedge's GitHub App is installed on it with Contents access"})
			continue
		}
		c.reachable[strings.ToLower(repo.name)] = true
		out = append(out, Result{Check: check, Status: Pass, Detail: fmt.Sprintf("reachable at %s; branch %s can be cloned", repo.cloneURL, branch)})
	}
	if unlisted != nil {
		out = append(out, *unlisted)
	}
	return out
}
