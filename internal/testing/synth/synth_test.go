package synth_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kedge-io/kedge/internal/cluster/snapshot"
	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/mesh"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/plan"
	"github.com/kedge-io/kedge/internal/testing/synth"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// systemNamespaces are the namespaces every fleet has besides its own.
const systemNamespaces = 7

func TestValidateRejectsImpossibleSpecs(t *testing.T) {
	cases := []struct {
		name    string
		spec    synth.Spec
		wantErr string
	}{
		{"no namespaces", synth.Spec{Workloads: 1, Pods: 1}, "namespaces: 0"},
		{"fewer workloads than namespaces", synth.Spec{Namespaces: 3, Workloads: 2, Pods: 2}, "workloads: 2"},
		{"fewer pods than workloads", synth.Spec{Namespaces: 1, Workloads: 2, Pods: 1}, "pods: 1"},
		{"drift above one", synth.Spec{Namespaces: 1, Workloads: 1, Pods: 1, Drift: 1.5}, "drift: 1.5"},
		{"negative drift", synth.Spec{Namespaces: 1, Workloads: 1, Pods: 1, Drift: -0.1}, "drift: -0.1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := synth.New(tc.spec)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantErr)
		})
	}
}

func TestCountsAreExact(t *testing.T) {
	cases := []synth.Spec{
		{Seed: 1, Namespaces: 1, Workloads: 1, Pods: 1},
		{Seed: 2, Namespaces: 7, Workloads: 23, Pods: 101, Drift: 0.3},
		{Seed: 3, Namespaces: 40, Workloads: 40, Pods: 200, Drift: 1},
		// More workloads per namespace than there are workload names.
		{Seed: 4, Namespaces: 2, Workloads: 40, Pods: 40, Drift: 0.5},
	}
	for _, spec := range cases {
		f, err := synth.New(spec)
		require.NoError(t, err)
		set := f.Set
		assert.Len(t, set.Namespaces, spec.Namespaces+systemNamespaces)
		workloads := len(set.Deployments) + len(set.StatefulSets) + len(set.DaemonSets) + len(set.Rollouts)
		assert.Equal(t, spec.Workloads, workloads)
		assert.Len(t, set.Pods, spec.Pods)
		assert.Len(t, f.Expect().DriftedNamespaces, int(float64(spec.Namespaces)*spec.Drift))
		names := map[string]bool{}
		for _, p := range set.Pods {
			key := p.Namespace + "/" + p.Name
			assert.False(t, names[key], "pod %s generated twice", key)
			names[key] = true
		}
	}
}

// fingerprint hashes everything a fleet writes.
func fingerprint(t *testing.T, f *synth.Fleet) [32]byte {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, f.WriteSnapshotJSON(dir))
	h := sha256.New()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		h.Write([]byte(e.Name()))
		h.Write(data)
	}
	require.NoError(t, f.RepoFiles(func(path string, content []byte) error {
		h.Write([]byte(path))
		h.Write(content)
		return nil
	}))
	var sum [32]byte
	copy(sum[:], h.Sum(nil))
	return sum
}

func TestSameSeedSameBytes(t *testing.T) {
	spec := synth.Spec{Seed: 42, Namespaces: 20, Workloads: 70, Pods: 300, Drift: 0.5}
	a, err := synth.New(spec)
	require.NoError(t, err)
	b, err := synth.New(spec)
	require.NoError(t, err)
	assert.Equal(t, fingerprint(t, a), fingerprint(t, b), "one seed, one fleet")

	spec.Seed = 43
	c, err := synth.New(spec)
	require.NoError(t, err)
	assert.NotEqual(t, fingerprint(t, a), fingerprint(t, c), "another seed, another fleet")
}

// canonical marshals every object of a set, so sets can be compared after
// a trip through files (quantities and times change representation).
func canonical(t *testing.T, set *objects.Set) map[string]string {
	t.Helper()
	out := map[string]string{}
	add := func(kind, ns, name string, obj any) {
		data, err := json.Marshal(obj)
		require.NoError(t, err)
		out[kind+" "+ns+"/"+name] = string(data)
	}
	// A workload is compared by what kedge keeps of it: identity, replica
	// counts and what the injection decision reads of its template.
	type workload struct {
		Meta     metav1.ObjectMeta
		Replicas *int32
		Template mesh.Template
		Ready    int32
	}
	for _, o := range set.Deployments {
		add("Deployment", o.Namespace, o.Name, workload{o.ObjectMeta, o.Spec.Replicas, mesh.TemplateOf(&o.Spec.Template), o.Status.AvailableReplicas})
	}
	for _, o := range set.StatefulSets {
		add("StatefulSet", o.Namespace, o.Name, workload{o.ObjectMeta, o.Spec.Replicas, mesh.TemplateOf(&o.Spec.Template), o.Status.AvailableReplicas})
	}
	for _, o := range set.Namespaces {
		add("Namespace", o.Namespace, o.Name, o)
	}
	for _, o := range set.Kustomizations {
		add("Kustomization", o.Namespace, o.Name, o)
	}
	for _, o := range set.MutatingWebhookConfigurations {
		add("MutatingWebhookConfiguration", o.Namespace, o.Name, o)
	}
	return out
}

func TestSnapshotReadsBack(t *testing.T) {
	f, err := synth.New(synth.Spec{Seed: 7, Namespaces: 15, Workloads: 45, Pods: 150, Drift: 0.4})
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, f.WriteSnapshotJSON(dir))
	read, err := snapshot.Read(dir)
	require.NoError(t, err)
	assert.Equal(t, canonical(t, f.Set), canonical(t, read))
	assert.Len(t, read.Pods, len(f.Set.Pods))
	assert.Len(t, read.ReplicaSets, len(f.Set.ReplicaSets))
	assert.Len(t, read.Rollouts, len(f.Set.Rollouts))
	assert.Len(t, read.Applications, len(f.Set.Applications))
	assert.Len(t, read.ConfigMaps, len(f.Set.ConfigMaps))
}

// TestPlanFindsEveryDriftedWorkload is the point of the generator: the
// plan of the cluster against the repository finds every drifted workload
// in a file, edits shared bases through overlay patches, and nothing else
// drifts.
func TestPlanFindsEveryDriftedWorkload(t *testing.T) {
	cases := []synth.Spec{
		{Seed: 1, Namespaces: 12, Workloads: 30, Pods: 60, Drift: 0.5},
		{Seed: 9, Namespaces: 60, Workloads: 240, Pods: 700, Drift: 0.25},
		{Seed: 5, Namespaces: 30, Workloads: 90, Pods: 200, Drift: 1},
	}
	for _, spec := range cases {
		f, err := synth.New(spec)
		require.NoError(t, err)
		repo := t.TempDir()
		files, err := f.WriteRepo(repo)
		require.NoError(t, err)
		assert.Equal(t, f.RepoFileCount(), files)

		res, err := plan.Build(f.Set, plan.Options{RepoRoot: repo, RepoURLs: []string{synth.DefaultRepoURL}})
		require.NoError(t, err)
		want := f.Expect()
		assert.Empty(t, res.Index.Problems)
		assert.Empty(t, res.Plan.Skipped)
		assert.Empty(t, res.Edits.Refused)
		require.Len(t, res.Plan.Workloads, want.DriftedWorkloads)
		patches := 0
		namespaces := map[string]bool{}
		for _, w := range res.Plan.Workloads {
			assert.Equal(t, drift.ManifestFound, w.Manifest.Status, "%s %s/%s: %s", w.Kind, w.Namespace, w.Name, w.Manifest.Detail)
			if w.Manifest.Edit == drift.EditOverlayPatch {
				patches++
			}
			namespaces[w.Namespace] = true
		}
		assert.Equal(t, want.SharedBaseWorkloads, patches)
		assert.Len(t, namespaces, len(want.DriftedNamespaces))
		assert.Len(t, res.Edits.Namespaces, len(want.DriftedNamespaces), "one branch per drifted namespace")
	}
}

// TestSmallFleetPlan pins the plan of a small fleet, reasons and manifest
// paths included, so a change to the generator shows in review.
func TestSmallFleetPlan(t *testing.T) {
	f, err := synth.New(synth.Spec{Seed: 6, Namespaces: 10, Workloads: 24, Pods: 50, Drift: 0.6})
	require.NoError(t, err)
	repo := t.TempDir()
	_, err = f.WriteRepo(repo)
	require.NoError(t, err)
	res, err := plan.Build(f.Set, plan.Options{Drift: drift.Options{Cluster: f.Spec.Cluster}, RepoRoot: repo})
	require.NoError(t, err)
	got, err := json.MarshalIndent(res.Plan, "", "  ")
	require.NoError(t, err)
	got = append(got, '\n')

	golden := filepath.Join("testdata", "small", "plan.json")
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(golden), 0o755))
		require.NoError(t, os.WriteFile(golden, got, 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err, "run with -update to create it")
	assert.Equal(t, string(want), string(got))

	// The small fleet still covers every kind of drift and both edits.
	for _, needle := range []string{
		`"revision"`, `"proxy-image"`, `"missing-sidecar"`, `"unwanted-sidecar"`, `"in-place"`, `"overlay-patch"`,
	} {
		assert.True(t, bytes.Contains(got, []byte(needle)), "the plan has no %s", needle)
	}
}
