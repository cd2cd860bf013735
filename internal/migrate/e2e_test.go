package migrate_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kedge-io/kedge/internal/assemble"
	"github.com/kedge-io/kedge/internal/cluster/snapshot"
	"github.com/kedge-io/kedge/internal/config"
	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/plan"
	"github.com/kedge-io/kedge/internal/testing/meshtest"
)

const (
	demoCluster = "../../testdata/demo/cluster"
	demoRepo    = "../../testdata/demo/gitops"
)

// demoConfig: after the canary, namespaces pinned to revision 1-25-0 move
// onto the tag stable (which now points at it), and the shop team's
// namespaces move from the default revision to stable.
func demoConfig(t *testing.T, migrations ...config.Migration) *config.Config {
	t.Helper()
	cfg, err := config.Load("", nil, nil)
	require.NoError(t, err)
	cfg.Cluster = "prod-eu-1"
	cfg.Migrations = migrations
	require.NoError(t, cfg.Validate(config.ModePlan))
	return cfg
}

var demoMigrations = []config.Migration{
	{From: "1-25-0", To: "stable"},
	{From: "default", To: "stable", Namespaces: map[string]string{"team": "shop"}},
}

func readDemo(t *testing.T) *objects.Set {
	t.Helper()
	set, err := snapshot.Read(demoCluster)
	require.NoError(t, err)
	return set
}

func TestDemoPlanShowsMigrations(t *testing.T) {
	set := readDemo(t)
	res, err := plan.Build(set, assemble.PlanOptions(demoConfig(t, demoMigrations...), demoRepo))
	require.NoError(t, err)

	byNamespace := map[string]drift.Migration{}
	for _, m := range res.Plan.Migrations {
		byNamespace[m.Namespace] = m
	}
	assert.Len(t, res.Plan.Migrations, 4)
	nsFile := "infrastructure/namespaces/namespaces.yaml"
	assert.Equal(t, drift.Migration{
		Namespace: "search", From: "1-25-0", To: "stable", Revision: "1-25-0",
		Manifest:  drift.Manifest{Status: drift.ManifestFound, Path: nsFile, Edit: drift.EditInPlace},
		Workloads: []drift.MigrationWorkload{{Kind: "Deployment", Name: "indexer"}},
	}, byNamespace["search"])
	// istio-injection=enabled wins over istio.io/rev: it is taken off in
	// the same edit of the Namespace document.
	for ns, workloads := range map[string][]drift.MigrationWorkload{
		"orders":  {{Kind: "Deployment", Name: "orders-notifications"}, {Kind: "Deployment", Name: "orders-worker"}, {Kind: "StatefulSet", Name: "orders-db"}},
		"catalog": {{Kind: "Deployment", Name: "catalog-api"}, {Kind: "Deployment", Name: "catalog-image-resizer"}},
	} {
		m := byNamespace[ns]
		assert.Empty(t, m.Blocked, "%s: %s", ns, m.Detail)
		assert.Equal(t, []string{"istio-injection"}, m.RemoveLabels, ns)
		assert.Equal(t, drift.Manifest{Status: drift.ManifestFound, Path: nsFile, Edit: drift.EditInPlace}, m.Manifest, ns)
		assert.Equal(t, workloads, m.Workloads, ns)
	}
	nsEdit := func(ns string) string {
		for _, e := range res.Edits.Namespaces[ns] {
			if e.Path == nsFile {
				return string(e.After)
			}
		}
		return ""
	}
	before, err := os.ReadFile(filepath.Join(demoRepo, nsFile))
	require.NoError(t, err)
	assert.Equal(t, strings.Replace(string(before), "    team: orders\n    istio-injection: enabled\n    istio.io/rev: 1-25-0\n", "    team: orders\n    istio.io/rev: stable\n", 1), nsEdit("orders"))
	assert.Equal(t, strings.Replace(string(before), "  name: shop\n  labels:\n    team: shop\n    istio-injection: enabled\n", "  name: shop\n  labels:\n    team: shop\n    istio.io/rev: \"stable\"\n", 1), nsEdit("shop"))

	// The search branch carries the relabel and the restart; each branch
	// changes its own namespace's document only.
	files := map[string]string{}
	for _, e := range res.Edits.Namespaces["search"] {
		files[e.Path] = string(e.After)
	}
	require.Contains(t, files, nsFile)
	require.Contains(t, files, "apps/prod-eu-1/search/indexer.yaml")
	assert.Len(t, files, 2)
	assert.Equal(t, strings.Replace(string(before), "    team: search\n    istio.io/rev: 1-25-0\n", "    team: search\n    istio.io/rev: stable\n", 1), files[nsFile])
	for ns, edits := range res.Edits.Namespaces {
		for _, e := range edits {
			if e.Path == nsFile {
				assert.Contains(t, []string{"search", "orders", "shop", "catalog"}, ns)
				assert.Equal(t, 1, changedDocuments(t, before, e.After), ns)
			}
		}
	}
	for _, w := range res.Plan.Workloads {
		if w.Namespace == "search" {
			assert.Equal(t, "1-25-0", w.Desired.Revision, w.Name)
		}
	}

	// The JSON plan carries the list; a plan without policies does not.
	js, err := json.Marshal(res.Plan)
	require.NoError(t, err)
	assert.Contains(t, string(js), `"migrations":[{"namespace":"catalog","from":"default","to":"stable","revision":"1-25-0"`)
	plain, err := plan.Build(set, assemble.PlanOptions(demoConfig(t), demoRepo))
	require.NoError(t, err)
	js, err = json.Marshal(plain.Plan)
	require.NoError(t, err)
	assert.NotContains(t, string(js), `"migrations"`)
}

func TestUnknownTargetIsAConfigErrorNamingTheKey(t *testing.T) {
	set := readDemo(t)
	cfg := demoConfig(t, config.Migration{From: "1-25-0", To: "stable"}, config.Migration{From: "default", To: "canary"})
	for _, repo := range []string{"", demoRepo} {
		_, err := plan.Build(set, assemble.PlanOptions(cfg, repo))
		var cfgErr *config.Error
		require.True(t, errors.As(err, &cfgErr), "%v", err)
		assert.Equal(t, "migrations[1].to", cfgErr.Key)
		assert.Contains(t, cfgErr.Msg, `"canary"`)
	}
}

func TestPlanWithoutRepositoryListsWhatWouldRestart(t *testing.T) {
	res, err := plan.Build(readDemo(t), assemble.PlanOptions(demoConfig(t, demoMigrations...), ""))
	require.NoError(t, err)
	for _, m := range res.Plan.Migrations {
		assert.Equal(t, drift.ManifestNoRepo, m.Manifest.Status, m.Namespace)
		if m.Namespace == "search" {
			assert.Equal(t, []drift.MigrationWorkload{{Kind: "Deployment", Name: "indexer"}}, m.Workloads)
		}
	}
}

// TestRelabelAndRestartInOneFile: a Namespace written in the same file as
// its workload gets one edit carrying both changes.
func TestRelabelAndRestartInOneFile(t *testing.T) {
	repo := t.TempDir()
	src := `apiVersion: v1
kind: Namespace
metadata:
  name: web
  labels:
    istio.io/rev: 1-23-2
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
  namespace: web
spec:
  selector:
    matchLabels: {app: api}
  template:
    metadata:
      labels: {app: api}
    spec:
      containers:
        - name: api
          image: example/api:1
`
	require.NoError(t, os.WriteFile(filepath.Join(repo, "web.yaml"), []byte(src), 0o644))

	set := &objects.Set{Namespaces: []corev1.Namespace{{ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: map[string]string{"istio.io/rev": "1-23-2"}}}}}
	meshtest.Merge(
		meshtest.IstiodRevision("1-23-2", "docker.io/istio/proxyv2:1.23.2"),
		meshtest.IstiodRevision("1-24-0", "docker.io/istio/proxyv2:1.24.0"),
		meshtest.RevisionTag("prod", "1-24-0"),
	).AddTo(set)
	ctrl := true
	set.Deployments = []*appsv1.Deployment{{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}, ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: "web", UID: "d1"}}}
	set.ReplicaSets = []*objects.ReplicaSet{{ObjectMeta: metav1.ObjectMeta{Name: "api-1", Namespace: "web", UID: "r1",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "api", UID: "d1", Controller: &ctrl}}}}}
	pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "api-1-x", Namespace: "web",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "api-1", UID: "r1", Controller: &ctrl}}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "api", Image: "example/api:1"}}}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	meshtest.InjectPod(&pod, "1-23-2", "docker.io/istio/proxyv2:1.23.2")
	set.Pods = objects.Pods(pod)

	cfg := demoConfig(t, config.Migration{From: "1-23-2", To: "prod"})
	res, err := plan.Build(set, assemble.PlanOptions(cfg, repo))
	require.NoError(t, err)
	require.Len(t, res.Plan.Migrations, 1)
	m := res.Plan.Migrations[0]
	require.True(t, m.Moves(), m.Detail)
	assert.Equal(t, []drift.MigrationWorkload{{Kind: "Deployment", Name: "api"}}, m.Workloads)
	edits := res.Edits.Namespaces["web"]
	require.Len(t, edits, 1)
	after := string(edits[0].After)
	assert.Contains(t, after, "    istio.io/rev: prod\n")
	assert.Contains(t, after, `kedge.io/restart-target: "1-24-0@docker.io/istio/proxyv2:1.24.0"`)
	assert.Equal(t, strings.Count(src, "\n")+3, strings.Count(after, "\n"), "one line changed, annotations mapping and two keys added")
}

// BenchmarkDemoBuild measures what locating and verifying the namespace
// labels adds to a plan of the demo repository.
func BenchmarkDemoBuild(b *testing.B) {
	set, err := snapshot.Read(demoCluster)
	require.NoError(b, err)
	for _, bc := range []struct {
		name       string
		migrations []config.Migration
	}{{"without-migrations", nil}, {"with-migrations", demoMigrations}} {
		b.Run(bc.name, func(b *testing.B) {
			cfg, err := config.Load("", nil, nil)
			require.NoError(b, err)
			cfg.Migrations = bc.migrations
			opts := assemble.PlanOptions(cfg, demoRepo)
			for b.Loop() {
				if _, err := plan.Build(set, opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// changedDocuments counts the documents of a multi-document file that differ.
func changedDocuments(t *testing.T, before, after []byte) int {
	t.Helper()
	a, b := strings.Split(string(before), "\n---\n"), strings.Split(string(after), "\n---\n")
	require.Len(t, b, len(a))
	n := 0
	for i := range a {
		if a[i] != b[i] {
			n++
		}
	}
	return n
}
