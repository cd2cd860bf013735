package plan_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kedge-io/kedge/internal/gitops/index"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/plan"
	"github.com/kedge-io/kedge/internal/route"
)

// TestPlanReusesEditsAcrossChanges plans the platform-and-teams cluster
// over its three checkouts again and again, each time after a commit in one
// of them or a change of a namespace's desired revision, with the indexes
// updated from the changed files and the previous plan's edit results; and
// checks each plan against one over fresh indexes with nothing reused.
func TestPlanReusesEditsAcrossChanges(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.CopyFS(root, os.DirFS(filepath.Join(repoFixtures, "platform-and-teams"))))
	set := teamsCluster(t)
	repos := checkoutsIn(t, set, root)
	require.Len(t, repos, 3)
	dirOf := map[string]int{"acme_platform": 0, "acme_team-payments": 1, "acme_team-shop": 2}

	write := func(rel, content string) func(t *testing.T, set *objects.Set) []string {
		return func(t *testing.T, _ *objects.Set) []string {
			p := filepath.Join(root, filepath.FromSlash(rel))
			require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
			require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
			return []string{rel}
		}
	}
	appendTo := func(rel, text string) func(t *testing.T, set *objects.Set) []string {
		return func(t *testing.T, _ *objects.Set) []string {
			p := filepath.Join(root, filepath.FromSlash(rel))
			data, err := os.ReadFile(p)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(p, append(data, text...), 0o644))
			return []string{rel}
		}
	}
	remove := func(rel string) func(t *testing.T, set *objects.Set) []string {
		return func(t *testing.T, _ *objects.Set) []string {
			require.NoError(t, os.Remove(filepath.Join(root, filepath.FromSlash(rel))))
			return []string{rel}
		}
	}
	revision := func(namespace, rev string) func(t *testing.T, set *objects.Set) []string {
		return func(t *testing.T, set *objects.Set) []string {
			for i := range set.Namespaces {
				if set.Namespaces[i].Name == namespace {
					set.Namespaces[i].Labels = map[string]string{"istio.io/rev": rev}
				}
			}
			return nil
		}
	}
	steps := []struct {
		name   string
		change func(t *testing.T, set *objects.Set) []string
		// reused is how many namespaces keep their edits, over every
		// checkout.
		reused int
	}{
		{"nothing", func(*testing.T, *objects.Set) []string { return nil }, 4},
		// The platform's shop is applied by an Argo CD Application, whose
		// edits hold for one index only.
		{"comment in the ingress gateway", appendTo("acme_platform/infra/ingress/gateway.yaml", "# owned by the edge team\n"), 2},
		{"payments moves to 1-24-0", revision("payments", "1-24-0"), 3},
		{"payments back to 1-25-0", revision("payments", "1-25-0"), 3},
		{"a file beside the payments kustomization", write("acme_team-payments/deploy/notes.yaml", "# not listed\n"), 4},
		{"the payments kustomization lists a ConfigMap", write("acme_team-payments/deploy/kustomization.yaml",
			"apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - api.yaml\n  - settings.yaml\n"), 3},
		{"the ConfigMap it lists", write("acme_team-payments/deploy/settings.yaml",
			"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n"), 3},
		{"a new kustomize root on the platform", write("acme_platform/extra/kustomization.yaml",
			"apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ../shared/shop/cart.yaml\n"), 2},
		{"the shop's cart deleted", remove("acme_platform/shared/shop/cart.yaml"), 3},
		{"nothing again", func(*testing.T, *objects.Set) []string { return nil }, 3},
	}

	indexes := make([]*index.Index, len(repos))
	for i, r := range repos {
		ix, err := index.Read(r.Root, index.Options{Paths: r.Paths})
		require.NoError(t, err)
		indexes[i] = ix
	}
	prev := planWith(t, set, repos, indexes, nil)
	for _, step := range steps {
		changed := map[int][]string{}
		for _, rel := range step.change(t, set) {
			dir, inRepo, _ := strings.Cut(rel, "/")
			changed[dirOf[dir]] = append(changed[dirOf[dir]], inRepo)
		}
		for i := range indexes {
			next, err := indexes[i].Update(changed[i])
			require.NoError(t, err, step.name)
			indexes[i] = next
		}
		got := planWith(t, set, repos, indexes, prev)
		want := planWith(t, set, repos, nil, nil)
		require.Equal(t, want.Plan, got.Plan, step.name)
		require.Equal(t, want.Edits, got.Edits, step.name)
		require.Equal(t, want.Namespaces, got.Namespaces, step.name)
		require.Len(t, got.Repositories, len(want.Repositories), step.name)
		reused := 0
		for i := range want.Repositories {
			assert.Equal(t, want.Repositories[i].Edits, got.Repositories[i].Edits, "%s: %s", step.name, repos[i].Label())
			reused += got.Repositories[i].PriorEdits.Reused()
		}
		assert.Equal(t, step.reused, reused, "namespaces reused after: %s", step.name)
		prev = got
	}
}

// checkoutsIn are the teams cluster's checkouts, in copies under root.
func checkoutsIn(t *testing.T, set *objects.Set, root string) []plan.Repository {
	t.Helper()
	targets, _ := route.Targets(set, []route.Rule{{Match: "acme/*"}})
	var out []plan.Repository
	for _, tg := range targets {
		out = append(out, plan.RepositoryFor(tg, filepath.Join(root, strings.ReplaceAll(tg.Repo, "/", "_")), nil))
	}
	return out
}

// planWith plans over the checkouts with the given indexes (nil: fresh
// ones) and the edit results of prev (nil: none).
func planWith(t *testing.T, set *objects.Set, repos []plan.Repository, indexes []*index.Index, prev *plan.Result) *plan.Result {
	t.Helper()
	checkouts := make([]plan.Repository, len(repos))
	for i, r := range repos {
		if indexes != nil {
			r.Index = indexes[i]
		}
		if prev != nil {
			r.PriorEdits = prev.Repositories[i].PriorEdits
		}
		checkouts[i] = r
	}
	res, err := plan.Build(set, plan.Options{Repositories: checkouts})
	require.NoError(t, err)
	return res
}
