package config

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func writeConfig(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kedge.yaml")
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	return path
}

func keyFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "app.pem")
	require.NoError(t, os.WriteFile(path, []byte("key"), 0o600))
	return path
}

const validRun = `
cluster: prod-eu-1
repo: {owner: example-org, name: gitops}
github: {token: t0ken}
`

func TestExampleDocumentsEveryKey(t *testing.T) {
	data, err := os.ReadFile("../../config/kedge.example.yaml")
	require.NoError(t, err)
	text := string(data)
	for _, key := range Keys() {
		leaf := key[strings.LastIndex(key, ".")+1:]
		assert.Regexp(t, regexp.MustCompile(`(?m)^\s*`+regexp.QuoteMeta(leaf)+`:`), text, "key %s is not documented", key)
	}
	cfg, err := Load("../../config/kedge.example.yaml", nil, nil)
	require.NoError(t, err)
	assert.Equal(t, "prod-eu-1", cfg.Cluster)
	assert.Equal(t, time.Second, cfg.Limits.MutationGap)
}

func TestDefaults(t *testing.T) {
	cfg, err := Load("", nil, nil)
	require.NoError(t, err)
	assert.Equal(t, "kedge.io/restartedAt", cfg.Restart.Annotation)
	assert.Equal(t, HelmPreferPostRenderer, cfg.Helm.Prefer)
	assert.Equal(t, "https://api.github.com/", cfg.GitHub.APIURL)
	assert.Equal(t, []string{"Deployment", "StatefulSet", "DaemonSet", "Rollout"}, cfg.Workloads.Kinds)
	assert.Equal(t, 10*time.Second, cfg.Cycle.Debounce)
	require.NoError(t, cfg.Validate(ModePlan))
	assert.Error(t, cfg.Validate(ModeRun), "run needs cluster, repo and credentials")
}

// images.mirrors keys are registry hosts and paths, dots included, which
// must not be read as nested keys.
func TestImageMirrors(t *testing.T) {
	cfg, err := Load("", nil, nil)
	require.NoError(t, err)
	assert.True(t, cfg.Images.CompareRegistry)
	assert.Empty(t, cfg.Images.Mirrors)

	file := writeConfig(t, "images:\n  compareRegistry: false\n  mirrors:\n    mirror.corp/istio: docker.io/istio\n    registry.corp:5000: docker.io\n")
	// viper walks its keys in map order: each load takes another path.
	for range 20 {
		cfg, err = Load(file, nil, nil)
		require.NoError(t, err)
		require.NoError(t, cfg.Validate(ModePlan))
		assert.False(t, cfg.Images.CompareRegistry)
		assert.Equal(t, map[string]string{"mirror.corp/istio": "docker.io/istio", "registry.corp:5000": "docker.io"}, cfg.Images.Mirrors)
	}

	t.Setenv("KEDGE_IMAGES_MIRRORS", "mirror.corp/istio=docker.io/istio, quay.corp=quay.io")
	cfg, err = Load("", nil, nil)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"mirror.corp/istio": "docker.io/istio", "quay.corp": "quay.io"}, cfg.Images.Mirrors)
	t.Setenv("KEDGE_IMAGES_MIRRORS", "mirror.corp/istio")
	_, err = Load("", nil, nil)
	var cerr *Error
	require.ErrorAs(t, err, &cerr)
	assert.Equal(t, "images.mirrors", cerr.Key)
}

func TestPrecedenceFileEnvFlag(t *testing.T) {
	file := writeConfig(t, "cluster: c\ngithub: {token: t}\nrepo: {owner: from-file, name: gitops, baseBranch: main}\nlimits: {maxOpenPRs: 5}\n")
	t.Setenv("KEDGE_REPO_OWNER", "from-env")
	t.Setenv("KEDGE_LIMITS_MUTATIONGAP", "250ms")
	t.Setenv("KEDGE_NAMESPACES_INCLUDE", "team-*,shop")
	flags := pflag.NewFlagSet("test", pflag.ContinueOnError)
	flags.String("cluster", "", "")
	require.NoError(t, flags.Parse([]string{"--cluster=from-flag"}))

	cfg, err := Load(file, flags, map[string]string{"cluster": "cluster"})
	require.NoError(t, err)
	assert.Equal(t, "from-flag", cfg.Cluster)
	assert.Equal(t, "from-env", cfg.Repo.Owner)
	assert.Equal(t, "main", cfg.Repo.BaseBranch)
	assert.Equal(t, 5, cfg.Limits.MaxOpenPRs)
	assert.Equal(t, 250*time.Millisecond, cfg.Limits.MutationGap)
	assert.Equal(t, []string{"team-*", "shop"}, cfg.Namespaces.Include)
}

func TestBadConfigNamesTheKey(t *testing.T) {
	tests := []struct {
		name    string
		content string
		mode    Mode
		wantKey string
	}{
		{"unknown key", "cluster: c\nrepo: {owner: o, name: n, branch: main}\n", ModeRun, "repo.branch"},
		{"bad duration", validRun + "limits: {mutationGap: soon}\n", ModeRun, "limits.mutationGap"},
		{"bad kind", "workloads: {kinds: [Job]}\n", ModePlan, "workloads.kinds"},
		{"bad glob", "namespaces: {include: ['[']}\n", ModePlan, "namespaces"},
		{"same annotations", "restart: {annotation: a/b, targetAnnotation: a/b}\n", ModePlan, "restart.targetAnnotation"},
		{"unknown helm preference", "helm: {prefer: chart}\n", ModePlan, "helm.prefer"},
		{"bad annotation", "restart: {annotation: 'has space'}\n", ModePlan, "restart.annotation"},
		{"missing cluster", "repo: {owner: o, name: n}\ngithub: {token: t}\n", ModeRun, "cluster"},
		{"cluster not a branch part", "cluster: 'a b'\nrepo: {owner: o, name: n}\ngithub: {token: t}\n", ModeRun, "cluster"},
		{"missing owner", "cluster: c\nrepo: {name: n}\ngithub: {token: t}\n", ModeRun, "repo.owner"},
		{"no credentials", "cluster: c\nrepo: {owner: o, name: n}\n", ModeRun, "github.token"},
		{"token and app", "cluster: c\nrepo: {owner: o, name: n}\ngithub: {token: t, appID: 1, installationID: 2, privateKeyFile: k}\n", ModeRun, "github.token"},
		{"negative installation", "cluster: c\nrepo: {owner: o, name: n}\ngithub: {appID: 1, installationID: -2, privateKeyFile: k}\n", ModeRun, "github.installationID"},
		{"app key missing", "cluster: c\nrepo: {owner: o, name: n}\ngithub: {appID: 1, installationID: 2, privateKeyFile: /nonexistent/key.pem}\n", ModeRun, "github.privateKeyFile"},
		{"credentials in repo url", "cluster: c\ngithub: {token: t}\nrepo: {owner: o, name: n, url: 'https://x-access-token:secret@github.com/o/n.git'}\n", ModeRun, "repo.url"},
		{"bad api url", "cluster: c\nrepo: {owner: o, name: n}\ngithub: {token: t, apiURL: 'ftp://x'}\n", ModeRun, "github.apiURL"},
		{"negative limit", validRun + "limits: {maxOpenPRs: -1}\n", ModeRun, "limits.maxOpenPRs"},
		{"unknown log level", validRun + "server: {logLevel: verbose}\n", ModeRun, "server.logLevel"},
		{"migration without target", "migrations: [{from: default}]\n", ModePlan, "migrations[0]"},
		{"waypoint without ambient", "migrations: [{from: default, to: stable, waypoint: wp}]\n", ModePlan, "migrations[0].waypoint"},
		{"misspelt wave key", "waves: [{name: a, soke: 1m}]\n", ModePlan, "waves[0].soke"},
		{"misspelt migration key", "migrations: [{from: a, to: b, waypont: w}]\n", ModePlan, "migrations[0].waypont"},
		{"wave without name", "waves: [{soak: 1m}]\n", ModePlan, "waves[0].name"},
		{"repos bad glob", "repos: [{match: 'acme/*'}, {match: 'acme/[x'}]\n", ModePlan, "repos[1].match"},
		{"repos not owner/name", "repos: [{match: 'acme'}]\n", ModePlan, "repos[0].match"},
		{"repos too deep", "repos: [{match: 'acme/a/b'}]\n", ModePlan, "repos[0].match"},
		{"repos clone url", "repos: [{match: 'acme/*', cloneURL: 'ftp://git.example/{owner}/{name}.git'}]\n", ModePlan, "repos[0].cloneURL"},
		{"repos clone url credentials", "repos: [{match: 'acme/*', cloneURL: 'https://u:p@git.example/{owner}/{name}.git'}]\n", ModePlan, "repos[0].cloneURL"},
		{"misspelt repos key", "repos: [{match: 'acme/*', branch: main}]\n", ModePlan, "repos[0].branch"},
		{"waves with one name", "waves: [{name: a}, {name: a}]\n", ModePlan, "waves[1].name"},
		{"negative soak", "waves: [{name: a, soak: -1m}]\n", ModePlan, "waves[0].soak"},
		{"bad soak", "waves: [{name: a, soak: soon}]\n", ModePlan, "waves[0].soak"},
		{"mirror with a tag", "images: {mirrors: {'mirror.corp/istio:1.24': docker.io/istio}}\n", ModePlan, "images.mirrors"},
		{"mirror onto nothing", "images: {mirrors: {mirror.corp/istio: ''}}\n", ModePlan, "images.mirrors"},
		{"negative maxUnhealthy", "waves: [{name: a, maxUnhealthy: -1}]\n", ModePlan, "waves[0].maxUnhealthy"},
		{"negative maxProxyRestarts", "waves: [{name: a, maxProxyRestarts: -2}]\n", ModePlan, "waves[0].maxProxyRestarts"},
		{"bad wave glob", "waves: [{name: a, namespaces: ['[']}]\n", ModePlan, "waves[0].namespaces"},
		{"bad resume label", "rollout: {resumeLabel: 'a b'}\n", ModePlan, "rollout.resumeLabel"},
		{"allowed host a URL", "helm: {allowedHosts: [charts.example.com, 'https://charts.example.com/stable']}\n", ModePlan, "helm.allowedHosts[1]"},
		{"allowed host with a user", "helm: {allowedHosts: ['charts.example.com@evil.example']}\n", ModePlan, "helm.allowedHosts[0]"},
		{"allowed host empty", "helm: {allowedHosts: ['']}\n", ModePlan, "helm.allowedHosts[0]"},
		{"allowed host bad glob", "helm: {allowedHosts: ['[charts']}\n", ModePlan, "helm.allowedHosts[0]"},
		{"chart size not a size", "helm: {maxChartSize: ten}\n", ModePlan, "helm.maxChartSize"},
		{"chart size zero", "helm: {maxChartSize: 0}\n", ModePlan, "helm.maxChartSize"},
		{"chart size negative", "helm: {maxChartSize: -1Mi}\n", ModePlan, "helm.maxChartSize"},
		{"render timeout zero", "render: {timeout: 0s}\n", ModePlan, "render.timeout"},
		{"render timeout not a duration", "render: {timeout: soon}\n", ModePlan, "render.timeout"},
		{"render memory not a size", "render: {memory: lots}\n", ModePlan, "render.memory"},
		{"render memory zero", "render: {memory: 0Mi}\n", ModePlan, "render.memory"},
		{"render workers negative", "render: {workers: -1}\n", ModePlan, "render.workers"},
		{"render workers not a number", "render: {workers: many}\n", ModePlan, "render.workers"},
		{"misspelt render key", "render: {timout: 1s}\n", ModePlan, "render.timout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Load(writeConfig(t, tt.content), nil, nil)
			if err == nil {
				err = cfg.Validate(tt.mode)
			}
			require.Error(t, err)
			var cerr *Error
			require.ErrorAs(t, err, &cerr)
			assert.Equal(t, strings.ToLower(tt.wantKey), strings.ToLower(cerr.Key))
			assert.NotContains(t, err.Error(), "secret", "errors never echo credentials")
		})
	}
}

func TestValidAppConfig(t *testing.T) {
	content := "cluster: c\nrepo: {owner: o, name: n}\ngithub: {appID: 1, installationID: 2, privateKeyFile: " + keyFile(t) + "}\n"
	cfg, err := Load(writeConfig(t, content), nil, nil)
	require.NoError(t, err)
	require.NoError(t, cfg.Validate(ModeRun))
}

func TestMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope.yaml"), nil, nil)
	var cerr *Error
	require.ErrorAs(t, err, &cerr)
	assert.Contains(t, cerr.Key, "nope.yaml")
}

func TestEnvName(t *testing.T) {
	assert.Equal(t, "KEDGE_REPO_BASEBRANCH", EnvName("repo.baseBranch"))
	assert.Equal(t, "KEDGE_GITHUB_TOKEN", EnvName("github.token"))
}

func TestChartPullAndRenderKeys(t *testing.T) {
	tests := []struct {
		name, content   string
		env             map[string]string
		wantHosts       []string
		wantChartBytes  int64
		wantTimeout     time.Duration
		wantMemoryBytes int64
		wantWorkers     int
	}{
		{
			name:      "defaults",
			wantHosts: []string{}, wantChartBytes: 10 << 20, wantTimeout: 20 * time.Second, wantMemoryBytes: 256 << 20,
		},
		{
			name:      "quantities in the file",
			content:   "helm: {allowedHosts: [chartmuseum.charts.svc, '*.corp.example'], maxChartSize: 20Mi}\nrender: {timeout: 45s, memory: 1Gi, workers: 2}\n",
			wantHosts: []string{"chartmuseum.charts.svc", "*.corp.example"}, wantChartBytes: 20 << 20, wantTimeout: 45 * time.Second, wantMemoryBytes: 1 << 30, wantWorkers: 2,
		},
		{
			name:      "bytes and SI quantities",
			content:   "helm: {maxChartSize: 5000000}\nrender: {memory: 300M}\n",
			wantHosts: []string{}, wantChartBytes: 5000000, wantTimeout: 20 * time.Second, wantMemoryBytes: 300000000,
		},
		{
			name: "the environment",
			env: map[string]string{
				"KEDGE_HELM_ALLOWEDHOSTS": "charts.example.com,*.example.org", "KEDGE_HELM_MAXCHARTSIZE": "1Mi",
				"KEDGE_RENDER_TIMEOUT": "1m", "KEDGE_RENDER_MEMORY": "512Mi", "KEDGE_RENDER_WORKERS": "3",
			},
			wantHosts: []string{"charts.example.com", "*.example.org"}, wantChartBytes: 1 << 20, wantTimeout: time.Minute, wantMemoryBytes: 512 << 20, wantWorkers: 3,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			file := ""
			if tt.content != "" {
				file = writeConfig(t, tt.content)
			}
			cfg, err := Load(file, nil, nil)
			require.NoError(t, err)
			require.NoError(t, cfg.Validate(ModePlan))
			assert.Equal(t, tt.wantHosts, cfg.Helm.AllowedHosts)
			chartBytes, err := cfg.Helm.MaxChartBytes()
			require.NoError(t, err)
			assert.Equal(t, tt.wantChartBytes, chartBytes)
			assert.Equal(t, tt.wantTimeout, cfg.Render.Timeout)
			memory, err := cfg.Render.MemoryBytes()
			require.NoError(t, err)
			assert.Equal(t, tt.wantMemoryBytes, memory)
			assert.Equal(t, tt.wantWorkers, cfg.Render.Workers)
		})
	}
}
