package chaos

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kedge-io/kedge/internal/assemble"
	"github.com/kedge-io/kedge/internal/forge"
	"github.com/kedge-io/kedge/internal/metrics"
	"github.com/kedge-io/kedge/internal/server"
	"github.com/kedge-io/kedge/internal/service"
	"github.com/kedge-io/kedge/internal/testing/ghemu"
	"github.com/kedge-io/kedge/internal/testing/treecopy"
)

// capture collects everything a kedge deployment lets out: debug logs,
// cycle errors and reports, and the metrics page after every cycle.
type capture struct {
	mu      sync.Mutex
	logs    bytes.Buffer
	out     bytes.Buffer
	current *assemble.Service
	metrics *metrics.Metrics
}

func (c *capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.logs.Write(p)
}

func (c *capture) afterCycle(svc *assemble.Service, res CycleResult) {
	c.mu.Lock()
	c.current = svc
	fmt.Fprintf(&c.out, "error: %v\n%+v\n", res.Err, res.Err)
	if res.Report != nil {
		fmt.Fprintf(&c.out, "report: %+v\n", *res.Report)
		for _, o := range res.Report.Outcomes {
			fmt.Fprintf(&c.out, "%s: %+v\n", o.Namespace, o)
		}
	}
	c.mu.Unlock()
	c.metrics.ObserveCycle("chaos", res.Report, res.Err, time.Second, time.Now())
	rec := httptest.NewRecorder()
	c.metrics.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	c.mu.Lock()
	c.out.Write(rec.Body.Bytes())
	c.mu.Unlock()
}

func (c *capture) stats() forge.Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.current == nil {
		return forge.Stats{}
	}
	return c.current.Forge.Stats()
}

// TestSecretsNeverLeak runs kedge end to end, with a static token and as a
// GitHub App with a freshly generated key, through a first cycle, faults
// (5xx, a cut connection, a failed push, a lost push race, expired
// installation tokens) and the cycles that repair them, then as a service
// for two cycles. Everything that came out is scanned for the token, the
// private key and every installation token and App JWT kedge sent: debug
// logs, errors, reports, metrics, what kedge sent to GitHub (PR and issue
// text, comments), the git history it pushed, every git object on the
// server and in kedge's clones, the git server's request log, and every
// file of its cache directory, git remote configuration included.
func TestSecretsNeverLeak(t *testing.T) {
	for _, appAuth := range []bool{false, true} {
		name := "token"
		if appAuth {
			name = "app"
		}
		t.Run(name, func(t *testing.T) {
			c := &capture{}
			c.metrics = metrics.New(c.stats)
			log := slog.New(slog.NewJSONHandler(c, &slog.HandlerOptions{Level: slog.LevelDebug}))
			w := NewWorld(t, Options{ClusterDir: DemoCluster, RepoDir: DemoRepo, AppAuth: appAuth, Log: log, AfterCycle: c.afterCycle})

			require.NoError(t, w.Cycle().Err)
			FirstN(2, "GET", "", ghemu.ServerError(http.StatusBadGateway))(w)
			w.Cycle()
			BaseMoved(w)
			PushRacedOn(Branch("shop"))(w)
			w.Cycle()
			DriftGone("search")(w)
			OnWire("github", "POST", "/repos/*/*/issues/*/comments", 1, CutAfter)(w)
			w.Cycle()
			PushFails(http.StatusServiceUnavailable)(w)
			DriftGone("payments")(w)
			w.Cycle()
			if appAuth {
				w.Hub.ExpireTokens()
			}
			for i := 0; i < 2; i++ {
				w.Cycle()
			}
			runService(t, w, c, log)

			secrets := w.Secrets()
			if appAuth {
				minted := w.Hub.MintedTokens()[InstallationID]
				require.GreaterOrEqual(t, minted, 2, "installation tokens were minted and renewed")
				require.NotEmpty(t, w.KeyPEM)
				// The key, and on the wire App JWTs and installation tokens.
				require.GreaterOrEqual(t, len(w.Wire.Credentials()), 1+minted)
			}
			for _, s := range secrets {
				require.GreaterOrEqual(t, len(s), 20, "a secret too short to scan for")
			}
			sources := map[string][]byte{
				"logs":                        c.logs.Bytes(),
				"errors, reports and metrics": c.out.Bytes(),
				"sent to GitHub":              sentToGitHub(w),
				"pushed history":              pushedHistory(t, w),
				"git server paths":            gitRequestPaths(w),
				// Every object, reachable or not, uncompressed: a byte
				// scan of packs and loose objects would miss them.
				"git server objects": gitObjects(t, serverRepos(w)...),
				"clone objects":      gitObjects(t, gitDirs(t, w.Cfg.Git.CacheDir)...),
			}
			require.Contains(t, string(sources["errors, reports and metrics"]), "kedge_", "metrics were scraped")
			require.NotEmpty(t, sources["sent to GitHub"])
			require.NotEmpty(t, sources["clone objects"], "kedge's clones were scanned")
			for label, data := range sources {
				t.Logf("%s: %d bytes scanned", label, len(data))
				for _, s := range secrets {
					assert.False(t, bytes.Contains(data, []byte(s)), "%s contains a secret (%.12s…)", label, s)
				}
			}
			cache := scanDir(t, w.Cfg.Git.CacheDir, secrets)
			assert.Empty(t, cache.leaks, "the cache directory holds a secret")
			assert.NotZero(t, cache.files, "the cache directory was scanned")
			assert.True(t, cache.sawConfig, "the git remote configuration was scanned")
		})
	}
}

// runService runs kedge as `kedge run` does, through the service and its
// cycle log, until it has run two cycles (the first after a 5xx burst).
func runService(t *testing.T, w *World, c *capture, log *slog.Logger) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	assembled, err := assemble.New(ctx, w.Cfg, w.Source, assemble.Options{Log: log})
	require.NoError(t, err)
	svc, err := service.New(service.Config{
		Reconciler: assembled.Reconciler, GitHub: assembled.Forge, Metrics: c.metrics,
		Readiness: server.NewReadiness(server.CheckGitHub), Log: log,
		Scheduler: service.SchedulerOptions{Resync: 100 * time.Millisecond},
	})
	require.NoError(t, err)
	FirstN(2, "GET", "/repos/*/*/pulls", ghemu.ServerError(http.StatusServiceUnavailable))(w)
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	require.Eventually(t, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return bytes.Count(c.logs.Bytes(), []byte(`"msg":"cycle finished"`))+bytes.Count(c.logs.Bytes(), []byte(`"msg":"cycle failed"`)) >= 2
	}, time.Minute, 50*time.Millisecond, "the service runs cycles")
	cancel()
	require.NoError(t, <-done)
}

// sentToGitHub is every request body, path and query kedge sent, and the
// text of every PR, issue and comment as GitHub shows it, in every
// repository.
func sentToGitHub(w *World) []byte {
	var b bytes.Buffer
	for _, c := range w.Calls() {
		fmt.Fprintf(&b, "%s %s?%s\n%s\n", c.Method, c.RawPath, c.Query.Encode(), c.Body)
	}
	for _, repo := range Repos {
		gh := w.Hub.Repo(repo)
		for _, pr := range gh.PRs() {
			fmt.Fprintf(&b, "%s\n%s\n", pr.GetTitle(), pr.GetBody())
			for _, cm := range gh.Comments(pr.GetNumber()) {
				b.WriteString(cm.GetBody())
			}
		}
		for _, is := range gh.Issues() {
			fmt.Fprintf(&b, "%s\n%s\n", is.GetTitle(), is.GetBody())
			for _, cm := range gh.Comments(is.GetNumber()) {
				b.WriteString(cm.GetBody())
			}
		}
	}
	return b.Bytes()
}

// pushedHistory is every commit on the server, in every repository:
// messages, identities and patches.
func pushedHistory(t *testing.T, w *World) []byte {
	t.Helper()
	var all []byte
	for _, repo := range Repos {
		cmd := exec.Command("git", "--git-dir="+w.Git.RepoPath(gitName(repo)), "log", "--all", "-p", "--format=%H %an <%ae> %cn <%ce>%n%B")
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME=/nonexistent"}
		out, err := cmd.Output()
		require.NoError(t, err)
		require.Contains(t, string(out), "kedge", "kedge's commits are in the history of %s", repo)
		all = append(all, out...)
	}
	return all
}

func gitRequestPaths(w *World) []byte {
	var b strings.Builder
	for _, r := range w.Git.Requests() {
		b.WriteString(r.Method + " " + r.Path + "\n")
	}
	b.WriteString(w.Git.Stderr())
	return []byte(b.String())
}

type dirScan struct {
	files     int
	sawConfig bool
	leaks     []string
}

// scanDir reads every file under dir, binary ones too, for the secrets.
func scanDir(t *testing.T, dir string, secrets []string) dirScan {
	t.Helper()
	var s dirScan
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		s.files++
		if filepath.Base(p) == "config" && filepath.Base(filepath.Dir(p)) == ".git" {
			s.sawConfig = true
		}
		for _, secret := range secrets {
			if bytes.Contains(data, []byte(secret)) {
				s.leaks = append(s.leaks, p)
			}
		}
		return nil
	})
	require.NoError(t, err)
	return s
}

// TestSecretsNeverLeakFromAHostileRepository runs `kedge run --once`, the
// binary as cmd/kedge wires it (debug logs), as a GitHub App whose key the
// GitHub emulation checks and whose installation tokens it mints, against
// a platform repository that holds the key-leak probes: a chart whose
// files are links to the key file and to a token file in the secret's
// directory (one relative, climbing to the root, one absolute) and to the
// clone's git configuration, with a template that fails with their
// content, and a kustomization generating a ConfigMap from the same links.
// The key, the token file's token and every credential on the wire appear
// in no request kedge sent to GitHub (bodies, paths, queries), no PR,
// issue or comment, no log line, no git object on the server or in
// kedge's clone, and no file outside the secret's directory.
func TestSecretsNeverLeakFromAHostileRepository(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the kedge binary against the git server and the GitHub emulation")
	}
	root := t.TempDir()
	secretDir := filepath.Join(root, "secrets")
	require.NoError(t, os.MkdirAll(secretDir, 0o700))
	token := newTokenSecret(t, filepath.Join(secretDir, "token"), "eyJhbGciOiJSUzI1NiJ9.")
	keyFile := filepath.Join(secretDir, "app.pem")

	repo := filepath.Join(root, "gitops")
	treecopy.Copy(t, DemoRepo, repo)
	chart := filepath.Join(repo, "charts", "notifications")
	up := strings.Repeat("../", 40)
	// The chart's links are relative, climbing to the root: go-git
	// writes an absolute link target inside the clone it checks out.
	links := map[string]string{
		"charts/notifications/files/key":       up + strings.TrimPrefix(keyFile, "/"),
		"charts/notifications/files/token":     up + strings.TrimPrefix(token.Path, "/"),
		"charts/notifications/files/gitconfig": "../../../.git/config",
		"hostile/keyleak/key.pem":              up + strings.TrimPrefix(keyFile, "/"),
		"hostile/keyleak/token":                token.Path,
		"hostile/keyleak/gitconfig":            "../../.git/config",
	}
	for link, target := range links {
		full := filepath.Join(repo, filepath.FromSlash(link))
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.Symlink(target, full))
	}
	require.NoError(t, os.WriteFile(filepath.Join(chart, "templates", "leak.yaml"),
		[]byte(`{{ fail (print (.Files.Get "files/key") (.Files.Get "files/token") (.Files.Get "files/gitconfig")) }}`+"\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(repo, "hostile", "keyleak", "kustomization.yaml"),
		// commonLabels is deprecated: kustomize's warning about it is
		// a debug log line of its own.
		[]byte("resources:\n  - key.pem\ncommonLabels: {leak: key}\nconfigMapGenerator:\n  - name: leak\n    files: [key.pem, token, gitconfig]\n"), 0o644))

	w := NewWorld(t, Options{ClusterDir: DemoCluster, RepoDir: repo, AppAuth: true, KeyDir: secretDir})
	key := secretFile{Path: keyFile, Content: string(w.KeyPEM), body: pemBody(t, w.KeyPEM)}
	config := w.childConfig(map[string]any{"server": map[string]any{"logLevel": "debug"}})
	home, tmp := filepath.Join(root, "home"), filepath.Join(root, "tmp")
	bin, marks := filepath.Join(root, "bin"), filepath.Join(root, "marks")
	installFakePrograms(t, bin, marks)
	for _, d := range []string{home, tmp} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	out := kedgeRun{
		Args: []string{"run", "--once", "--config", config},
		Env: []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"), "HOME=" + home, "TMPDIR=" + tmp,
			"POD_NAME=kedge-0", "POD_NAMESPACE=kedge"},
		Deadline: 2 * time.Minute, MemoryLimit: 2 << 30,
	}.run(t, kedgeBinary(t))
	require.False(t, out.TimedOut)
	require.Zero(t, out.ExitCode, "kedge run --once: %s", out.Stderr)
	assert.Empty(t, marksLeft(t, marks), "a program was run")
	assert.Empty(t, out.Foreign, "processes other than kedge and its render workers")

	// The probes were live: the run met them and said so.
	require.GreaterOrEqual(t, w.Hub.MintedTokens()[InstallationID], 1, "installation tokens were minted")
	require.NotEmpty(t, w.GH.PRs(), "the run opened pull requests")
	dashboards := w.Dashboards()
	require.Len(t, dashboards, 1)
	assert.Contains(t, dashboards[0].GetBody(), "files/gitconfig is a symbolic link that leaves the chart", "the chart's refusal is on the dashboard")
	assert.Contains(t, string(out.Stderr), `"level":"DEBUG","msg":"kustomize warning"`, "render workers' output is logged at debug level")

	sources := map[string][]byte{
		"logs and report": append(append([]byte{}, out.Stdout...), out.Stderr...),
		"sent to GitHub":  sentToGitHub(w),
		"git server":      gitRequestPaths(w),
		"git objects":     gitObjects(t, serverRepos(w)...),
		"kedge's clones":  gitObjects(t, gitDirs(t, w.Cfg.Git.CacheDir)...),
	}
	require.NotEmpty(t, sources["kedge's clones"], "kedge's clones were scanned")
	wire := w.Wire.Credentials()
	require.NotEmpty(t, wire, "credentials were seen on the wire")
	files := filesUnder(t, filepath.Dir(root), secretDir)
	require.NotEmpty(t, files)
	for name, data := range files {
		sources["file "+name] = data
	}
	for label, data := range sources {
		assert.False(t, key.leakIn(data), "%s holds part of the App's key", label)
		assert.False(t, token.leakIn(data), "%s holds part of the token file's token", label)
		for _, c := range wire {
			assert.False(t, bytes.Contains(data, []byte(c)), "%s holds a credential kedge sent (%.12s…)", label, c)
		}
	}
}

// pemBody is the base64 of a PEM block, the part a leak would show.
func pemBody(t *testing.T, data []byte) string {
	t.Helper()
	block, _ := pem.Decode(data)
	require.NotNil(t, block)
	return base64.StdEncoding.EncodeToString(block.Bytes)
}

// serverRepos are the git server's bare repositories of the world.
func serverRepos(w *World) []string {
	var out []string
	for _, repo := range Repos {
		out = append(out, w.Git.RepoPath(gitName(repo)))
	}
	return out
}

// gitDirs finds the git directories under dir.
func gitDirs(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			out = append(out, p)
			return filepath.SkipDir
		}
		return nil
	})
	require.NoError(t, err)
	return out
}

// gitObjects is the content of every object of the git directories,
// packed or loose: what a byte scan of their compressed files would miss.
func gitObjects(t *testing.T, gitDirs ...string) []byte {
	t.Helper()
	var all []byte
	for _, dir := range gitDirs {
		cmd := exec.Command("git", "--git-dir="+dir, "cat-file", "--batch-all-objects", "--batch")
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME=/nonexistent"}
		out, err := cmd.Output()
		require.NoError(t, err, dir)
		all = append(all, out...)
	}
	return all
}

// filesUnder reads every regular file under dir but those under skip.
func filesUnder(t *testing.T, dir, skip string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == skip {
			return filepath.SkipDir
		}
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out[p] = data
		return nil
	})
	require.NoError(t, err)
	return out
}
