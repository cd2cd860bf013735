package reconcile_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/kedge-io/kedge/internal/cluster/snapshot"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/prstate"
	"github.com/kedge-io/kedge/internal/testing/ghemu"
	"github.com/kedge-io/kedge/internal/testing/meshtest"
)

const (
	runtimeFixture = "../../testdata/runtime"
	runtimeProxy   = "docker.io/istio/proxyv2:1.24.1"
)

// TestFlaggerCanaryEndToEnd: the pods of a Flagger Canary's primary drift.
// kedge edits the Canary's target in Git, and nothing else (neither the
// primary, which Git does not hold, nor the Canary); the PR says that
// Flagger analyses and promotes the change. Once merged, the target rolls
// and its canary pods run the new proxy, but the rollout is followed until
// Flagger promoted the template and the primary's pods run it too.
func TestFlaggerCanaryEndToEnd(t *testing.T) {
	w := newWorld(t)
	abs, err := filepath.Abs(filepath.Join(runtimeFixture, "repo"))
	require.NoError(t, err)
	const fleet = "runtime-fleet"
	w.git.CreateRepo(t, fleet, abs)
	w.cfg.Repo.Name, w.cfg.Repo.URL = fleet, w.git.RepoURL(fleet)
	w.cfg.Namespaces.Include = []string{"canary"}
	w.gh = ghemu.New(t, ghemu.Options{
		Owner: "example-org", Repo: fleet,
		Tokens:   map[string]string{token: "kedge-bot"},
		Branches: ghemu.GitBranches(w.git.RepoPath(fleet)),
	})
	w.cfg.GitHub.APIURL = w.gh.URL + "/"
	w.set, err = snapshot.Read(filepath.Join(runtimeFixture, "cluster"))
	require.NoError(t, err)

	w.cycle()
	prs := openPRs(w.gh)
	require.Len(t, prs, 1)
	const branch = "kedge/prod-eu-1/canary"
	number := prs[branch]
	require.NotZero(t, number)
	assert.Equal(t, []string{"apps/canary/podinfo.yaml"}, changedFilesIn(t, w, fleet, branch), "only the target is edited")
	pr, _ := w.gh.PR(number)
	body := pr.GetBody()
	assert.Contains(t, body, "**Deployment podinfo** is the target of Flagger Canary **podinfo**: Flagger detects the change of its template, runs the Canary's analysis and, when the analysis passes, promotes the template to **Deployment podinfo-primary**")
	assert.NotContains(t, body, "podinfo-primary |", "the primary is no row of its own")
	state, ok := prstate.ParseState(body)
	require.True(t, ok)
	require.Len(t, state.Targets, 1)
	assert.Equal(t, "Deployment", state.Targets[0].Kind)
	assert.Equal(t, "podinfo", state.Targets[0].Name)

	require.NoError(t, w.gh.MergePR(number, ghemu.GitFastForward(w.git.RepoPath(fleet))))
	merged := w.git.ReadFile(t, fleet, "main", "apps/canary/podinfo.yaml")
	annotations := restartAnnotations(t, merged)

	// Flux applied the target; Flagger scaled it up for its analysis: the
	// canary pods run the new proxy, the primary's still the old one.
	w.mu.Lock()
	w.set = applied(w.set, annotations, false)
	w.mu.Unlock()
	w.cycle()
	assert.Empty(t, w.gh.Comments(number), "the rollout waits for the promotion")
	assert.Empty(t, openPRs(w.gh), "the target is already bumped")

	// Flagger promoted the template: the primary's pods restarted.
	w.mu.Lock()
	w.set = applied(w.set, annotations, true)
	w.mu.Unlock()
	w.cycle()
	comments := w.gh.Comments(number)
	require.Len(t, comments, 1)
	assert.Contains(t, comments[0].GetBody(), "kedge:comment rolled-out")
}

// restartAnnotations reads kedge's annotations off the merged target.
func restartAnnotations(t *testing.T, manifest string) map[string]string {
	t.Helper()
	var d appsv1.Deployment
	require.NoError(t, yaml.Unmarshal([]byte(manifest), &d))
	require.NotEmpty(t, d.Spec.Template.Annotations)
	return d.Spec.Template.Annotations
}

// applied is the canary namespace after Flux applied the merged target:
// its template carries the annotations and its canary pods run the new
// proxy; once promoted, the primary's pods run it instead and the target
// is scaled to zero again.
func applied(set *objects.Set, annotations map[string]string, promoted bool) *objects.Set {
	out := *set
	out.Deployments = nil
	for _, d := range set.Deployments {
		if d.Namespace == "canary" && d.Name == "podinfo" {
			c := *d
			c.Spec.Template = *d.Spec.Template.DeepCopy()
			c.Spec.Template.Annotations = annotations
			d = &c
		}
		out.Deployments = append(out.Deployments, d)
	}
	out.Pods = nil
	var primary []*objects.Pod
	for _, p := range set.Pods {
		if p.Namespace != "canary" {
			out.Pods = append(out.Pods, p)
			continue
		}
		if p.Labels["app"] == "podinfo-primary" {
			primary = append(primary, p)
		}
	}
	for _, p := range primary {
		if promoted {
			c := *p
			c.Proxy = &objects.PodProxy{Image: runtimeProxy}
			p = &c
		}
		out.Pods = append(out.Pods, p)
	}
	if !promoted {
		// The target's canary pod, made from its new template.
		canary := *primary[0]
		canary.Name = "podinfo-6c9d8b7f4-k2x9p"
		canary.Labels = map[string]string{"app": "podinfo", "pod-template-hash": "6c9d8b7f4"}
		canary.Proxy = &objects.PodProxy{Image: runtimeProxy}
		canary.OwnerReferences = nil
		for _, rs := range set.ReplicaSets {
			if rs.Namespace == "canary" && rs.OwnerReferences[0].Name == "podinfo" {
				canary.OwnerReferences = []metav1.OwnerReference{meshtest.ControllerRef("apps/v1", "ReplicaSet", rs.Name, string(rs.UID))}
			}
		}
		out.Pods = append(out.Pods, &canary)
	}
	return &out
}
