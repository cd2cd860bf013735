// Package config loads kedge's configuration from a YAML file, KEDGE_*
// environment variables and flags, and validates it before anything runs.
package config

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/url"
	"os"
	"path"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/go-viper/mapstructure/v2"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kedge-io/kedge/internal/image"
)

// Error is a configuration problem. Key names the offending key (or file)
// so the message points at the exact thing to fix; the CLI exits 2 on it.
type Error struct {
	Key string
	Msg string
}

func (e *Error) Error() string { return fmt.Sprintf("config %s: %s", e.Key, e.Msg) }

// Config is the whole configuration. Every key is documented in
// config/kedge.example.yaml; a test keeps the two in step.
type Config struct {
	Cluster    string           `mapstructure:"cluster"`
	Repo       RepoConfig       `mapstructure:"repo"`
	Repos      []RepoRule       `mapstructure:"repos"`
	GitHub     GitHubConfig     `mapstructure:"github"`
	Source     SourceConfig     `mapstructure:"source"`
	Restart    RestartConfig    `mapstructure:"restart"`
	Helm       HelmConfig       `mapstructure:"helm"`
	Render     RenderConfig     `mapstructure:"render"`
	Namespaces NamespacesConfig `mapstructure:"namespaces"`
	Workloads  WorkloadsConfig  `mapstructure:"workloads"`
	Images     ImagesConfig     `mapstructure:"images"`
	Git        GitConfig        `mapstructure:"git"`
	Limits     LimitsConfig     `mapstructure:"limits"`
	Reviewers  ReviewersConfig  `mapstructure:"reviewers"`
	PR         PRConfig         `mapstructure:"pr"`
	Templates  TemplatesConfig  `mapstructure:"templates"`
	Server     ServerConfig     `mapstructure:"server"`
	Cycle      CycleConfig      `mapstructure:"cycle"`
	Rollout    RolloutConfig    `mapstructure:"rollout"`
	Migrations []Migration      `mapstructure:"migrations"`
	Waves      []Wave           `mapstructure:"waves"`
}

type RepoConfig struct {
	Owner      string   `mapstructure:"owner"`
	Name       string   `mapstructure:"name"`
	BaseBranch string   `mapstructure:"baseBranch"`
	URL        string   `mapstructure:"url"`
	Paths      []string `mapstructure:"paths"`
}

// RepoRule admits the repositories kedge may write to besides repo:
// (which holds the cluster dashboard issue).
type RepoRule struct {
	// Match is an owner/name pattern ("acme/*").
	Match      string   `mapstructure:"match"`
	BaseBranch string   `mapstructure:"baseBranch"`
	Paths      []string `mapstructure:"paths"`
	// CloneURL overrides the clone address; {owner} and {name} are
	// replaced.
	CloneURL string `mapstructure:"cloneURL"`
}

type GitHubConfig struct {
	APIURL         string `mapstructure:"apiURL"`
	AppID          int64  `mapstructure:"appID"`
	InstallationID int64  `mapstructure:"installationID"`
	PrivateKeyFile string `mapstructure:"privateKeyFile"`
	Token          string `mapstructure:"token"`
}

type SourceConfig struct {
	Snapshot   string `mapstructure:"snapshot"`
	Kubeconfig string `mapstructure:"kubeconfig"`
	// IstioNamespaces are where the live source reads Istio's ConfigMaps
	// (injector, mesh config, istio-cni-config); empty is every namespace.
	IstioNamespaces []string `mapstructure:"istioNamespaces"`
}

type RestartConfig struct {
	Annotation       string `mapstructure:"annotation"`
	TargetAnnotation string `mapstructure:"targetAnnotation"`
}

// HelmConfig says how a workload a Flux HelmRelease renders is restarted.
type HelmConfig struct {
	// Prefer is HelmPreferPostRenderer (a kustomize patch in the release's
	// spec.postRenderers, which works for every chart) or HelmPreferValues
	// (a chart value that reaches the pod template, in spec.values, when
	// the chart is in the repository and has one).
	Prefer string `mapstructure:"prefer"`
	// AllowedHosts are globs (path.Match, without case) of hosts charts
	// may be pulled from besides those the cluster's HelmRepositories,
	// OCIRepositories and Argo CD Applications name, and the only hosts a
	// pull may reach at a loopback, link-local, private, CGNAT,
	// unspecified or multicast address.
	AllowedHosts []string `mapstructure:"allowedHosts"`
	// MaxChartSize bounds a chart, uncompressed with its subcharts: bytes
	// or a quantity ("10Mi"); see MaxChartBytes.
	MaxChartSize string `mapstructure:"maxChartSize"`
}

// MaxChartBytes reads helm.maxChartSize.
func (h HelmConfig) MaxChartBytes() (int64, error) {
	return byteQuantity("helm.maxChartSize", h.MaxChartSize)
}

// RenderConfig bounds the kustomize builds and Helm renders of repository
// content, each run in a worker process of kedge.
type RenderConfig struct {
	// Timeout bounds one build or render, wall clock.
	Timeout time.Duration `mapstructure:"timeout"`
	// Memory bounds what one worker may allocate: bytes or a quantity.
	Memory string `mapstructure:"memory"`
	// Workers bounds how many workers run at once; 0 is the number of
	// cores, at most 2.
	Workers int `mapstructure:"workers"`
}

// MemoryBytes reads render.memory.
func (r RenderConfig) MemoryBytes() (int64, error) {
	return byteQuantity("render.memory", r.Memory)
}

// byteQuantity reads a size written as bytes or as a Kubernetes quantity
// ("10Mi", "1G"), as a pod's resources are written.
func byteQuantity(key, value string) (int64, error) {
	q, err := resource.ParseQuantity(strings.TrimSpace(value))
	if err != nil {
		return 0, &Error{Key: key, Msg: fmt.Sprintf("%q is neither a number of bytes nor a quantity such as 10Mi", value)}
	}
	n, ok := q.AsInt64()
	if !ok {
		n = q.Value()
	}
	if n <= 0 {
		return 0, &Error{Key: key, Msg: fmt.Sprintf("%q: must be more than 0 bytes", value)}
	}
	return n, nil
}

// The values of helm.prefer.
const (
	HelmPreferPostRenderer = "post-renderer"
	HelmPreferValues       = "values"
)

type NamespacesConfig struct {
	Include []string `mapstructure:"include"`
	Exclude []string `mapstructure:"exclude"`
}

type WorkloadsConfig struct {
	Kinds            []string `mapstructure:"kinds"`
	OptOutAnnotation string   `mapstructure:"optOutAnnotation"`
}

// ImagesConfig says when the proxy image a pod runs is the one its
// revision injects, after admission policies rewrote it.
type ImagesConfig struct {
	// Mirrors maps a repository prefix a policy rewrites images to onto
	// the prefix it mirrors ("mirror.corp/istio": "docker.io/istio"). Its
	// keys hold dots, which viper reads as nesting when it decodes the
	// whole configuration, so Load reads the key on its own.
	Mirrors map[string]string `mapstructure:"-"`
	// CompareRegistry false compares only the image name, tag and pinned
	// digest, whatever registry and path come before the name.
	CompareRegistry bool `mapstructure:"compareRegistry"`
}

// Identity is how drift compares proxy images under this configuration.
func (c ImagesConfig) Identity() image.Identity {
	return image.Identity{Mirrors: c.Mirrors, IgnoreRegistry: !c.CompareRegistry}
}

type GitConfig struct {
	CacheDir    string `mapstructure:"cacheDir"`
	AuthorName  string `mapstructure:"authorName"`
	AuthorEmail string `mapstructure:"authorEmail"`
}

type LimitsConfig struct {
	MaxOpenPRs        int           `mapstructure:"maxOpenPRs"`
	MaxNewPRsPerCycle int           `mapstructure:"maxNewPRsPerCycle"`
	MutationGap       time.Duration `mapstructure:"mutationGap"`
	MaxRetryAfter     time.Duration `mapstructure:"maxRetryAfter"`
}

type ReviewersConfig struct {
	// NamespaceKey is a namespace label or annotation whose value lists
	// reviewers (comma separated; "org/team" for a team).
	NamespaceKey string `mapstructure:"namespaceKey"`
	// ByNamespace maps a namespace glob to reviewers.
	ByNamespace map[string][]string `mapstructure:"byNamespace"`
}

type PRConfig struct {
	Labels []string `mapstructure:"labels"`
	Draft  bool     `mapstructure:"draft"`
}

type TemplatesConfig struct {
	Dir string `mapstructure:"dir"`
}

type ServerConfig struct {
	Address        string `mapstructure:"address"`
	LeaderElection bool   `mapstructure:"leaderElection"`
	LeaseNamespace string `mapstructure:"leaseNamespace"`
	LeaseName      string `mapstructure:"leaseName"`
	LogLevel       string `mapstructure:"logLevel"`
}

// SlogLevel reads server.logLevel.
func (s ServerConfig) SlogLevel() (slog.Level, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(s.LogLevel)); err != nil {
		return 0, &Error{Key: "server.logLevel", Msg: fmt.Sprintf("%q is not debug, info, warn or error", s.LogLevel)}
	}
	return level, nil
}

type CycleConfig struct {
	Debounce time.Duration `mapstructure:"debounce"`
	Resync   time.Duration `mapstructure:"resync"`
}

type RolloutConfig struct {
	// Grace is how long after a merge workloads may still drift before
	// kedge says which ones did not roll out.
	Grace time.Duration `mapstructure:"grace"`
	// ResumeLabel, set on a namespace to the target id the dashboard
	// shows, lets a rollout blocked by that namespace's unhealthy
	// workloads go on.
	ResumeLabel string `mapstructure:"resumeLabel"`
}

// Wave is one step of a progressive rollout: the namespaces it selects get
// their PRs for a new target only once every earlier wave is merged and
// healthy for its soak time.
type Wave struct {
	Name string `mapstructure:"name"`
	// Namespaces are name globs; NamespaceSelector labels that must all
	// match. A wave with neither selects every namespace left.
	Namespaces        []string          `mapstructure:"namespaces"`
	NamespaceSelector map[string]string `mapstructure:"namespaceSelector"`
	Soak              time.Duration     `mapstructure:"soak"`
	// MaxUnhealthy workloads are tolerated before the wave blocks.
	MaxUnhealthy int `mapstructure:"maxUnhealthy"`
	// MaxProxyRestarts is how often an istio-proxy container may have
	// restarted before its workload counts as unhealthy.
	MaxProxyRestarts int32 `mapstructure:"maxProxyRestarts"`
}

// Migration moves namespaces from one revision (or tag) to another.
type Migration struct {
	From        string            `mapstructure:"from"`
	To          string            `mapstructure:"to"`
	Namespaces  map[string]string `mapstructure:"namespaceSelector"`
	OptOutLabel string            `mapstructure:"optOutLabel"`
	// Waypoint, with to: ambient, names the waypoint the namespace uses
	// (istio.io/use-waypoint).
	Waypoint string `mapstructure:"waypoint"`
}

// defaults are the values a key takes when nothing sets it. Every key that
// may come from the environment needs an entry here, because viper only
// reads KEDGE_* variables for keys it knows.
var defaults = map[string]any{
	"cluster":                    "",
	"repo.owner":                 "",
	"repo.name":                  "",
	"repo.baseBranch":            "",
	"repo.url":                   "",
	"repo.paths":                 []string{},
	"github.apiURL":              "https://api.github.com/",
	"github.appID":               int64(0),
	"github.installationID":      int64(0),
	"github.privateKeyFile":      "",
	"github.token":               "",
	"source.snapshot":            "",
	"source.kubeconfig":          "",
	"source.istioNamespaces":     []string{},
	"restart.annotation":         "kedge.io/restartedAt",
	"restart.targetAnnotation":   "kedge.io/restart-target",
	"helm.prefer":                HelmPreferPostRenderer,
	"helm.allowedHosts":          []string{},
	"helm.maxChartSize":          "10Mi",
	"render.timeout":             20 * time.Second,
	"render.memory":              "256Mi",
	"render.workers":             0,
	"namespaces.include":         []string{},
	"namespaces.exclude":         []string{},
	"workloads.kinds":            []string{"Deployment", "StatefulSet", "DaemonSet", "Rollout"},
	"workloads.optOutAnnotation": "kedge.io/ignore",
	"images.mirrors":             map[string]string{},
	"images.compareRegistry":     true,
	"git.cacheDir":               "",
	"git.authorName":             "kedge",
	"git.authorEmail":            "kedge@users.noreply.github.com",
	"limits.maxOpenPRs":          50,
	"limits.maxNewPRsPerCycle":   10,
	"limits.mutationGap":         time.Second,
	"limits.maxRetryAfter":       time.Minute,
	"reviewers.namespaceKey":     "kedge.io/reviewers",
	"reviewers.byNamespace":      map[string][]string{},
	"pr.labels":                  []string{"kedge", "istio-data-plane"},
	"pr.draft":                   false,
	"templates.dir":              "",
	"server.address":             ":8080",
	"server.leaderElection":      true,
	"server.leaseNamespace":      "",
	"server.leaseName":           "kedge",
	"server.logLevel":            "info",
	"cycle.debounce":             10 * time.Second,
	"cycle.resync":               10 * time.Minute,
	"rollout.grace":              30 * time.Minute,
	"rollout.resumeLabel":        "kedge.io/resume-rollout",
}

// Keys lists every configuration key, sorted.
func Keys() []string {
	keys := make([]string, 0, len(defaults)+1)
	for k := range defaults {
		keys = append(keys, k)
	}
	keys = append(keys, "migrations", "repos", "waves")
	sort.Strings(keys)
	return keys
}

// EnvName is the environment variable that sets key.
func EnvName(key string) string {
	return "KEDGE_" + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// Load reads the file (optional), the environment and the flags that were
// set, in increasing precedence. flagKeys maps a flag name to its key.
func Load(file string, flags *pflag.FlagSet, flagKeys map[string]string) (*Config, error) {
	v := viper.New()
	for k, val := range defaults {
		v.SetDefault(k, val)
	}
	v.SetEnvPrefix("KEDGE")
	v.SetEnvKeyReplacer(strings.NewReplacer(".", "_"))
	v.AutomaticEnv()
	if file != "" {
		v.SetConfigFile(file)
		v.SetConfigType("yaml")
		if err := v.ReadInConfig(); err != nil {
			return nil, &Error{Key: file, Msg: readError(err)}
		}
		if err := unknownKeys(v); err != nil {
			return nil, err
		}
	}
	if flags != nil {
		for name, key := range flagKeys {
			if f := flags.Lookup(name); f != nil && f.Changed {
				if err := v.BindPFlag(key, f); err != nil {
					return nil, &Error{Key: key, Msg: err.Error()}
				}
			}
		}
	}
	var cfg Config
	decode := func(dc *mapstructure.DecoderConfig) {
		dc.ErrorUnused = false
		dc.WeaklyTypedInput = true
		dc.DecodeHook = mapstructure.ComposeDecodeHookFunc(
			mapstructure.StringToTimeDurationHookFunc(),
			mapstructure.StringToSliceHookFunc(","),
		)
	}
	// Read before Unmarshal: rebuilding the nested settings, viper writes
	// the dotted keys' components into the very map the file was read into.
	mirrors, err := stringMap(v.Get("images.mirrors"))
	if err != nil {
		return nil, &Error{Key: "images.mirrors", Msg: err.Error()}
	}
	if err := v.Unmarshal(&cfg, decode); err != nil {
		return nil, &Error{Key: keyOf(err), Msg: err.Error()}
	}
	cfg.Images.Mirrors = mirrors
	return &cfg, nil
}

// stringMap reads a map of strings as the file writes it, or as one
// string of comma-separated key=value pairs (KEDGE_IMAGES_MIRRORS).
func stringMap(value any) (map[string]string, error) {
	out := map[string]string{}
	switch v := value.(type) {
	case nil:
	case map[string]string:
		maps.Copy(out, v)
	case map[string]any:
		for k, val := range v {
			s, ok := val.(string)
			if !ok {
				return nil, fmt.Errorf("%s: %v is not a string", k, val)
			}
			out[k] = s
		}
	case string:
		for _, pair := range strings.Split(v, ",") {
			if strings.TrimSpace(pair) == "" {
				continue
			}
			k, val, ok := strings.Cut(pair, "=")
			if !ok {
				return nil, fmt.Errorf("%q is not key=value", pair)
			}
			out[strings.TrimSpace(k)] = strings.TrimSpace(val)
		}
	default:
		return nil, fmt.Errorf("want a map of strings, got %T", value)
	}
	return out, nil
}

func readError(err error) string {
	var notFound viper.ConfigFileNotFoundError
	if errors.As(err, &notFound) || errors.Is(err, os.ErrNotExist) {
		return "file not found"
	}
	return err.Error()
}

// unknownKeys refuses keys kedge does not know: a misspelt key silently
// falling back to its default is the worst kind of configuration bug.
func unknownKeys(v *viper.Viper) error {
	known := map[string]bool{}
	for _, k := range Keys() {
		known[strings.ToLower(k)] = true
	}
	for _, k := range v.AllKeys() {
		if known[k] || strings.HasPrefix(k, "reviewers.bynamespace.") || strings.HasPrefix(k, "images.mirrors.") || strings.HasPrefix(k, "migrations") || strings.HasPrefix(k, "waves") {
			continue
		}
		return &Error{Key: k, Msg: "unknown key (see config/kedge.example.yaml)"}
	}
	for list, fields := range listFields {
		if err := unknownListKeys(v, list, fields); err != nil {
			return err
		}
	}
	return nil
}

// listFields are the keys of each entry of the configuration's lists, which
// viper does not expand into keys of their own.
var listFields = map[string][]string{
	"migrations": {"from", "to", "namespaceSelector", "optOutLabel", "waypoint"},
	"repos":      {"match", "baseBranch", "paths", "cloneURL"},
	"waves":      {"name", "namespaces", "namespaceSelector", "soak", "maxUnhealthy", "maxProxyRestarts"},
}

// unknownListKeys refuses a misspelt key inside a list entry ("soke" for
// "soak"), which would otherwise fall back to its zero value unnoticed.
func unknownListKeys(v *viper.Viper, list string, fields []string) error {
	entries, ok := v.Get(list).([]any)
	if !ok {
		return nil
	}
	for i, entry := range entries {
		m, ok := entry.(map[string]any)
		if !ok {
			continue
		}
		for k := range m {
			if !slices.ContainsFunc(fields, func(f string) bool { return strings.EqualFold(f, k) }) {
				return &Error{Key: fmt.Sprintf("%s[%d].%s", list, i, k), Msg: "unknown key (see config/kedge.example.yaml)"}
			}
		}
	}
	return nil
}

func keyOf(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, "'"); i >= 0 {
		if j := strings.Index(msg[i+1:], "'"); j >= 0 {
			return msg[i+1 : i+1+j]
		}
	}
	return "(unknown)"
}

// Mode says which parts of the configuration a command needs.
type Mode int

const (
	// ModePlan needs no repository or GitHub settings.
	ModePlan Mode = iota
	// ModeRun needs everything to open pull requests.
	ModeRun
)

// Validate checks the configuration for the given command.
func (c *Config) Validate(mode Mode) error {
	for _, g := range append(append([]string{}, c.Namespaces.Include...), c.Namespaces.Exclude...) {
		if _, err := path.Match(g, ""); err != nil {
			return &Error{Key: "namespaces", Msg: fmt.Sprintf("bad glob %q", g)}
		}
	}
	allowed := map[string]bool{"Deployment": true, "StatefulSet": true, "DaemonSet": true, "Rollout": true}
	for _, k := range c.Workloads.Kinds {
		if !allowed[k] {
			return &Error{Key: "workloads.kinds", Msg: fmt.Sprintf("unsupported kind %q (Deployment, StatefulSet, DaemonSet, Rollout)", k)}
		}
	}
	if err := c.Images.Identity().Validate(); err != nil {
		return &Error{Key: "images.mirrors", Msg: err.Error()}
	}
	if err := validAnnotationKey("restart.annotation", c.Restart.Annotation); err != nil {
		return err
	}
	if err := validAnnotationKey("restart.targetAnnotation", c.Restart.TargetAnnotation); err != nil {
		return err
	}
	if c.Restart.Annotation == c.Restart.TargetAnnotation {
		return &Error{Key: "restart.targetAnnotation", Msg: "must differ from restart.annotation"}
	}
	if c.Helm.Prefer != HelmPreferPostRenderer && c.Helm.Prefer != HelmPreferValues {
		return &Error{Key: "helm.prefer", Msg: fmt.Sprintf("%q is neither %s nor %s", c.Helm.Prefer, HelmPreferPostRenderer, HelmPreferValues)}
	}
	if err := validHelmPulls(c.Helm); err != nil {
		return err
	}
	if err := validRender(c.Render); err != nil {
		return err
	}
	if _, err := c.Server.SlogLevel(); err != nil {
		return err
	}
	if c.Limits.MaxOpenPRs < 0 {
		return &Error{Key: "limits.maxOpenPRs", Msg: "must be >= 0"}
	}
	if c.Limits.MaxNewPRsPerCycle < 0 {
		return &Error{Key: "limits.maxNewPRsPerCycle", Msg: "must be >= 0"}
	}
	if c.Limits.MutationGap < 0 {
		return &Error{Key: "limits.mutationGap", Msg: "must be >= 0"}
	}
	if c.Cycle.Debounce < 0 {
		return &Error{Key: "cycle.debounce", Msg: "must be >= 0"}
	}
	for _, ns := range c.Source.IstioNamespaces {
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return &Error{Key: "source.istioNamespaces", Msg: fmt.Sprintf("%q is not a namespace name: %s", ns, errs[0])}
		}
	}
	for i, m := range c.Migrations {
		if m.From == "" || m.To == "" {
			return &Error{Key: fmt.Sprintf("migrations[%d]", i), Msg: "from and to are required"}
		}
		if m.Waypoint != "" && m.To != "ambient" {
			return &Error{Key: fmt.Sprintf("migrations[%d].waypoint", i), Msg: "only a migration to: ambient uses a waypoint"}
		}
	}
	if err := validWaves(c.Waves); err != nil {
		return err
	}
	if err := validRepoRules(c.Repos); err != nil {
		return err
	}
	if c.Rollout.ResumeLabel == "" {
		return &Error{Key: "rollout.resumeLabel", Msg: "required"}
	}
	if err := validAnnotationKey("rollout.resumeLabel", c.Rollout.ResumeLabel); err != nil {
		return err
	}
	if mode == ModePlan {
		return nil
	}
	if c.Cluster == "" {
		return &Error{Key: "cluster", Msg: "required: a name for this cluster (it is part of branch names)"}
	}
	if !validBranchPart(c.Cluster) {
		return &Error{Key: "cluster", Msg: fmt.Sprintf("%q cannot be part of a branch name", c.Cluster)}
	}
	if c.Repo.Owner == "" {
		return &Error{Key: "repo.owner", Msg: "required"}
	}
	if c.Repo.Name == "" {
		return &Error{Key: "repo.name", Msg: "required"}
	}
	if c.Repo.URL != "" {
		if err := validCloneURL(c.Repo.URL); err != "" {
			return &Error{Key: "repo.url", Msg: err}
		}
	}
	if u, err := url.Parse(c.GitHub.APIURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return &Error{Key: "github.apiURL", Msg: "must be an http(s) URL"}
	}
	app := c.GitHub.AppID != 0 || c.GitHub.InstallationID != 0 || c.GitHub.PrivateKeyFile != ""
	switch {
	case app && c.GitHub.Token != "":
		return &Error{Key: "github.token", Msg: "set either github.token or the GitHub App keys, not both"}
	case app:
		if c.GitHub.AppID <= 0 {
			return &Error{Key: "github.appID", Msg: "required with GitHub App auth"}
		}
		// Zero finds the installation of each repository's owner through
		// the API, as an App may be installed on several organisations.
		if c.GitHub.InstallationID < 0 {
			return &Error{Key: "github.installationID", Msg: "must be positive (or unset: looked up per repository owner)"}
		}
		if c.GitHub.PrivateKeyFile == "" {
			return &Error{Key: "github.privateKeyFile", Msg: "required with GitHub App auth"}
		}
		if _, err := os.Stat(c.GitHub.PrivateKeyFile); err != nil {
			return &Error{Key: "github.privateKeyFile", Msg: "cannot read the file"}
		}
	case c.GitHub.Token == "":
		return &Error{Key: "github.token", Msg: "required: github.token or github.appID + github.privateKeyFile"}
	}
	return nil
}

// validHelmPulls checks helm.allowedHosts and helm.maxChartSize.
func validHelmPulls(h HelmConfig) error {
	for i, pattern := range h.AllowedHosts {
		key := fmt.Sprintf("helm.allowedHosts[%d]", i)
		switch {
		case strings.TrimSpace(pattern) == "":
			return &Error{Key: key, Msg: "empty: list host names or globs (charts.example.com, *.example.com)"}
		case strings.ContainsAny(pattern, "/@"):
			return &Error{Key: key, Msg: fmt.Sprintf("%q is not a host name or glob: write the host alone, without scheme, path or user", pattern)}
		}
		if _, err := path.Match(pattern, ""); err != nil {
			return &Error{Key: key, Msg: fmt.Sprintf("bad glob %q", pattern)}
		}
	}
	_, err := h.MaxChartBytes()
	return err
}

// validRender checks the render budgets.
func validRender(r RenderConfig) error {
	if r.Timeout <= 0 {
		return &Error{Key: "render.timeout", Msg: "must be more than 0"}
	}
	if _, err := r.MemoryBytes(); err != nil {
		return err
	}
	if r.Workers < 0 {
		return &Error{Key: "render.workers", Msg: "must be >= 0 (0: the number of cores, at most 2)"}
	}
	return nil
}

func validAnnotationKey(key, value string) error {
	if value == "" {
		return &Error{Key: key, Msg: "required"}
	}
	name := value
	if i := strings.Index(value, "/"); i >= 0 {
		name = value[i+1:]
		if i == 0 || strings.ContainsAny(value[:i], " \t:") {
			return &Error{Key: key, Msg: fmt.Sprintf("%q is not a valid annotation key", value)}
		}
	}
	if name == "" || len(name) > 63 || strings.ContainsAny(name, " \t:/") {
		return &Error{Key: key, Msg: fmt.Sprintf("%q is not a valid annotation key", value)}
	}
	return nil
}

func validBranchPart(s string) bool {
	if s == "" || strings.HasPrefix(s, "-") || strings.Contains(s, "..") {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}

// validRepoRules checks each repos: entry: an owner/name pattern that
// path.Match can use, and a clone URL that parses once its placeholders
// are filled.
func validRepoRules(rules []RepoRule) error {
	for i, r := range rules {
		key := fmt.Sprintf("repos[%d]", i)
		owner, name, ok := strings.Cut(r.Match, "/")
		if !ok || owner == "" || name == "" || strings.Contains(name, "/") {
			return &Error{Key: key + ".match", Msg: fmt.Sprintf("%q is not an owner/name pattern (\"acme/*\")", r.Match)}
		}
		if _, err := path.Match(r.Match, ""); err != nil {
			return &Error{Key: key + ".match", Msg: fmt.Sprintf("bad glob %q", r.Match)}
		}
		if r.CloneURL != "" {
			if err := validCloneURL(strings.NewReplacer("{owner}", "owner", "{name}", "name").Replace(r.CloneURL)); err != "" {
				return &Error{Key: key + ".cloneURL", Msg: err}
			}
		}
	}
	return nil
}

// validCloneURL says what is wrong with a clone address, "" when nothing
// is.
func validCloneURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http" && u.Scheme != "file") {
		return "must be an https://, http:// or file:// URL"
	}
	if u.User != nil {
		return "must not carry credentials: kedge authenticates with the GitHub token"
	}
	return ""
}

// validWaves checks each wave on its own and that names, which PR bodies
// and the dashboard show, tell the waves apart.
func validWaves(waves []Wave) error {
	seen := map[string]bool{}
	for i, w := range waves {
		key := fmt.Sprintf("waves[%d]", i)
		switch {
		case w.Name == "":
			return &Error{Key: key + ".name", Msg: "required"}
		case seen[w.Name]:
			return &Error{Key: key + ".name", Msg: fmt.Sprintf("%q names another wave too", w.Name)}
		case w.Soak < 0:
			return &Error{Key: key + ".soak", Msg: "must be >= 0"}
		case w.MaxUnhealthy < 0:
			return &Error{Key: key + ".maxUnhealthy", Msg: "must be >= 0"}
		case w.MaxProxyRestarts < 0:
			return &Error{Key: key + ".maxProxyRestarts", Msg: "must be >= 0"}
		}
		seen[w.Name] = true
		for _, g := range w.Namespaces {
			if _, err := path.Match(g, ""); err != nil {
				return &Error{Key: key + ".namespaces", Msg: fmt.Sprintf("bad glob %q", g)}
			}
		}
	}
	return nil
}
