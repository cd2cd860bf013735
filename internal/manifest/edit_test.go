package manifest

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/manifest/editcheck"
)

var istio125 = drift.Desired{Revision: "1-25-0", Image: "docker.io/istio/proxyv2:1.25.0"}

func drifted(ns, kind, name string, desired drift.Desired) drift.Workload {
	w := workload(ns, kind, name)
	w.Reasons = []drift.Reason{drift.ReasonRevision}
	w.Desired = desired
	return w
}

type editCase struct {
	repo      string
	workloads []drift.Workload
	// hints by "namespace/name".
	hints map[string]Hints
}

var editCases = []editCase{
	{
		repo: "kustomize-prefix",
		workloads: []drift.Workload{
			drifted("shop", "Deployment", "prod-cart-v1", istio125),
			drifted("shop", "StatefulSet", "prod-redis-v1", istio125),
		},
	},
	{
		repo: "shared-base",
		workloads: []drift.Workload{
			drifted("team-a", "Deployment", "web", istio125),
			drifted("team-b", "Deployment", "b-web", istio125),
			drifted("team-b", "Deployment", "b-worker", istio125),
			// Already patched for an older target: the patch is updated.
			drifted("team-c", "Deployment", "web", istio125),
			drifted("team-c", "Deployment", "worker", istio125),
		},
	},
	{
		repo: "plain",
		workloads: []drift.Workload{
			drifted("payments", "Deployment", "api", istio125),
			// No sidecar wanted any more.
			drifted("payments", "StatefulSet", "ledger", drift.Desired{}),
			// Bumped for this very target already.
			drifted("kube-system", "DaemonSet", "node-agent", istio125),
			// The file has no newline at its end.
			drifted("billing", "Deployment", "billing", istio125),
		},
	},
	{
		repo: "flux",
		workloads: []drift.Workload{
			drifted("podinfo", "Deployment", "podinfo", istio125),
			drifted("web", "Deployment", "frontend", istio125),
		},
		hints: map[string]Hints{
			"podinfo/podinfo": {Paths: []string{"staging/podinfo"}, TargetNamespace: "podinfo", Via: "Flux Kustomization flux-system/podinfo"},
			"web/frontend":    {Paths: []string{"apps/frontend"}, TargetNamespace: "web", Via: "Flux Kustomization flux-system/frontend"},
		},
	},
	{
		repo: "argo",
		workloads: []drift.Workload{
			drifted("guestbook", "Deployment", "guestbook-ui", istio125),
		},
		hints: map[string]Hints{
			"guestbook/guestbook-ui": {Paths: []string{"guestbook-dev"}, Via: "Argo CD Application argocd/guestbook-dev"},
		},
	},
	{
		repo: "refused",
		workloads: []drift.Workload{
			drifted("legacy", "Deployment", "anchored", istio125),
			drifted("legacy", "Deployment", "fine", istio125),
		},
	},
	{
		repo: "verify-refusal",
		workloads: []drift.Workload{
			// The base document renders twice in env (a-app, b-app): a patch
			// by the base's name would hit both, and kustomize refuses it.
			drifted("env", "Deployment", "a-app", istio125),
			drifted("other", "Deployment", "app", istio125),
		},
	},
}

func (c editCase) hintsFor(w drift.Workload) Hints { return c.hints[w.Namespace+"/"+w.Name] }

func (c editCase) plan() *drift.Plan {
	return &drift.Plan{Cluster: "test", Workloads: append([]drift.Workload(nil), c.workloads...)}
}

// planEdits indexes repo and computes the case's edits.
func planEdits(t *testing.T, c editCase, repo string) (*drift.Plan, EditSet) {
	t.Helper()
	ix, err := BuildIndex(repo, IndexOptions{})
	require.NoError(t, err)
	plan := c.plan()
	ix.LocateAll(plan, c.hintsFor)
	set, err := ix.Edits(plan, Annotations{})
	require.NoError(t, err)
	return plan, set
}

func TestEditsGolden(t *testing.T) {
	for _, c := range editCases {
		t.Run(c.repo, func(t *testing.T) {
			plan, set := planEdits(t, c, fixtureRepo(c.repo))
			golden(t, c.repo, "edits.diff", []byte(UnifiedDiff(set.All())))

			type entry struct {
				Workload string         `json:"workload"`
				Manifest drift.Manifest `json:"manifest"`
			}
			var summary struct {
				Workloads  []entry             `json:"workloads"`
				Namespaces map[string][]string `json:"namespaces"`
				Refused    []Refusal           `json:"refused"`
			}
			summary.Namespaces = map[string][]string{}
			for _, w := range plan.Workloads {
				summary.Workloads = append(summary.Workloads, entry{w.Kind + " " + w.Namespace + "/" + w.Name, w.Manifest})
			}
			for ns, edits := range set.Namespaces {
				for _, e := range edits {
					summary.Namespaces[ns] = append(summary.Namespaces[ns], e.Path)
				}
			}
			summary.Refused = set.Refused
			out, err := json.MarshalIndent(summary, "", "  ")
			require.NoError(t, err)
			golden(t, c.repo, "plan.json", append(out, '\n'))
		})
	}
}

// TestEditsApplyAndRender applies each namespace's diff with git to a copy of
// the checkout (as its own branch would), renders every kustomize root and
// reads every changed plain file before and after, and requires that the
// only difference is the restart annotations of that namespace's workloads.
func TestEditsApplyAndRender(t *testing.T) {
	for _, c := range editCases {
		t.Run(c.repo, func(t *testing.T) {
			_, set := planEdits(t, c, fixtureRepo(c.repo))
			for _, ns := range set.NamespaceNames() {
				t.Run(ns, func(t *testing.T) {
					after := copyCase(t, c.repo)
					gitApply(t, after, UnifiedDiff(set.Namespaces[ns]))
					checkApplied(t, fixtureRepo(c.repo), after, c.plan(), set.Namespaces[ns])
				})
			}
		})
	}
}

// checkApplied holds an applied diff to editcheck's promises: nothing but
// the restart annotations changed, and every workload the edits name was
// restarted under its own identity.
func checkApplied(t *testing.T, before, after string, plan *drift.Plan, edits []FileEdit) {
	t.Helper()
	ann := Annotations{}.withDefaults()
	var restarts []editcheck.Restart
	for _, w := range plan.Workloads {
		target := TargetValue(w.Desired)
		restarts = append(restarts, editcheck.Restart{
			Namespace: w.Namespace, Kind: w.Kind, Name: w.Name,
			Annotations: map[string]string{ann.Target: target, ann.Restart: RestartValue(w, target)},
		})
	}
	var changed []string
	for _, e := range edits {
		changed = append(changed, e.Path)
	}
	res, err := editcheck.CompareRepos(before, after, changed, restarts)
	require.NoError(t, err)
	assert.Empty(t, res.Problems)
	for _, e := range edits {
		for _, id := range e.Workloads {
			assert.True(t, res.Restarted[id.String()], "%s was not restarted by the applied diff", id)
		}
	}
}

// TestEditsRerunIsANoOp applies every edit, re-indexes, and plans again: the
// restart values are derived from the target, so nothing changes and every
// restarted workload reads as already bumped.
func TestEditsRerunIsANoOp(t *testing.T) {
	for _, c := range editCases {
		t.Run(c.repo, func(t *testing.T) {
			_, set := planEdits(t, c, fixtureRepo(c.repo))
			repo := copyCase(t, c.repo)
			restarted := map[WorkloadID]bool{}
			for _, ns := range set.NamespaceNames() {
				gitApply(t, repo, UnifiedDiff(set.Namespaces[ns]))
				for _, e := range set.Namespaces[ns] {
					for _, id := range e.Workloads {
						restarted[id] = true
					}
				}
			}
			plan, again := planEdits(t, c, repo)
			assert.Empty(t, again.Namespaces)
			for _, w := range plan.Workloads {
				if restarted[WorkloadID{w.Namespace, w.Kind, w.Name}] {
					assert.Equal(t, drift.EditAlreadyBumped, w.Manifest.Edit, "%s/%s", w.Namespace, w.Name)
				}
			}
		})
	}
}

func TestEditsWithoutLocateUseNoHints(t *testing.T) {
	ix, err := BuildIndex(fixtureRepo("kustomize-prefix"), IndexOptions{})
	require.NoError(t, err)
	plan := &drift.Plan{Workloads: []drift.Workload{drifted("shop", "Deployment", "prod-cart-v1", istio125)}}
	plan.Workloads[0].Manifest = drift.Manifest{Status: drift.ManifestFound, Path: "apps/shop/deployment.yaml", Edit: drift.EditInPlace}
	set, err := ix.Edits(plan, Annotations{Restart: "example.com/restart", Target: "example.com/target"})
	require.NoError(t, err)
	require.Len(t, set.Namespaces["shop"], 1)
	after := string(set.Namespaces["shop"][0].After)
	assert.Contains(t, after, "example.com/restart: ")
	assert.Contains(t, after, "example.com/target: ")
}

func TestRestartValueIsStablePerTarget(t *testing.T) {
	cart := drifted("shop", "Deployment", "cart", istio125)
	other := drifted("shop", "Deployment", "checkout", istio125)
	target := TargetValue(cart.Desired)
	assert.Equal(t, "1-25-0@docker.io/istio/proxyv2:1.25.0", target)
	assert.Equal(t, RestartValue(cart, target), RestartValue(cart, target))
	assert.NotEqual(t, RestartValue(cart, target), RestartValue(other, target))
	assert.NotEqual(t, RestartValue(cart, target), RestartValue(cart, TargetValue(drift.Desired{Revision: "1-26-0", Image: "docker.io/istio/proxyv2:1.26.0"})))
	assert.Equal(t, "no-sidecar", TargetValue(drift.Desired{}))
	assert.Equal(t, "default", TargetValue(drift.Desired{Revision: "default"}))
}

func TestEditsRefuseWhenNoOverlayIsSafe(t *testing.T) {
	ix, err := BuildIndex(fixtureRepo("shared-base"), IndexOptions{})
	require.NoError(t, err)
	plan := &drift.Plan{Workloads: []drift.Workload{drifted("team-z", "Deployment", "web", istio125)}}
	ix.LocateAll(plan, func(drift.Workload) Hints {
		return Hints{Paths: []string{"base"}, TargetNamespace: "team-z"}
	})
	set, err := ix.Edits(plan, Annotations{})
	require.NoError(t, err)
	assert.Empty(t, set.Namespaces)
	require.Len(t, set.Refused, 1)
	assert.Equal(t, Refusal{
		Namespace: "team-z", Path: "base/web.yaml",
		Reason:    "base/web.yaml is deployed as several workloads and no overlay renders it only as Deployment team-z/web",
		Workloads: []WorkloadID{{"team-z", "Deployment", "web"}},
	}, set.Refused[0])
}
