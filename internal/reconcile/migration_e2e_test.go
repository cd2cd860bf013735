package reconcile_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/kedge-io/kedge/internal/config"
	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/mesh"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/prstate"
	"github.com/kedge-io/kedge/internal/testing/ghemu"
)

const namespacesFile = "infrastructure/namespaces/namespaces.yaml"

// newMigrationWorld is the demo after its canary: revision 1-25-0 proved
// itself and the tag stable points at it. Namespaces pinned to 1-25-0 move
// onto the tag, so the next upgrade only moves the tag; the shop team's
// namespaces move from the default revision to stable, losing the
// istio-injection=enabled that would otherwise win over istio.io/rev.
func newMigrationWorld(t *testing.T) *world {
	t.Helper()
	w := newWorld(t)
	w.cfg.Migrations = []config.Migration{
		{From: "1-25-0", To: "stable"},
		{From: "default", To: "stable", Namespaces: map[string]string{"team": "shop"}},
	}
	require.NoError(t, w.cfg.Validate(config.ModeRun))
	return w
}

func TestMigrationOpensOnePRWithTheRelabelAndTheRestarts(t *testing.T) {
	w := newMigrationWorld(t)
	want := plannedEdits(t, w)
	report := w.cycle()

	prs := openPRs(w.gh)
	assert.Len(t, prs, len(want), "still one PR per namespace with edits")
	branch := "kedge/prod-eu-1/search"
	require.Contains(t, prs, branch)
	number := prs[branch]
	pr, _ := w.gh.PR(number)

	// The branch holds the relabel and the restart, exactly as planned.
	assert.ElementsMatch(t, []string{namespacesFile, "apps/prod-eu-1/search/indexer.yaml"}, changedFiles(t, w.git, branch))
	for path, content := range want["search"] {
		assert.Equal(t, content, w.git.ReadFile(t, repoName, branch, path), path)
	}
	base := w.git.ReadFile(t, repoName, "main", namespacesFile)
	assert.Equal(t,
		strings.Replace(base, "    team: search\n    istio.io/rev: 1-25-0\n", "    team: search\n    istio.io/rev: stable\n", 1),
		w.git.ReadFile(t, repoName, branch, namespacesFile), "only the search Namespace changes")
	assert.Contains(t, w.git.ReadFile(t, repoName, branch, "apps/prod-eu-1/search/indexer.yaml"),
		`kedge.io/restart-target: "1-25-0@docker.io/istio/proxyv2:1.25.0"`)

	// Title, body and commit say it is a migration, from → to.
	assert.Equal(t, "istio: move search to stable and restart 1 workload (prod-eu-1)", pr.GetTitle())
	assert.Contains(t, pr.GetBody(), "### Migration")
	assert.Contains(t, pr.GetBody(), "from **1-25-0** to **stable**")
	assert.Contains(t, pr.GetBody(), "/blob/kedge/prod-eu-1/search/"+namespacesFile)
	log := w.git.Log(t, repoName, branch)
	require.NotEmpty(t, log)
	assert.Contains(t, log[0].Message, "Move namespace search from 1-25-0 to stable ("+namespacesFile+").")
	state, ok := prstate.ParseState(pr.GetBody())
	require.True(t, ok)
	assert.Contains(t, state.Targets, prstate.Target{Namespace: "search", Kind: "Namespace", Name: "search", Revision: "stable"})

	// Namespaces with istio-injection=enabled move too: the label, which
	// wins over istio.io/rev, is taken off in the same PR.
	for _, ns := range []string{"shop", "orders", "catalog"} {
		b := "kedge/prod-eu-1/" + ns
		require.Contains(t, prs, b)
		assert.Contains(t, changedFiles(t, w.git, b), namespacesFile, ns)
		doc := namespaceDocument(w.git.ReadFile(t, repoName, b, namespacesFile), ns)
		assert.NotContains(t, doc, "istio-injection", ns)
		assert.Contains(t, doc, "istio.io/rev: ", ns)
		p, _ := w.gh.PR(prs[b])
		assert.Contains(t, p.GetBody(), "and removes `istio-injection`", ns)
		log := w.git.Log(t, repoName, b)
		require.NotEmpty(t, log)
		assert.Contains(t, log[0].Message, "removing istio-injection", ns)
	}
	shopNamespace := w.git.ReadFile(t, repoName, "kedge/prod-eu-1/shop", namespacesFile)
	assert.Equal(t, strings.Replace(base, "  name: shop\n  labels:\n    team: shop\n    istio-injection: enabled\n",
		"  name: shop\n  labels:\n    team: shop\n    istio.io/rev: \"stable\"\n", 1), shopNamespace, "only the shop Namespace changes")
	blocked := map[string]drift.MigrationBlock{}
	removed := map[string][]string{}
	for _, m := range report.Plan.Migrations {
		blocked[m.Namespace] = m.Blocked
		removed[m.Namespace] = m.RemoveLabels
	}
	assert.Equal(t, map[string]drift.MigrationBlock{"catalog": "", "orders": "", "shop": "", "search": ""}, blocked)
	assert.Equal(t, map[string][]string{
		"catalog": {"istio-injection"}, "orders": {"istio-injection"}, "shop": {"istio-injection"}, "search": nil,
	}, removed)

	// Nothing changed: nothing is written.
	w.gh.ResetCalls()
	pushes := w.git.Pushes()
	w.cycle()
	assert.Empty(t, callNames(w.gh.MutatingCalls()))
	assert.Equal(t, pushes, w.git.Pushes())

	// The namespace is relabelled and its pods run the new revision (done
	// by hand, not through the PR): the PR has nothing left to do.
	w.mu.Lock()
	relabelNamespace(w.set.Namespaces, "search", "stable")
	movePods(t, w.set.Pods, "search", "indexer-", "1-25-0", "docker.io/istio/proxyv2:1.25.0")
	w.mu.Unlock()
	report = w.cycle()
	pr, _ = w.gh.PR(number)
	assert.Equal(t, "closed", pr.GetState())
	assert.False(t, pr.GetMerged())
	comments := w.gh.Comments(number)
	require.Len(t, comments, 1)
	assert.Contains(t, comments[0].GetBody(), "kedge:comment closed")
	for _, m := range report.Plan.Migrations {
		assert.NotEqual(t, "search", m.Namespace, "a namespace on the target is no longer selected")
	}
}

func TestMergedMigrationIsFollowedUntilRolledOut(t *testing.T) {
	w := newMigrationWorld(t)
	w.cycle()
	number := openPRs(w.gh)["kedge/prod-eu-1/search"]
	require.NotZero(t, number)
	require.NoError(t, w.gh.MergePR(number, ghemu.GitFastForward(w.git.RepoPath(repoName))))

	// Merged, the GitOps tool has not applied it yet: Git already says
	// stable and the restart is in, so nothing new is opened.
	w.gh.ResetCalls()
	report := w.cycle()
	assert.NotContains(t, openPRs(w.gh), "kedge/prod-eu-1/search")
	assert.Empty(t, w.gh.Comments(number))
	var search *drift.Migration
	for i := range report.Plan.Migrations {
		if report.Plan.Migrations[i].Namespace == "search" {
			search = &report.Plan.Migrations[i]
		}
	}
	require.NotNil(t, search)
	assert.Equal(t, drift.EditLabelAlreadySet, search.Manifest.Edit)
	assert.Equal(t, prstate.PRMergedRollingOut, only(t, report, "search").State)

	// Applied: relabelled, pods replaced. kedge says so once.
	w.mu.Lock()
	relabelNamespace(w.set.Namespaces, "search", "stable")
	movePods(t, w.set.Pods, "search", "indexer-", "1-25-0", "docker.io/istio/proxyv2:1.25.0")
	w.mu.Unlock()
	w.cycle()
	w.cycle()
	comments := w.gh.Comments(number)
	require.Len(t, comments, 1)
	assert.Contains(t, comments[0].GetBody(), "kedge:comment rolled-out")
}

// namespaceDocument is the document of a multi-document file that defines
// the named Namespace.
func namespaceDocument(file, name string) string {
	for _, doc := range strings.Split(file, "\n---\n") {
		if strings.Contains(doc, "\n  name: "+name+"\n") {
			return doc
		}
	}
	return ""
}

func relabelNamespace(namespaces []corev1.Namespace, name, value string) {
	for i := range namespaces {
		if namespaces[i].Name == name {
			labels := map[string]string{}
			for k, v := range namespaces[i].Labels {
				labels[k] = v
			}
			labels[mesh.LabelRev] = value
			namespaces[i].Labels = labels
		}
	}
}

// movePods makes the pods look re-injected by rev: status annotation,
// revision annotation and the proxy image, wherever the proxy runs.
func movePods(t *testing.T, pods []*objects.Pod, namespace, prefix, rev, image string) {
	t.Helper()
	moved := 0
	for i := range pods {
		if pods[i].Namespace != namespace || !strings.HasPrefix(pods[i].Name, prefix) {
			continue
		}
		moving := *pods[i]
		p := &moving
		pods[i] = p
		var status map[string]any
		require.NoError(t, json.Unmarshal([]byte(p.Annotations[mesh.AnnotationStatus]), &status))
		status["revision"] = rev
		raw, err := json.Marshal(status)
		require.NoError(t, err)
		annotations := map[string]string{}
		for k, v := range p.Annotations {
			annotations[k] = v
		}
		annotations[mesh.AnnotationStatus] = string(raw)
		annotations[mesh.AnnotationRev] = rev
		p.Annotations = annotations
		if p.Proxy != nil {
			p.Proxy = &objects.PodProxy{Image: image, Native: p.Proxy.Native}
		}
		moved++
	}
	require.Positive(t, moved)
}
