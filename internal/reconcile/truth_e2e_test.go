package reconcile_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kedge-io/kedge/internal/assemble"
	"github.com/kedge-io/kedge/internal/metrics"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/plan"
	"github.com/kedge-io/kedge/internal/reconcile"
	"github.com/kedge-io/kedge/internal/testing/ghemu"
)

const platformRepo = "https://github.com/example-org/platform.git"

// logBuffer collects a cycle's log lines; the cycle may log from several
// goroutines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// lines are the logged lines at level.
func (b *logBuffer) lines(level string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, l := range strings.Split(b.buf.String(), "\n") {
		if strings.Contains(l, "level="+level+" ") {
			out = append(out, l)
		}
	}
	return out
}

// loggedCycle is cycle with its log lines kept.
func (w *world) loggedCycle() (*reconcile.Report, *logBuffer) {
	w.t.Helper()
	logs := &logBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	svc, err := assemble.New(context.Background(), w.cfg, w.source, assemble.Options{Log: log})
	require.NoError(w.t, err)
	report, err := svc.Reconciler.RunOnce(context.Background())
	require.NoError(w.t, err)
	return report, logs
}

// change edits the cluster the next cycle reads.
func (w *world) change(edit func(set *objects.Set)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	edit(w.set)
}

// applyFrom makes the named Flux Kustomizations apply from another
// repository than the one kedge is configured for; none named: all of them,
// and every Argo CD Application's sources too.
func applyFrom(url string, kustomizations ...string) func(*objects.Set) {
	return func(set *objects.Set) {
		set.GitRepositories = append(set.GitRepositories, objects.GitRepository{
			ObjectMeta: metav1.ObjectMeta{Name: "platform", Namespace: "flux-system"},
			Spec:       objects.GitRepositorySpec{URL: url},
		})
		for i := range set.Kustomizations {
			if len(kustomizations) == 0 || slices.Contains(kustomizations, set.Kustomizations[i].Name) {
				set.Kustomizations[i].Spec.SourceRef.Name = "platform"
			}
		}
		for i := range set.Applications {
			if src := set.Applications[i].Spec.Source; len(kustomizations) == 0 && src != nil {
				src.RepoURL = url
			}
		}
	}
}

// fluxNamespaces are the namespaces of the demo plan whose drifted
// workloads Flux applies.
func fluxNamespaces(t *testing.T, w *world) []string {
	t.Helper()
	set, err := w.source(context.Background())
	require.NoError(t, err)
	res, err := plan.Build(set, assemble.PlanOptions(w.cfg, ""))
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, wl := range res.Plan.Workloads {
		if wl.Labels["kustomize.toolkit.fluxcd.io/name"] != "" {
			seen[wl.Namespace] = true
		}
	}
	out := make([]string, 0, len(seen))
	for ns := range seen {
		out = append(out, ns)
	}
	sort.Strings(out)
	return out
}

// onlyConfiguredRepository leaves out the demo's namespace the reviews
// team's repository applies: these worlds are configured for the platform
// repository alone, and what they count is the mismatch they make.
func onlyConfiguredRepository(set *objects.Set) {
	set.Pods = withoutNamespace(set.Pods, "reviews")
}

func TestRepositoryMismatchIsLoud(t *testing.T) {
	tests := []struct {
		name           string
		kustomizations []string
		namespaces     func(t *testing.T, w *world) []string
	}{
		{"two namespaces applied from another repository", []string{"analytics", "search"},
			func(*testing.T, *world) []string { return []string{"analytics", "search"} }},
		{"the whole cluster applied from another repository", nil, fluxNamespaces},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			w.change(onlyConfiguredRepository)
			foreign := tt.namespaces(t, w)
			require.NotEmpty(t, foreign)
			w.change(applyFrom(platformRepo, tt.kustomizations...))
			sentence := fmt.Sprintf("the cluster applies namespaces %s from github.com/example-org/platform; kedge is configured for example-org/gitops",
				strings.Join(foreign, ", "))

			for cycle := 1; cycle <= 2; cycle++ {
				report, logs := w.loggedCycle()
				var said []string
				for _, l := range logs.lines("WARN") {
					if strings.Contains(l, "the cluster applies") {
						said = append(said, l)
					}
				}
				require.Len(t, said, 1, "cycle %d: one WARN line per cycle", cycle)
				assert.Contains(t, said[0], `msg="`+sentence+`"`)

				m := metrics.New(nil)
				m.ObserveCycle("start", report, nil, report.Duration, time.Now())
				want := fmt.Sprintf(`
# HELP kedge_repository_mismatch Namespaces whose drifted workloads the cluster applies from another repository than the configured one, by that repository, in the last cycle.
# TYPE kedge_repository_mismatch gauge
kedge_repository_mismatch{repository="github.com/example-org/platform"} %d
`, len(foreign))
				require.NoError(t, testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "kedge_repository_mismatch"))
			}

			body, _ := dashboardBody(t, w.gh)
			assert.True(t, strings.HasPrefix(body, "**Repository mismatch:** "+sentence+"."), "the dashboard opens with the mismatch:\n%s", body)
			prs := openPRs(w.gh)
			for _, ns := range foreign {
				assert.NotContains(t, prs, "kedge/prod-eu-1/"+ns, "no PR for a namespace applied from elsewhere")
				row := dashboardRow(body, ns)
				assert.Contains(t, row, "applied from another repository")
				assert.Contains(t, row, "github.com/example-org/platform")
				assert.NotContains(t, row, "refused")
			}
		})
	}
}

func TestNoMismatchNoWarningAndNoMetric(t *testing.T) {
	w := newWorld(t)
	w.change(onlyConfiguredRepository)
	report, logs := w.loggedCycle()
	for _, l := range logs.lines("WARN") {
		assert.NotContains(t, l, "the cluster applies")
	}
	body, _ := dashboardBody(t, w.gh)
	assert.NotContains(t, body, "Repository mismatch")
	m := metrics.New(nil)
	m.ObserveCycle("start", report, nil, report.Duration, time.Now())
	assert.Zero(t, testutil.CollectAndCount(m.Registry(), "kedge_repository_mismatch"))
}

// optOut annotates the namespace, or its workloads when kinds are given.
func optOut(namespace string, workloads bool) func(*objects.Set) {
	return func(set *objects.Set) {
		annotate := func(m *metav1.ObjectMeta) {
			if m.Annotations == nil {
				m.Annotations = map[string]string{}
			}
			m.Annotations["kedge.io/ignore"] = "true"
		}
		if !workloads {
			for i := range set.Namespaces {
				if set.Namespaces[i].Name == namespace {
					annotate(&set.Namespaces[i].ObjectMeta)
				}
			}
			return
		}
		for i := range set.Deployments {
			if set.Deployments[i].Namespace == namespace {
				annotate(&set.Deployments[i].ObjectMeta)
			}
		}
	}
}

func deleteWorkloads(namespace string) func(*objects.Set) {
	return func(set *objects.Set) {
		set.Deployments = slices.DeleteFunc(set.Deployments, func(d *appsv1.Deployment) bool { return d.Namespace == namespace })
		set.ReplicaSets = slices.DeleteFunc(set.ReplicaSets, func(r *objects.ReplicaSet) bool { return r.Namespace == namespace })
		set.Pods = withoutNamespace(set.Pods, namespace)
	}
}

func TestClosingCommentSaysWhatHappened(t *testing.T) {
	const ns = "search"
	tests := []struct {
		name     string
		change   func(w *world)
		kind     string
		says     []string
		mustNot  []string
		optedOut bool
	}{
		{
			name:   "the namespace opted out",
			change: func(w *world) { w.change(optOut(ns, false)) },
			kind:   "closed-opted-out",
			says:   []string{"Namespace **search** opted out of kedge", "`kedge.io/ignore=true`", "| opted out: annotation kedge.io/ignore=true on the namespace |"},
		},
		{
			name:   "every workload opted out",
			change: func(w *world) { w.change(optOut(ns, true)) },
			kind:   "closed-opted-out",
			says:   []string{"of this PR opted out of kedge", "on itself or on its pod template", "| opted out: annotation kedge.io/ignore=true |"},
		},
		{
			name:   "the pods were restarted without a merge",
			change: func(w *world) { w.change(func(set *objects.Set) { set.Pods = withoutNamespace(set.Pods, ns) }) },
			kind:   "closed",
			says:   []string{"now run what the mesh injects"},
		},
		{
			name:   "the workloads were deleted",
			change: func(w *world) { w.change(deleteWorkloads(ns)) },
			kind:   "closed-deleted",
			says:   []string{"no longer exists in namespace **search**", "| deleted from the cluster |"},
		},
		{
			name:   "the configuration excludes the namespace",
			change: func(w *world) { w.cfg.Namespaces.Exclude = []string{ns} },
			kind:   "closed-not-selected",
			says:   []string{"configuration no longer selects", "namespaces.exclude"},
		},
		{
			name:   "the namespace is applied from another repository",
			change: func(w *world) { w.change(applyFrom(platformRepo, ns)) },
			kind:   "closed-not-editable",
			says:   []string{"still drifts", "github.com/example-org/platform.git, not this repository"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			w.cycle()
			number, ok := openPRs(w.gh)["kedge/prod-eu-1/"+ns]
			require.True(t, ok)

			tt.change(w)
			w.cycle()
			pr, _ := w.gh.PR(number)
			assert.Equal(t, "closed", pr.GetState())
			comments := w.gh.Comments(number)
			require.Len(t, comments, 1)
			body := comments[0].GetBody()
			assert.Contains(t, body, "<!-- kedge:comment "+tt.kind+" -->")
			for _, s := range tt.says {
				assert.Contains(t, body, s)
			}
			if tt.kind != "closed" {
				assert.NotContains(t, body, "what the mesh injects", "only a resolved drift says the workloads run the desired proxy")
			}

			w.gh.ResetCalls()
			w.cycle()
			assert.Len(t, w.gh.Comments(number), 1, "said once")
		})
	}
}

// upgradeProxy moves a revision's injected proxy to another tag, as a patch
// release of Istio does.
func upgradeProxy(revision, from, to string) func(*objects.Set) {
	return func(set *objects.Set) {
		for i := range set.ConfigMaps {
			cm := &set.ConfigMaps[i]
			if cm.Name == "istio-sidecar-injector-"+revision {
				cm.Data = maps.Clone(cm.Data)
				cm.Data["values"] = strings.Replace(cm.Data["values"], `"tag": "`+from+`"`, `"tag": "`+to+`"`, 1)
			}
		}
	}
}

func TestNewTargetAfterAMergeTakesOverItsRollout(t *testing.T) {
	w := newWorld(t)
	w.cycle()
	merged := openPRs(w.gh)["kedge/prod-eu-1/search"]
	require.NotZero(t, merged)
	require.NoError(t, w.gh.MergePR(merged, ghemu.GitFastForward(w.git.RepoPath(repoName))))
	w.cycle()
	require.Empty(t, w.gh.Comments(merged), "rolling out: nothing to say yet")

	w.change(upgradeProxy("1-25-0", "1.25.0", "1.25.1"))
	w.cycle()
	newer := openPRs(w.gh)["kedge/prod-eu-1/search"]
	require.NotZero(t, newer, "the newer target opens a PR")
	require.NotEqual(t, merged, newer)
	comments := w.gh.Comments(merged)
	require.Len(t, comments, 1)
	body := comments[0].GetBody()
	assert.Contains(t, body, "<!-- kedge:comment superseded -->")
	assert.Contains(t, body, fmt.Sprintf("[#%d](", newer))

	w.cycle()
	assert.Len(t, w.gh.Comments(merged), 1, "said once")
}
