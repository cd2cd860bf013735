package chaos

import (
	"bytes"
	"context"
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
// text, comments), the git history it pushed, the git server's request
// log, and every file of its cache directory, git remote configuration
// included.
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
			}
			require.Contains(t, string(sources["errors, reports and metrics"]), "kedge_", "metrics were scraped")
			require.NotEmpty(t, sources["sent to GitHub"])
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
