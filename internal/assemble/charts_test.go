package assemble

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	helmchart "helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kedge-io/kedge/internal/chartpull"
	"github.com/kedge-io/kedge/internal/config"
	"github.com/kedge-io/kedge/internal/gitops/chart"
	"github.com/kedge-io/kedge/internal/gitops/index"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/plan"
	"github.com/kedge-io/kedge/internal/render"
	"github.com/kedge-io/kedge/internal/sandbox"
	"github.com/kedge-io/kedge/internal/testing/dnstest"
)

// chartHosts stands in for chart repositories on the internet: every host
// resolves (through a DNS server on loopback) to a documentation address,
// and a proxy on loopback, the one thing kedge connects to, answers for
// each host from the charts it holds. Nothing leaves loopback, and the
// address rule sees public answers, as for a repository on the internet.
type chartHosts struct {
	proxy *url.URL
	dns   *dnstest.Server

	mu       sync.Mutex
	requests map[string][]string // host → paths asked
}

func newChartHosts(t *testing.T, charts map[string]map[string][]string) *chartHosts {
	t.Helper()
	h := &chartHosts{requests: map[string][]string{}}
	files := map[string][]byte{}
	answers := map[string][][]netip.Addr{}
	for host, byName := range charts {
		answers[host] = [][]netip.Addr{{netip.MustParseAddr("203.0.113.20")}}
		index := "apiVersion: v1\nentries:\n"
		for name, versions := range byName {
			index += "  " + name + ":\n"
			for _, v := range versions {
				archive := chartArchive(t, name, v)
				files[host+"/charts/"+name+"-"+v+".tgz"] = archive
				sum := sha256.Sum256(archive)
				index += fmt.Sprintf("    - version: %s\n      urls: [%s-%s.tgz]\n      digest: %s\n", v, name, v, hex.EncodeToString(sum[:]))
			}
		}
		files[host+"/charts/index.yaml"] = []byte(index)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.requests[r.URL.Hostname()] = append(h.requests[r.URL.Hostname()], r.URL.Path)
		h.mu.Unlock()
		if body, ok := files[r.URL.Hostname()+r.URL.Path]; ok {
			_, _ = w.Write(body)
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	h.proxy, _ = url.Parse(srv.URL)
	h.dns = dnstest.Start(t, answers)
	return h
}

func (h *chartHosts) puller(t *testing.T, allowed ...string) *chartpull.Puller {
	return &chartpull.Puller{Dir: t.TempDir(), Timeout: 5 * time.Second, AllowedHosts: allowed, Resolver: h.dns.Resolver(), Proxy: http.ProxyURL(h.proxy)}
}

func (h *chartHosts) asked(host string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.requests[host]
}

func chartArchive(t *testing.T, name, version string) []byte {
	t.Helper()
	c := &helmchart.Chart{
		Metadata:  &helmchart.Metadata{APIVersion: helmchart.APIVersionV2, Name: name, Version: version},
		Templates: []*helmchart.File{{Name: "templates/cm.yaml", Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n")}},
	}
	file, err := chartutil.Save(c, t.TempDir())
	require.NoError(t, err)
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	return data
}

func meta(namespace, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: namespace, Name: name}
}

func helmApp(namespace, name, project, repoURL, chartName, version string) objects.Application {
	return objects.Application{ObjectMeta: meta(namespace, name), Spec: objects.ApplicationSpec{
		Project: project, Source: &objects.ApplicationSource{RepoURL: repoURL, Chart: chartName, TargetRevision: version},
	}}
}

const helmRelease = `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: %s
  namespace: shop
spec:
  chart:
    spec:
      chart: %s
      version: %q
      sourceRef: {kind: HelmRepository, name: charts, namespace: flux-system}
`

const repositoryApp = `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: %s
  namespace: argocd
spec:
  project: default
  destination: {server: "https://kubernetes.default.svc", namespace: shop}
  source: {repoURL: %q, chart: %s, targetRevision: 1.0.0}
`

// checkout indexes a checkout of the files (slash paths → content).
func checkout(t *testing.T, files map[string]string) *index.Index {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	ix, err := plan.Open(dir, nil, 0)
	require.NoError(t, err)
	return ix
}

// TestChartPullPolicy: what a repository's writers commit chooses charts,
// never hosts: a pull starts only at a host the cluster's HelmRepositories,
// OCIRepositories or (AppProject-admitted) Applications name, or that
// helm.allowedHosts lists, and a version that is not one is refused with
// the object asking for it named.
func TestChartPullPolicy(t *testing.T) {
	hosts := newChartHosts(t, map[string]map[string][]string{
		"charts.example.com":    {"podinfo": {"1.0.0"}},
		"apps.example.com":      {"redis": {"1.0.0"}},
		"evil.example.net":      {"podinfo": {"1.0.0"}},
		"team.example.com":      {"redis": {"1.0.0"}},
		"mirror.corp.example":   {"podinfo": {"1.0.0"}},
		"forbidden.example.com": {"redis": {"1.0.0"}},
	})
	cluster := func() *objects.Set {
		return &objects.Set{HelmRepositories: []objects.HelmRepository{{ObjectMeta: meta("flux-system", "charts"), Spec: objects.HelmRepositorySpec{URL: "http://charts.example.com/charts"}}}}
	}
	tests := []struct {
		name       string
		set        func() *objects.Set
		files      map[string]string
		allowed    []string
		key        string
		wantPulled bool
		wantErr    []string
		wantLog    []string
		unasked    string
	}{
		{
			name:  "a HelmRelease of a HelmRepository the cluster names",
			set:   cluster,
			files: map[string]string{"apps/podinfo.yaml": fmt.Sprintf(helmRelease, "podinfo", "podinfo", "1.0.0")},
			key:   chart.Key("http://charts.example.com/charts", "podinfo", "1.0.0"), wantPulled: true,
		},
		{
			name: "a Helm source of an Application of the cluster",
			set: func() *objects.Set {
				return &objects.Set{Applications: []objects.Application{helmApp("argocd", "redis", "", "http://apps.example.com/charts", "redis", "1.0.0")}}
			},
			key: chart.Key("http://apps.example.com/charts", "redis", "1.0.0"), wantPulled: true,
		},
		{
			name:    "an Application the repository writes, standing in for the cluster's, at a host the cluster does not name",
			set:     cluster,
			files:   map[string]string{"argocd/podinfo.yaml": fmt.Sprintf(repositoryApp, "podinfo", "http://evil.example.net/charts", "podinfo")},
			key:     chart.Key("http://evil.example.net/charts", "podinfo", "1.0.0"),
			wantErr: []string{"evil.example.net is not a host the cluster names for charts", "list it in helm.allowedHosts"},
			wantLog: []string{"Argo CD Application argocd/podinfo"},
			unasked: "evil.example.net",
		},
		{
			name:  "an Application the repository writes, at a host a HelmRepository names",
			set:   cluster,
			files: map[string]string{"argocd/podinfo.yaml": fmt.Sprintf(repositoryApp, "podinfo", "http://charts.example.com/charts", "podinfo")},
			key:   chart.Key("http://charts.example.com/charts", "podinfo", "1.0.0"), wantPulled: true,
		},
		{
			name:    "an Application the repository writes, at a host helm.allowedHosts lists",
			set:     cluster,
			files:   map[string]string{"argocd/podinfo.yaml": fmt.Sprintf(repositoryApp, "podinfo", "http://mirror.corp.example/charts", "podinfo")},
			allowed: []string{"*.corp.example"},
			key:     chart.Key("http://mirror.corp.example/charts", "podinfo", "1.0.0"), wantPulled: true,
		},
		{
			name: "an Application whose AppProject's sourceRepos do not admit the source",
			set: func() *objects.Set {
				return &objects.Set{
					Applications: []objects.Application{helmApp("argocd", "redis", "team", "http://forbidden.example.com/charts", "redis", "1.0.0")},
					AppProjects:  []objects.AppProject{{ObjectMeta: meta("argocd", "team"), Spec: objects.AppProjectSpec{SourceRepos: []string{"http://team.example.com/*"}}}},
				}
			},
			key:     chart.Key("http://forbidden.example.com/charts", "redis", "1.0.0"),
			wantErr: []string{"AppProject argocd/team does not admit http://forbidden.example.com/charts as a source (spec.sourceRepos)"},
			unasked: "forbidden.example.com",
		},
		{
			name: "an Application its AppProject admits",
			set: func() *objects.Set {
				return &objects.Set{
					Applications: []objects.Application{helmApp("argocd", "redis", "team", "http://team.example.com/charts", "redis", "1.0.0")},
					AppProjects:  []objects.AppProject{{ObjectMeta: meta("argocd", "team"), Spec: objects.AppProjectSpec{SourceRepos: []string{"http://team.example.com/*"}}}},
				}
			},
			key: chart.Key("http://team.example.com/charts", "redis", "1.0.0"), wantPulled: true,
		},
		{
			name:    "a HelmRelease whose version climbs out of the cache",
			set:     cluster,
			files:   map[string]string{"apps/podinfo.yaml": fmt.Sprintf(helmRelease, "podinfo", "podinfo", "1.0.0/../../../x")},
			key:     chart.Key("http://charts.example.com/charts", "podinfo", "1.0.0/../../../x"),
			wantErr: []string{`version "1.0.0/../../../x" is neither a semver version nor a semver range`},
			wantLog: []string{"HelmRelease shop/podinfo (apps/podinfo.yaml)", `version \"1.0.0/../../../x\" is neither`},
		},
		{
			name:    "a HelmRelease whose chart name climbs out of the cache",
			set:     cluster,
			files:   map[string]string{"apps/podinfo.yaml": fmt.Sprintf(helmRelease, "podinfo", "../../podinfo", "1.0.0")},
			key:     chart.Key("http://charts.example.com/charts", "../../podinfo", "1.0.0"),
			wantErr: []string{`chart name "../../podinfo" is not a Helm chart name`},
			wantLog: []string{"HelmRelease shop/podinfo (apps/podinfo.yaml)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ix *index.Index
			if tt.files != nil {
				ix = checkout(t, tt.files)
			}
			var logged bytes.Buffer
			pulls := &ChartPulls{Puller: hosts.puller(t, tt.allowed...), Log: slog.New(slog.NewTextHandler(&logged, nil))}
			var before int
			if tt.unasked != "" {
				before = len(hosts.asked(tt.unasked))
			}
			got := pulls.Pull(context.Background(), tt.set(), ix)
			require.Contains(t, got, tt.key)
			if tt.wantPulled {
				assert.Empty(t, got[tt.key].Error)
				assert.FileExists(t, got[tt.key].Archive)
				return
			}
			assert.Empty(t, got[tt.key].Archive)
			for _, want := range tt.wantErr {
				assert.Contains(t, got[tt.key].Error, want)
			}
			for _, want := range tt.wantLog {
				assert.Contains(t, logged.String(), want)
			}
			if tt.unasked != "" {
				assert.Len(t, hosts.asked(tt.unasked), before, "no request reached %s", tt.unasked)
				assert.Zero(t, hosts.dns.Asked(tt.unasked), "not even a DNS question for %s", tt.unasked)
			}
		})
	}
}

// TestChartPullsReadAnIndexOncePerCycle: twenty-one HelmReleases of one
// HelmRepository, in the two repositories a cycle plans, read its index
// once; the next cycle (a new cluster Set) reads it again.
func TestChartPullsReadAnIndexOncePerCycle(t *testing.T) {
	charts := map[string][]string{}
	platform, team := map[string]string{}, map[string]string{}
	for i := range 21 {
		name := fmt.Sprintf("app-%d", i)
		charts[name] = []string{"1.0.0", "1.1.0"}
		files := platform
		if i%2 == 1 {
			files = team
		}
		files["apps/"+name+".yaml"] = fmt.Sprintf(helmRelease, name, name, "~1.0")
	}
	hosts := newChartHosts(t, map[string]map[string][]string{"charts.example.com": charts})
	set := func() *objects.Set {
		return &objects.Set{HelmRepositories: []objects.HelmRepository{{ObjectMeta: meta("flux-system", "charts"), Spec: objects.HelmRepositorySpec{URL: "http://charts.example.com/charts"}}}}
	}
	indexes := func() int {
		n := 0
		for _, p := range hosts.asked("charts.example.com") {
			if strings.HasSuffix(p, "/index.yaml") {
				n++
			}
		}
		return n
	}
	pulls := &ChartPulls{Puller: hosts.puller(t)}
	platformIndex, teamIndex := checkout(t, platform), checkout(t, team)
	for cycle := 1; cycle <= 2; cycle++ {
		s := set()
		pulled := pulls.Pull(context.Background(), s, platformIndex)
		for k, v := range pulls.Pull(context.Background(), s, teamIndex) {
			pulled[k] = v
		}
		require.Len(t, pulled, 21)
		for key, p := range pulled {
			assert.Empty(t, p.Error, key)
		}
		assert.Equal(t, cycle, indexes(), "one index read per cycle")
	}
}

// TestClusterChartHosts: only the cluster's own objects name hosts, and an
// Application's Helm source names its host only when its AppProject admits
// it.
func TestClusterChartHosts(t *testing.T) {
	set := &objects.Set{
		HelmRepositories: []objects.HelmRepository{{ObjectMeta: meta("flux-system", "bitnami"), Spec: objects.HelmRepositorySpec{URL: "https://Charts.Bitnami.com/bitnami"}}},
		OCIRepositories:  []objects.OCIRepository{{ObjectMeta: meta("flux-system", "podinfo"), Spec: objects.OCIRepositorySpec{URL: "oci://ghcr.io/stefanprodan/charts/podinfo"}}},
		Applications: []objects.Application{
			helmApp("argocd", "redis", "", "registry-1.docker.io/bitnamicharts", "redis", "19.0.0"),
			helmApp("argocd", "denied", "team", "https://charts.other.example/stable", "x", "1.0.0"),
			helmApp("argocd", "admitted", "team", "https://charts.team.example/stable", "x", "1.0.0"),
			{ObjectMeta: meta("argocd", "git"), Spec: objects.ApplicationSpec{Source: &objects.ApplicationSource{RepoURL: "https://git.example.com/fleet", Path: "apps"}}},
		},
		AppProjects: []objects.AppProject{{ObjectMeta: meta("argocd", "team"), Spec: objects.AppProjectSpec{SourceRepos: []string{"https://charts.team.example/*"}}}},
	}
	assert.Equal(t, chartpull.Hosts{
		"charts.bitnami.com":   "HelmRepository flux-system/bitnami",
		"ghcr.io":              "OCIRepository flux-system/podinfo",
		"registry-1.docker.io": "Argo CD Application argocd/redis",
		"charts.team.example":  "Argo CD Application argocd/admitted",
	}, ClusterChartHosts(set))
}

// TestSourcePermitted follows Argo CD's AppProject.IsSourcePermitted.
func TestSourcePermitted(t *testing.T) {
	project := func(namespace, name string, repos ...string) objects.AppProject {
		return objects.AppProject{ObjectMeta: meta(namespace, name), Spec: objects.AppProjectSpec{SourceRepos: repos}}
	}
	tests := []struct {
		name     string
		projects []objects.AppProject
		app      objects.Application
		repoURL  string
		want     bool
	}{
		{name: "no AppProject known", app: helmApp("argocd", "a", "team", "", "", ""), repoURL: "https://anything.example/x", want: true},
		{name: "everything", projects: []objects.AppProject{project("argocd", "default", "*")}, app: helmApp("argocd", "a", "", "", "", ""), repoURL: "https://anything.example/x", want: true},
		{name: "a glob, with case and .git normalised", projects: []objects.AppProject{project("argocd", "team", "https://github.com/Acme/*")}, app: helmApp("argocd", "a", "team", "", "", ""), repoURL: "https://GitHub.com/acme/charts.git", want: true},
		{name: "a glob stops at /", projects: []objects.AppProject{project("argocd", "team", "https://github.com/acme/*")}, app: helmApp("argocd", "a", "team", "", "", ""), repoURL: "https://github.com/acme/charts/sub", want: false},
		{name: "** crosses /", projects: []objects.AppProject{project("argocd", "team", "https://github.com/acme/**")}, app: helmApp("argocd", "a", "team", "", "", ""), repoURL: "https://github.com/acme/charts/sub", want: true},
		{name: "not listed", projects: []objects.AppProject{project("argocd", "team", "https://charts.team.example/*")}, app: helmApp("argocd", "a", "team", "", "", ""), repoURL: "https://evil.example/x", want: false},
		{name: "a deny entry", projects: []objects.AppProject{project("argocd", "team", "*", "!https://evil.example/*")}, app: helmApp("argocd", "a", "team", "", "", ""), repoURL: "https://evil.example/x", want: false},
		{name: "a deny entry alone admits the rest", projects: []objects.AppProject{project("argocd", "team", "!https://evil.example/*")}, app: helmApp("argocd", "a", "team", "", "", ""), repoURL: "https://good.example/x", want: true},
		{name: "an OCI source without scheme", projects: []objects.AppProject{project("argocd", "team", "registry-1.docker.io/bitnamicharts")}, app: helmApp("argocd", "a", "team", "", "", ""), repoURL: "registry-1.docker.io/bitnamicharts", want: true},
		{name: "an scp-like SSH address", projects: []objects.AppProject{project("argocd", "team", "git@github.com:acme/*")}, app: helmApp("argocd", "a", "team", "", "", ""), repoURL: "ssh://git@github.com/acme/charts.git", want: true},
		{name: "the project in the Application's namespace comes first", projects: []objects.AppProject{project("other", "team", "*"), project("argocd", "team", "https://charts.team.example/*")}, app: helmApp("argocd", "a", "team", "", "", ""), repoURL: "https://evil.example/x", want: false},
		{name: "a project in Argo CD's namespace governs an Application elsewhere", projects: []objects.AppProject{project("argocd", "team", "https://charts.team.example/*")}, app: helmApp("team-a", "a", "team", "", "", ""), repoURL: "https://evil.example/x", want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, sourcePermitted(projectOf(&tt.app, tt.projects), tt.repoURL))
		})
	}
}

// TestRenderBudgetsDefaultToTheSandboxs: the configuration's defaults are
// the render workers' and the chart budget's own, and the configured
// budgets become the process's.
func TestRenderBudgetsDefaultToTheSandboxs(t *testing.T) {
	cfg := loadConfig(t, "")
	limits, err := RenderLimits(cfg)
	require.NoError(t, err)
	assert.Equal(t, sandbox.DefaultLimits, sandbox.NewPool(limits).Limits())
	assert.Equal(t, int64(render.DefaultMaxChartBytes), MaxChartBytes(cfg))
	assert.Equal(t, int64(render.DefaultMaxChartBytes), PlanOptions(cfg, "").MaxChartBytes)

	t.Cleanup(func() { sandbox.SetDefault(sandbox.DefaultLimits) })
	cfg = loadConfig(t, "render: {timeout: 45s, memory: 512Mi, workers: 1}\nhelm: {maxChartSize: 2Mi}\n")
	require.NoError(t, ConfigureRendering(cfg))
	assert.Equal(t, sandbox.Limits{Timeout: 45 * time.Second, Memory: 512 << 20, Workers: 1}, sandbox.Default().Limits())
	assert.Equal(t, int64(2<<20), PlanOptions(cfg, "").MaxChartBytes)
}

func loadConfig(t *testing.T, content string) *config.Config {
	t.Helper()
	file := ""
	if content != "" {
		file = filepath.Join(t.TempDir(), "kedge.yaml")
		require.NoError(t, os.WriteFile(file, []byte(content), 0o600))
	}
	cfg, err := config.Load(file, nil, nil)
	require.NoError(t, err)
	require.NoError(t, cfg.Validate(config.ModePlan))
	return cfg
}
