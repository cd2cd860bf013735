package chaos

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/kedge-io/kedge/internal/assemble"
	"github.com/kedge-io/kedge/internal/cluster/snapshot"
	"github.com/kedge-io/kedge/internal/config"
	"github.com/kedge-io/kedge/internal/objects"
)

// ChildEnv names the configuration file of a cycle run in a child process:
// a test binary started with it set runs RunChildCycle instead of tests
// (see TestMain).
const ChildEnv = "KEDGE_CHAOS_CYCLE_CONFIG"

// RunChildCycle is `kedge run --once` with a snapshot source: it loads the
// configuration file, runs one cycle and returns the exit code.
func RunChildCycle(configFile string) int {
	cfg, err := config.Load(configFile, nil, nil)
	if err == nil {
		err = cfg.Validate(config.ModeRun)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	source := func(context.Context) (*objects.Set, error) { return snapshot.Read(cfg.Source.Snapshot) }
	svc, err := assemble.New(context.Background(), cfg, source, assemble.Options{})
	if err == nil {
		_, err = svc.Reconciler.RunOnce(context.Background())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// SigkillCycle runs one cycle in a child process, `kedge run --once` as
// an operator runs it, and sends it SIGKILL at the first request rule
// cuts: before the request goes on, or once the remote side acted on it
// but before the answer comes back. Nothing in the process gets to clean
// up; the next cycle finds the cache directory as the kill left it.
func (w *World) SigkillCycle(rule Rule) CycleResult {
	w.T.Helper()
	mark := w.mark()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), ChildEnv+"="+w.childConfig(nil))
	// Read only once the process was reaped, when Wait has copied it all.
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	must(w.T, cmd.Start())
	exited := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()
	w.Wire.SetRule(rule)
	w.Wire.KillOnCut(func(Step) {
		_ = cmd.Process.Kill()
		<-exited
	})
	select {
	case <-exited:
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		<-exited
		w.T.Fatalf("the cycle's process did not end: %s", stderr.String())
	}
	if waitErr != nil {
		waitErr = fmt.Errorf("%w: %s", waitErr, stderr.String())
	}
	return w.record(mark, waitErr)
}

// childConfig writes the world's configuration, with the cluster as a
// snapshot directory and extra keys laid over, for a child process.
func (w *World) childConfig(extra map[string]any) string {
	w.T.Helper()
	dir := w.T.TempDir()
	set, _ := w.Source(context.Background())
	snapshotDir := filepath.Join(dir, "cluster")
	must(w.T, snapshot.Write(set, snapshotDir))
	c := w.Cfg
	github := map[string]any{"apiURL": c.GitHub.APIURL}
	if c.GitHub.Token != "" {
		github["token"] = c.GitHub.Token
	} else {
		github["appID"], github["installationID"], github["privateKeyFile"] = c.GitHub.AppID, c.GitHub.InstallationID, c.GitHub.PrivateKeyFile
	}
	doc := map[string]any{
		"cluster":   c.Cluster,
		"repo":      map[string]any{"owner": c.Repo.Owner, "name": c.Repo.Name, "url": c.Repo.URL},
		"repos":     repoRules(c.Repos),
		"github":    github,
		"source":    map[string]any{"snapshot": snapshotDir},
		"git":       map[string]any{"cacheDir": c.Git.CacheDir},
		"limits":    map[string]any{"mutationGap": c.Limits.MutationGap.String(), "maxRetryAfter": c.Limits.MaxRetryAfter.String()},
		"reviewers": map[string]any{"byNamespace": c.Reviewers.ByNamespace},
	}
	for k, v := range extra {
		doc[k] = v
	}
	data, err := yaml.Marshal(doc)
	must(w.T, err)
	file := filepath.Join(dir, "kedge.yaml")
	must(w.T, os.WriteFile(file, data, 0o600))
	return file
}

// repoRules is the repos: key of a configuration file.
func repoRules(rules []config.RepoRule) []map[string]any {
	out := make([]map[string]any, 0, len(rules))
	for _, r := range rules {
		out = append(out, map[string]any{"match": r.Match, "cloneURL": r.CloneURL, "baseBranch": r.BaseBranch, "paths": r.Paths})
	}
	return out
}
