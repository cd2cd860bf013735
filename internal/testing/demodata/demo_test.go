package demodata

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/testing/meshtest"
)

// readSnapshot reads the committed snapshot the way the snapshot format
// allows: any file, one object, a multi-document stream or a List.
func readSnapshot(t *testing.T) []object {
	t.Helper()
	var out []object
	dir := filepath.Join(demoDir, "cluster")
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			var o object
			if err := dec.Decode(&o); errors.Is(err, io.EOF) {
				return nil
			} else if err != nil {
				return err
			}
			if o == nil {
				continue
			}
			if o["kind"] == "List" {
				for _, it := range o["items"].([]any) {
					out = append(out, it.(map[string]any))
				}
				continue
			}
			out = append(out, o)
		}
	}))
	return out
}

func decodeInto[T any](t *testing.T, list *[]T, o object, strict bool) {
	t.Helper()
	data, err := json.Marshal(o)
	require.NoError(t, err)
	dec := json.NewDecoder(bytes.NewReader(data))
	if strict {
		dec.DisallowUnknownFields()
	}
	var v T
	require.NoError(t, dec.Decode(&v), "%s %s/%s", o["kind"], nestedString(o, "metadata", "namespace"), nestedString(o, "metadata", "name"))
	*list = append(*list, v)
}

// decodeSet decodes the snapshot into the typed Set kedge works on,
// rejecting unknown fields for the Kubernetes kinds so a typo in the
// generator cannot hide. Custom resources are read loosely, as kedge does.
func decodeSet(t *testing.T, objs []object) objects.Set {
	t.Helper()
	var s objects.Set
	for _, o := range objs {
		switch o["kind"] {
		case "Namespace":
			decodeInto(t, &s.Namespaces, o, true)
		case "Pod":
			var full []corev1.Pod
			decodeInto(t, &full, o, true)
			s.Pods = append(s.Pods, objects.Pods(full...)...)
		case "ConfigMap":
			decodeInto(t, &s.ConfigMaps, o, true)
		case "ReplicaSet":
			var full []appsv1.ReplicaSet
			decodeInto(t, &full, o, true)
			rs := objects.ReplicaSetOf(&full[0])
			s.ReplicaSets = append(s.ReplicaSets, &rs)
		case "Deployment":
			decodeInto(t, &s.Deployments, o, true)
		case "StatefulSet":
			decodeInto(t, &s.StatefulSets, o, true)
		case "DaemonSet":
			decodeInto(t, &s.DaemonSets, o, true)
		case "Job":
			decodeInto(t, &s.Jobs, o, true)
		case "CronJob":
			decodeInto(t, &s.CronJobs, o, true)
		case "MutatingWebhookConfiguration":
			decodeInto(t, &s.MutatingWebhookConfigurations, o, true)
		case "Rollout":
			decodeInto(t, &s.Rollouts, o, false)
		case "Kustomization":
			decodeInto(t, &s.Kustomizations, o, false)
		case "GitRepository":
			decodeInto(t, &s.GitRepositories, o, false)
		case "Application":
			decodeInto(t, &s.Applications, o, false)
		default:
			t.Errorf("snapshot holds kind %v, which kedge does not read", o["kind"])
		}
	}
	return s
}

func TestSnapshotDecodesIntoTheObjectSet(t *testing.T) {
	s := decodeSet(t, readSnapshot(t))

	owners := len(s.Deployments) + len(s.StatefulSets) + len(s.DaemonSets) + len(s.Rollouts) + len(s.CronJobs)
	assert.Equal(t, 15, len(s.Namespaces), "namespaces")
	assert.Equal(t, 31, owners, "top-level workloads")
	assert.Equal(t, 3, len(s.MutatingWebhookConfigurations), "injector webhooks")
	assert.Equal(t, 10, len(s.Kustomizations), "Flux Kustomizations")
	urls := map[string]string{}
	for _, g := range s.GitRepositories {
		urls[g.Name] = g.Spec.URL + "@" + g.Spec.Ref.Branch
	}
	assert.Equal(t, map[string]string{
		"flux-system":  "https://github.com/example-org/gitops@main",
		"team-reviews": "https://github.com/example-org/team-reviews@main",
	}, urls, "the platform repository and the reviews team's")
	require.Len(t, s.Applications, 1, "Argo CD Applications")
	assert.Equal(t, "https://github.com/example-org/gitops", s.Applications[0].Spec.Source.RepoURL)
}

// podIndex resolves pods to their top-level owner through owner uids, as
// the API server's garbage collector would.
type podIndex struct {
	owners map[string]ref // uid -> object
}

type ref struct {
	Namespace, Kind, Name string
	Owner                 string // uid of the controller, "" if none
}

func newPodIndex(objs []object) podIndex {
	idx := podIndex{owners: map[string]ref{}}
	for _, o := range objs {
		r := ref{Namespace: nestedString(o, "metadata", "namespace"), Kind: o["kind"].(string), Name: nestedString(o, "metadata", "name")}
		if owners, ok := nestedMap(o, "metadata")["ownerReferences"].([]any); ok {
			r.Owner = owners[0].(map[string]any)["uid"].(string)
		}
		idx.owners[nestedString(o, "metadata", "uid")] = r
	}
	return idx
}

// top follows controller references up to the object nobody owns.
func (idx podIndex) top(t *testing.T, uid string) ref {
	r, ok := idx.owners[uid]
	require.True(t, ok, "owner uid %s is in the snapshot", uid)
	for r.Owner != "" {
		next, ok := idx.owners[r.Owner]
		require.True(t, ok, "%s %s/%s: owner uid %s is in the snapshot", r.Kind, r.Namespace, r.Name, r.Owner)
		r = next
	}
	return r
}

// proxy is what a pod runs as its sidecar, if anything.
type proxy struct {
	Present  bool
	Image    string
	Revision string
}

func podProxy(t *testing.T, p corev1.Pod) proxy {
	var px proxy
	for _, c := range p.Spec.Containers {
		if c.Name == "istio-proxy" {
			px = proxy{Present: true, Image: c.Image}
		}
	}
	for _, c := range p.Spec.InitContainers {
		if c.Name == "istio-proxy" && c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			px = proxy{Present: true, Image: c.Image}
		}
	}
	if !px.Present {
		assert.NotContains(t, p.Annotations, "sidecar.istio.io/status", "pod %s/%s", p.Namespace, p.Name)
		return px
	}
	var status struct {
		InitContainers []string `json:"initContainers"`
		Containers     []string `json:"containers"`
		Revision       string   `json:"revision"`
	}
	require.NoError(t, json.Unmarshal([]byte(p.Annotations["sidecar.istio.io/status"]), &status), "pod %s/%s", p.Namespace, p.Name)
	assert.Contains(t, append(status.InitContainers, status.Containers...), "istio-proxy")
	assert.Equal(t, status.Revision, p.Annotations["istio.io/rev"], "pod %s/%s: status and istio.io/rev agree", p.Namespace, p.Name)
	px.Revision = status.Revision
	return px
}

// injectedImages is what each revision injects now, read from its
// injector ConfigMap the way istiod computes ProxyImage.
func injectedImages(t *testing.T, s objects.Set) map[string]string {
	out := map[string]string{}
	for _, cm := range s.ConfigMaps {
		if !strings.HasPrefix(cm.Name, "istio-sidecar-injector") {
			continue
		}
		var values struct {
			Revision string `json:"revision"`
			Global   struct {
				Hub   string `json:"hub"`
				Tag   string `json:"tag"`
				Proxy struct {
					Image string `json:"image"`
				} `json:"proxy"`
			} `json:"global"`
		}
		require.NoError(t, json.Unmarshal([]byte(cm.Data["values"]), &values), cm.Name)
		rev := values.Revision
		if rev == "" {
			rev = "default"
		}
		out[rev] = values.Global.Hub + "/" + values.Global.Proxy.Image + ":" + values.Global.Tag
	}
	return out
}

func readExpected(t *testing.T) drift.Plan {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(demoDir, "expected.json"))
	require.NoError(t, err)
	var plan drift.Plan
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&plan))
	return plan
}

// TestExpectedPlanAgreesWithSnapshot checks the hand-written plan against
// the pods it describes. The desired revision of each workload is taken
// from expected.json, not recomputed: what is checked is that, given it,
// the reasons and pod counts are exactly what the pods show.
func TestExpectedPlanAgreesWithSnapshot(t *testing.T) {
	plan := readExpected(t)
	objs := readSnapshot(t)
	s := decodeSet(t, objs)
	idx := newPodIndex(objs)
	images := injectedImages(t, s)
	assert.Equal(t, map[string]string{
		"default": "docker.io/istio/proxyv2:1.24.1",
		"1-25-0":  "docker.io/istio/proxyv2:1.25.0",
	}, images)

	assert.Equal(t, clusterName, plan.Cluster)
	assert.True(t, sort.SliceIsSorted(plan.Workloads, func(i, j int) bool {
		return workloadKey(plan.Workloads[i]) < workloadKey(plan.Workloads[j])
	}), "workloads sorted by namespace, kind, name")
	assert.True(t, sort.SliceIsSorted(plan.Skipped, func(i, j int) bool {
		a, b := plan.Skipped[i], plan.Skipped[j]
		return a.Namespace+"\x00"+a.Kind+"\x00"+a.Name < b.Namespace+"\x00"+b.Kind+"\x00"+b.Name
	}), "skipped sorted by namespace, kind, name")

	live := livePods(t, objs, idx)

	for _, w := range plan.Workloads {
		t.Run(w.Namespace+"/"+w.Kind+"/"+w.Name, func(t *testing.T) {
			pods := live[w.Namespace+"/"+w.Kind+"/"+w.Name]
			require.NotEmpty(t, pods, "live pods")
			assert.Equal(t, images[w.Desired.Revision], w.Desired.Image, "desired image is what the desired revision injects")

			got, drifted := podDrift(t, pods, w.Desired.Revision, images)
			assert.Equal(t, got, w.Reasons, "reasons, sorted")
			assert.Equal(t, drift.PodCount{Total: len(pods), Drifted: drifted}, w.Pods)
		})
	}

	for _, sk := range plan.Skipped {
		t.Run("skipped/"+sk.Namespace+"/"+sk.Kind+"/"+sk.Name, func(t *testing.T) {
			o := findObject(objs, sk.Namespace, sk.Kind, sk.Name)
			require.NotNil(t, o, "skipped object is in the snapshot")
			require.NotEmpty(t, live[sk.Namespace+"/"+sk.Kind+"/"+sk.Name], "it has live pods")
			switch sk.Reason {
			case drift.SkipNotRestartable:
				assert.Contains(t, []string{"CronJob", "Job"}, sk.Kind)
			case drift.SkipNoOwner:
				assert.Equal(t, "Pod", sk.Kind)
				assert.Nil(t, nestedMap(o, "metadata")["ownerReferences"])
			case drift.SkipOptedOut:
				assert.Equal(t, "true", nestedString(o, "metadata", "annotations", "kedge.io/ignore"))
			default:
				t.Errorf("unexpected skip reason %q", sk.Reason)
			}
		})
	}
}

// podDrift is the union of the pods' reasons against a desired revision,
// and how many pods have any.
func podDrift(t *testing.T, pods []corev1.Pod, desired string, images map[string]string) ([]drift.Reason, int) {
	reasons := map[drift.Reason]bool{}
	drifted := 0
	for _, p := range pods {
		px := podProxy(t, p)
		var why []drift.Reason
		switch {
		case desired == "" && px.Present:
			why = append(why, drift.ReasonUnwantedSidecar)
		case desired != "" && !px.Present:
			why = append(why, drift.ReasonMissingSidecar)
		case px.Present && px.Revision != desired:
			// Restarting moves the pod to the desired revision and its
			// image at once: the image is not a second reason.
			why = append(why, drift.ReasonRevision)
		case px.Present && px.Image != images[desired]:
			why = append(why, drift.ReasonProxyImage)
		}
		for _, r := range why {
			reasons[r] = true
		}
		if len(why) > 0 {
			drifted++
		}
	}
	var out []drift.Reason
	for r := range reasons {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, drifted
}

// livePods groups the pods that count (not terminating, not finished) by
// their top-level owner, keyed namespace/kind/name.
func livePods(t *testing.T, objs []object, idx podIndex) map[string][]corev1.Pod {
	live := map[string][]corev1.Pod{}
	var pods []corev1.Pod
	for _, o := range objs {
		if o["kind"] == "Pod" {
			decodeInto(t, &pods, o, true)
		}
	}
	for _, p := range pods {
		if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		top := idx.top(t, string(p.UID))
		key := top.Namespace + "/" + top.Kind + "/" + top.Name
		live[key] = append(live[key], p)
	}
	return live
}

// injectingRevisions evaluates every injector webhook against a pod and its
// namespace, as the API server does, and returns the revisions (the MWCs'
// istio.io/rev labels) that match.
func injectingRevisions(t *testing.T, s objects.Set, nsLabels map[string]string, pod corev1.Pod) []string {
	revs := map[string]bool{}
	for _, mwc := range s.MutatingWebhookConfigurations {
		for _, wh := range mwc.Webhooks {
			if !strings.HasSuffix(wh.Name, "sidecar-injector.istio.io") {
				continue
			}
			nsSel, err := metav1.LabelSelectorAsSelector(wh.NamespaceSelector)
			require.NoError(t, err)
			objSel, err := metav1.LabelSelectorAsSelector(wh.ObjectSelector)
			require.NoError(t, err)
			if nsSel.Matches(labels.Set(nsLabels)) && objSel.Matches(labels.Set(pod.Labels)) {
				revs[mwc.Labels["istio.io/rev"]] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(revs))
}

// TestExpectedPlanIsComplete evaluates the webhooks for every workload with
// live pods: the workloads expected.json lists must have the desired
// revision the webhooks give, and every other workload must be in sync or
// skipped.
func TestExpectedPlanIsComplete(t *testing.T) {
	plan := readExpected(t)
	objs := readSnapshot(t)
	s := decodeSet(t, objs)
	images := injectedImages(t, s)
	nsLabels := map[string]map[string]string{}
	for _, ns := range s.Namespaces {
		nsLabels[ns.Name] = ns.Labels
	}
	listed := map[string]drift.Workload{}
	for _, w := range plan.Workloads {
		listed[w.Namespace+"/"+w.Kind+"/"+w.Name] = w
	}
	skipped := map[string]bool{}
	for _, sk := range plan.Skipped {
		skipped[sk.Namespace+"/"+sk.Kind+"/"+sk.Name] = true
	}

	live := livePods(t, objs, newPodIndex(objs))
	for _, key := range slices.Sorted(maps.Keys(live)) {
		pods := live[key]
		t.Run(key, func(t *testing.T) {
			revs := injectingRevisions(t, s, nsLabels[pods[0].Namespace], pods[0])
			require.LessOrEqual(t, len(revs), 1, "no conflicting revisions in the demo")
			desired := ""
			if len(revs) == 1 {
				desired = revs[0]
			}
			reasons, _ := podDrift(t, pods, desired, images)
			if w, ok := listed[key]; ok {
				assert.Equal(t, desired, w.Desired.Revision, "desired revision")
				return
			}
			if skipped[key] {
				assert.NotEmpty(t, reasons, "skipped, so it must drift")
				return
			}
			assert.Empty(t, reasons, "drifts but is neither listed nor skipped")
		})
	}
}

func workloadKey(w drift.Workload) string {
	return w.Namespace + "\x00" + w.Kind + "\x00" + w.Name
}

func findObject(objs []object, namespace, kind, name string) object {
	for _, o := range objs {
		if o["kind"] == kind && nestedString(o, "metadata", "namespace") == namespace && nestedString(o, "metadata", "name") == name {
			return o
		}
	}
	return nil
}

// TestExpectedManifestsMatchTheRepository checks manifest.status, path and
// edit against where kustomize says each object comes from.
func TestExpectedManifestsMatchTheRepository(t *testing.T) {
	plan := readExpected(t)
	objs := readSnapshot(t)
	kustomizations, err := renderFlux(demoDir, "clusters/"+clusterName)
	require.NoError(t, err)

	origin := map[string]string{}                 // namespace/kind/name -> file
	originDir := map[string]string{}              // namespace/kind/name -> its repository's directory
	namespacesFed := map[string]map[string]bool{} // directory/file -> namespaces of workloads it defines
	for _, ks := range kustomizations {
		dir := platformRepoDir
		if ks.Source != "" {
			dir = teamRepositories[ks.Source].Dir
		}
		for i, o := range ks.Applied {
			key := nestedString(o, "metadata", "namespace") + "/" + o["kind"].(string) + "/" + nestedString(o, "metadata", "name")
			origin[key], originDir[key] = ks.Origins[i], dir
			fed := path.Join(dir, ks.Origins[i])
			if namespacesFed[fed] == nil {
				namespacesFed[fed] = map[string]bool{}
			}
			namespacesFed[fed][nestedString(o, "metadata", "namespace")] = true
		}
	}

	for _, w := range plan.Workloads {
		t.Run(w.Namespace+"/"+w.Kind+"/"+w.Name, func(t *testing.T) {
			o := findObject(objs, w.Namespace, w.Kind, w.Name)
			require.NotNil(t, o, "workload is in the snapshot")
			file, inGit := origin[w.Namespace+"/"+w.Kind+"/"+w.Name]
			switch {
			case w.Manifest.Edit == drift.EditHelmPostRenderer:
				// Installed by helm-controller: the file is its HelmRelease's.
				assert.False(t, inGit)
				release := nestedString(o, "metadata", "labels", "helm.toolkit.fluxcd.io/namespace") + "/HelmRelease/" +
					nestedString(o, "metadata", "labels", "helm.toolkit.fluxcd.io/name")
				require.Contains(t, origin, release, "its HelmRelease is rendered from the repository")
				assert.Equal(t, origin[release], w.Manifest.Path)
			case w.Manifest.Edit == drift.EditHelmValues:
				// Rendered by Argo CD from a chart: the file is the
				// Application the tracking id names.
				assert.False(t, inGit, "not applied by Flux")
				trackingID := nestedString(o, "metadata", "annotations", "argocd.argoproj.io/tracking-id")
				app, _, ok := strings.Cut(trackingID, ":")
				require.True(t, ok, "Argo CD's tracking id %q", trackingID)
				assert.Equal(t, path.Join(argoApplicationsDir, app+".yaml"), w.Manifest.Path)
				appObj := findObject(objs, "argocd", "Application", app)
				require.NotNil(t, appObj, "the Application is in the snapshot")
				assert.Equal(t, w.Namespace, nestedString(appObj, "spec", "destination", "namespace"))
				assert.FileExists(t, filepath.Join(demoDir, "gitops", nestedString(appObj, "spec", "source", "path"), "Chart.yaml"))
			case w.Manifest.Status == drift.ManifestFound:
				require.True(t, inGit, "rendered from the repository")
				assert.Equal(t, file, w.Manifest.Path)
				dir := originDir[w.Namespace+"/"+w.Kind+"/"+w.Name]
				assert.FileExists(t, filepath.Join(demoDir, dir, filepath.FromSlash(file)))
				want := drift.EditInPlace
				if len(namespacesFed[path.Join(dir, file)]) > 1 {
					want = drift.EditOverlayPatch
				}
				assert.Equal(t, want, w.Manifest.Edit)
			case w.Manifest.Status == drift.ManifestHelm:
				assert.False(t, inGit)
				assert.NotEmpty(t, nestedString(o, "metadata", "labels", "helm.toolkit.fluxcd.io/name"))
				assert.Empty(t, w.Manifest.Path)
			case w.Manifest.Status == drift.ManifestNotFound:
				assert.False(t, inGit)
				assert.Empty(t, nestedString(o, "metadata", "labels", meshtest.FluxNameLabel))
				assert.Empty(t, nestedString(o, "metadata", "labels", "helm.toolkit.fluxcd.io/name"))
				assert.Empty(t, w.Manifest.Path)
			default:
				t.Errorf("unexpected manifest status %q", w.Manifest.Status)
			}
		})
	}
}

// TestFluxWorkloadsHaveExactlyOneSource checks the promise of the demo
// repository: every workload Flux applies is defined by exactly one
// document, carries the labels of the Kustomization that applies it and is
// in that Kustomization's inventory.
func TestFluxWorkloadsHaveExactlyOneSource(t *testing.T) {
	kustomizations, err := renderFlux(demoDir, "clusters/"+clusterName)
	require.NoError(t, err)
	appliedBy := map[string]string{}
	for _, ks := range kustomizations {
		for _, o := range ks.Applied {
			key := nestedString(o, "metadata", "namespace") + "/" + o["kind"].(string) + "/" + nestedString(o, "metadata", "name")
			prev, dup := appliedBy[key]
			assert.False(t, dup, "%s applied by both %s and %s", key, prev, ks.Name)
			appliedBy[key] = ks.Name
		}
	}

	objs := readSnapshot(t)
	inventory := map[string]map[string]bool{}
	for _, o := range objs {
		if o["kind"] != "Kustomization" {
			continue
		}
		ids := map[string]bool{}
		for _, e := range nestedMap(o, "status", "inventory")["entries"].([]any) {
			ids[e.(map[string]any)["id"].(string)] = true
		}
		inventory[nestedString(o, "metadata", "name")] = ids
	}
	workloads := 0
	for _, o := range objs {
		switch o["kind"] {
		case "Deployment", "StatefulSet", "DaemonSet", "CronJob", "Rollout":
		default:
			continue
		}
		name := nestedString(o, "metadata", "labels", meshtest.FluxNameLabel)
		if name == "" {
			continue
		}
		workloads++
		key := nestedString(o, "metadata", "namespace") + "/" + o["kind"].(string) + "/" + nestedString(o, "metadata", "name")
		assert.Equal(t, appliedBy[key], name, "%s: Flux label names the Kustomization that renders it", key)
		id, _ := inventoryID(o)
		assert.True(t, inventory[name][id], "%s is in the inventory of %s", id, name)
	}
	assert.Equal(t, 25, workloads, "workloads applied by kustomize-controller")
}

// TestGitOpsRootsBuild builds every directory with a kustomization.yaml
// as `kubectl kustomize` would.
func TestGitOpsRootsBuild(t *testing.T) {
	root := filepath.Join(demoDir, "gitops")
	var dirs []string
	require.NoError(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == "kustomization.yaml" {
			dirs = append(dirs, filepath.Dir(p))
		}
		return err
	}))
	require.NotEmpty(t, dirs)
	for _, dir := range dirs {
		rel, err := filepath.Rel(root, dir)
		require.NoError(t, err)
		t.Run(filepath.ToSlash(rel), func(t *testing.T) {
			res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
			require.NoError(t, err)
			assert.NotZero(t, res.Size())
		})
	}
}

// TestGitOpsRepoKeepsItsTraps guards the formatting the demo repository
// exists to exercise: an edit that survives these files survives real
// repositories.
func TestGitOpsRepoKeepsItsTraps(t *testing.T) {
	tests := []struct {
		file  string
		trap  string
		holds func(string) bool
	}{
		{"apps/prod-eu-1/shop/cart.yaml", "CRLF line endings", func(s string) bool {
			return strings.Count(s, "\r\n") == strings.Count(s, "\n")
		}},
		{"apps/base/frontend/deployment.yaml", "4-space indents", func(s string) bool {
			return strings.Contains(s, "\n    name: frontend\n") && strings.Contains(s, "\n        metadata:\n")
		}},
		{"apps/base/frontend/deployment.yaml", "header comment then leading ---", func(s string) bool {
			return strings.HasPrefix(s, "#") && strings.Contains(s, "\n---\n")
		}},
		{"apps/prod-eu-1/orders/workloads.yaml", "several documents, no kustomization.yaml", func(s string) bool {
			_, err := os.Stat(filepath.Join(demoDir, "gitops/apps/prod-eu-1/orders/kustomization.yaml"))
			return strings.Count(s, "\n---\n") >= 3 && errors.Is(err, fs.ErrNotExist)
		}},
		{"apps/prod-eu-1/payments/fraud-check.yaml", "folded scalar in the pod template", func(s string) bool {
			return strings.Contains(s, ": >-\n")
		}},
		{"apps/prod-eu-1/shop/kustomization.yaml", "overlay with existing patches", func(s string) bool {
			return strings.Contains(s, "\npatches:\n")
		}},
		{"apps/prod-eu-1/payments/kustomization.yaml", "overlay without patches", func(s string) bool {
			return !strings.Contains(s, "patches")
		}},
		{"infrastructure/istio-ingress/gateway.yaml", "gateway proxy image left to the injector", func(s string) bool {
			return strings.Contains(s, "image: auto")
		}},
	}
	for _, tt := range tests {
		t.Run(path.Base(tt.file)+"/"+tt.trap, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(demoDir, "gitops", filepath.FromSlash(tt.file)))
			require.NoError(t, err)
			assert.True(t, tt.holds(string(data)))
		})
	}
}
