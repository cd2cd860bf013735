// Package demodata generates the demo cluster snapshot of prod-eu-1 from
// the demo GitOps repository and the story of what happened in the cluster.
//
// The snapshot must agree with the GitOps repository object for object
// (Flux labels, inventories, templates after kustomize's transforms) and
// with Istio's own behaviour (webhooks, injected containers, status
// annotations). Writing it by hand would let the two drift apart; deriving
// it makes the agreement a property of the generator, checked by a test
// that the committed files are what it produces.
package demodata

import (
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/yaml"

	"github.com/kedge-io/kedge/internal/testing/meshtest"
)

//go:embed sources/*.yaml
var sources embed.FS

// Generate renders the snapshot `kedge snapshot` would write for prod-eu-1
// from the repositories in demoDir (the platform one in gitops/, the
// teams' beside it): file path (relative to the snapshot directory) to
// content.
func Generate(demoDir string) (map[string][]byte, error) {
	gitopsDir := filepath.Join(demoDir, platformRepoDir)
	kustomizations, err := renderFlux(demoDir, "clusters/"+clusterName)
	if err != nil {
		return nil, err
	}
	c := newCluster()
	c.addIstio()
	var workloads, teamWorkloads []object
	for _, ks := range kustomizations {
		for _, o := range ks.Applied {
			switch o["kind"] {
			case "Namespace":
				c.addNamespace(nestedString(o, "metadata", "name"), convert[corev1.Namespace](o).Labels)
			case "Deployment", "StatefulSet", "DaemonSet", "CronJob", "Job", "Rollout", "Pod":
				if ks.Source != "" {
					teamWorkloads = append(teamWorkloads, o)
				} else {
					workloads = append(workloads, o)
				}
			}
		}
	}
	extra, err := sourceObjects()
	if err != nil {
		return nil, err
	}
	// The teams' repositories joined the cluster last: their pods are
	// placed after everything else, so the pod IPs handed out before stay.
	workloads = append(append(workloads, extra...), teamWorkloads...)
	for _, ns := range []string{"default", "kube-node-lease", "kube-public", "kube-system", "flux-system", "argocd"} {
		c.addNamespace(ns, nil)
	}
	used := map[string]bool{}
	for _, o := range workloads {
		key := fmt.Sprintf("%s/%s/%s", nestedString(o, "metadata", "namespace"), o["kind"], nestedString(o, "metadata", "name"))
		st, ok := stories[key]
		if !ok {
			return nil, fmt.Errorf("no story for workload %s", key)
		}
		used[key] = true
		if err := c.addWorkload(o, st); err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
	}
	for key := range stories {
		if !used[key] {
			return nil, fmt.Errorf("story %s has no workload in Git or sources", key)
		}
	}
	if err := c.addFlux(kustomizations); err != nil {
		return nil, err
	}
	if err := c.addArgoApplications(gitopsDir); err != nil {
		return nil, err
	}
	c.addBuilt()
	return c.files()
}

// sourceObjects are the workloads that are not applied from Git: installed
// with the cluster, rendered by helm-controller, or applied by hand.
func sourceObjects() ([]object, error) {
	names, err := fs.Glob(sources, "sources/*.yaml")
	if err != nil {
		return nil, err
	}
	var out []object
	for _, name := range names {
		data, err := sources.ReadFile(name)
		if err != nil {
			return nil, err
		}
		nodes, err := (&kio.ByteReader{Reader: strings.NewReader(string(data)), OmitReaderAnnotations: true}).Read()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		for _, n := range nodes {
			m, err := n.Map()
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			if nestedString(m, "metadata", "annotations", lastAppliedAnnotation) == lastAppliedFromSource {
				if err := fillLastApplied(m); err != nil {
					return nil, err
				}
			}
			out = append(out, m)
		}
	}
	return out, nil
}

const (
	lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"
	// lastAppliedFromSource in a source manifest asks for the annotation
	// `kubectl apply` would have written for that very manifest.
	lastAppliedFromSource = "from-source"
)

// fillLastApplied writes what `kubectl apply` records: the applied
// manifest, without the annotation itself.
func fillLastApplied(o object) error {
	var applied object
	data, _ := json.Marshal(o)
	if err := json.Unmarshal(data, &applied); err != nil {
		return err
	}
	ann := nestedMap(applied, "metadata", "annotations")
	delete(ann, lastAppliedAnnotation)
	if len(ann) == 0 {
		delete(nestedMap(applied, "metadata"), "annotations")
	}
	data, err := json.Marshal(applied)
	if err != nil {
		return err
	}
	nestedMap(o, "metadata", "annotations")[lastAppliedAnnotation] = string(data) + "\n"
	return nil
}

// cluster collects the snapshot's objects by namespace and resource.
type cluster struct {
	byNamespace map[string]map[string][]any // namespace ("" for cluster scope) -> resource -> objects
	kube        *meshtest.Cluster
}

func newCluster() *cluster {
	return &cluster{byNamespace: map[string]map[string][]any{}, kube: &meshtest.Cluster{
		Name: clusterName, Nodes: nodes, Values: meshValues, Now: snapshotTime,
	}}
}

func (c *cluster) add(namespace, resource string, obj any) {
	if c.byNamespace[namespace] == nil {
		c.byNamespace[namespace] = map[string][]any{}
	}
	c.byNamespace[namespace][resource] = append(c.byNamespace[namespace][resource], obj)
}

func (c *cluster) addNamespace(name string, labels map[string]string) {
	created, ok := namespaceCreated[name]
	if !ok {
		panic("no creation time for namespace " + name)
	}
	c.add("", "namespaces", c.kube.Namespace(name, labels, created))
}

func convert[T any](o object) T {
	var into T
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o, &into); err != nil {
		panic(fmt.Sprintf("%s %s: %v", o["kind"], nestedString(o, "metadata", "name"), err))
	}
	return into
}

func (c *cluster) addWorkload(o object, st meshtest.Story) error {
	switch o["kind"] {
	case "Deployment":
		c.kube.Deployment(convert[appsv1.Deployment](o), st)
	case "StatefulSet":
		c.kube.StatefulSet(convert[appsv1.StatefulSet](o), st)
	case "DaemonSet":
		c.kube.DaemonSet(convert[appsv1.DaemonSet](o), st)
	case "CronJob":
		c.kube.CronJob(convert[batchv1.CronJob](o), st)
	case "Job":
		c.kube.Job(convert[batchv1.Job](o), st)
	case "Rollout":
		c.addRollout(o, st)
	case "Pod":
		c.kube.BarePod(convert[corev1.Pod](o), st)
	default:
		return fmt.Errorf("unexpected kind %v", o["kind"])
	}
	return nil
}

// addBuilt files what the emulated controllers made under its namespace.
func (c *cluster) addBuilt() {
	add := func(resource string, objs []any) {
		for _, o := range objs {
			c.add(o.(metav1.Object).GetNamespace(), resource, o)
		}
	}
	w := c.kube.Objects
	add("deployments", pointers(w.Deployments))
	add("replicasets", pointers(w.ReplicaSets))
	add("statefulsets", pointers(w.StatefulSets))
	add("daemonsets", pointers(w.DaemonSets))
	add("cronjobs", pointers(w.CronJobs))
	add("jobs", pointers(w.Jobs))
	add("pods", pointers(w.Pods))
}

func pointers[T any](objs []T) []any {
	out := make([]any, len(objs))
	for i := range objs {
		out[i] = &objs[i]
	}
	return out
}

// addRollout stores an Argo Rollout as written (a custom resource: the API
// server keeps its template without pod defaults) with the status Argo
// Rollouts reports.
func (c *cluster) addRollout(o object, st meshtest.Story) {
	spec := convert[struct {
		Replicas *int32                 `json:"replicas"`
		Selector *metav1.LabelSelector  `json:"selector"`
		Template corev1.PodTemplateSpec `json:"template"`
	}](nestedMap(o, "spec"))
	name, namespace := nestedString(o, "metadata", "name"), nestedString(o, "metadata", "namespace")
	meta := c.store(o, "Rollout", namespace, st.Created, st.Revision)
	ann := nestedMap(o, "metadata", "annotations")
	ann["rollout.argoproj.io/revision"] = fmt.Sprint(st.Revision)

	hash := c.kube.RolloutReplicaSets(meta, *spec.Replicas, spec.Selector, spec.Template, st)
	live := int64(st.LivePods())
	settled := st.LastPodStart().Add(9 * time.Second)
	o["status"] = map[string]any{
		"HPAReplicas":        live,
		"availableReplicas":  live,
		"blueGreen":          map[string]any{},
		"canary":             map[string]any{},
		"currentPodHash":     hash,
		"currentStepHash":    meshtest.Suffix(name+"/steps", 10),
		"currentStepIndex":   int64(4),
		"observedGeneration": fmt.Sprint(st.Revision),
		"phase":              "Healthy",
		"readyReplicas":      live,
		"replicas":           live,
		"selector":           "app=" + name,
		"stableRS":           hash,
		"updatedReplicas":    live,
		"conditions": []any{
			rolloutCondition("Available", "AvailableReason", "Rollout has minimum availability", settled),
			rolloutCondition("Completed", "RolloutCompleted", fmt.Sprintf("Rollout completed update to revision %d (%s): Rollout completed update to revision %d", st.Revision, hash, st.Revision), settled),
			rolloutCondition("Healthy", "RolloutHealthy", "Rollout is healthy", settled),
		},
	}
	c.add(namespace, "rollouts", o)
}

func rolloutCondition(typ, reason, message string, at time.Time) map[string]any {
	return map[string]any{
		"type": typ, "status": "True", "reason": reason, "message": message,
		"lastTransitionTime": at.Format(time.RFC3339), "lastUpdateTime": at.Format(time.RFC3339),
	}
}

// addFlux stores the Flux objects with the status kustomize-controller and
// source-controller report: the last applied revision and each
// Kustomization's inventory.
func (c *cluster) addFlux(kustomizations []*fluxKustomization) error {
	created := namespaceCreated["flux-system"].Add(40 * time.Second)
	for _, ks := range kustomizations {
		for _, o := range ks.Applied {
			if o["kind"] == "GitRepository" {
				c.add("flux-system", "gitrepositories", c.fluxStatus(o, created, gitRepositoryStatus(o)))
			}
		}
	}
	for _, ks := range kustomizations {
		var entries []any
		ids := map[string]string{}
		for _, o := range ks.Applied {
			id, v := inventoryID(o)
			ids[id] = v
		}
		for _, id := range slices.Sorted(maps.Keys(ids)) {
			entries = append(entries, map[string]any{"id": id, "v": ids[id]})
		}
		revision := revisionOf(ks.Source)
		c.add("flux-system", "kustomizations", c.fluxStatus(ks.Object, created, map[string]any{
			"conditions":            []any{readyCondition("ReconciliationSucceeded", "Applied revision: "+revision)},
			"inventory":             map[string]any{"entries": entries},
			"lastAppliedRevision":   revision,
			"lastAttemptedRevision": revision,
			"observedGeneration":    int64(1),
		}))
	}
	return nil
}

// revisionOf is the commit Flux last fetched from the repository at url
// ("" for the platform repository).
func revisionOf(url string) string {
	if team, ok := teamRepositories[url]; ok {
		return team.Revision
	}
	return gitRevision
}

// gitRepositoryStatus is what source-controller reports once it stored the
// artifact of the repository's last revision.
func gitRepositoryStatus(o object) map[string]any {
	name := nestedString(o, "metadata", "name")
	url := nestedString(o, "spec", "url")
	if name == "flux-system" {
		url = ""
	}
	revision := revisionOf(url)
	commit := revision[strings.LastIndex(revision, ":")+1:]
	artifact := "gitrepository/flux-system/" + name + "/" + commit + ".tar.gz"
	stored := "stored artifact for revision '" + revision + "'"
	return map[string]any{
		"artifact": map[string]any{
			"digest":         "sha256:" + meshtest.HexDigest("artifact "+revision),
			"lastUpdateTime": "2025-03-13T08:52:17Z",
			"path":           artifact,
			"revision":       revision,
			"size":           int64(48213),
			"url":            "http://source-controller.flux-system.svc.cluster.local./" + artifact,
		},
		"conditions": []any{
			readyCondition("Succeeded", stored),
			map[string]any{"type": "ArtifactInStorage", "status": "True", "reason": "Succeeded", "message": stored, "lastTransitionTime": "2025-03-13T08:52:17Z", "observedGeneration": int64(1)},
		},
		"observedGeneration": int64(1),
	}
}

// argoApplicationsDir holds the Argo CD Applications of the repository;
// Argo CD, installed next to Flux, has them all synced.
const argoApplicationsDir = "argocd"

// addArgoApplications stores the Applications as the API server holds them,
// synced and healthy at the repository's revision.
func (c *cluster) addArgoApplications(gitopsDir string) error {
	files, err := filepath.Glob(filepath.Join(gitopsDir, argoApplicationsDir, "*.yaml"))
	if err != nil {
		return err
	}
	created := namespaceCreated["argocd"].Add(2 * time.Minute)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		var app object
		if err := yaml.Unmarshal(data, &app); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		c.store(app, "Application", "argocd", created, 1)
		app["status"] = map[string]any{
			"sync":   map[string]any{"status": "Synced", "revision": strings.TrimPrefix(gitRevision, "main@sha1:")},
			"health": map[string]any{"status": "Healthy"},
		}
		c.add("argocd", "applications", app)
	}
	return nil
}

func readyCondition(reason, message string) map[string]any {
	return map[string]any{
		"type": "Ready", "status": "True", "reason": reason, "message": message,
		"lastTransitionTime": "2025-03-13T08:52:19Z", "observedGeneration": int64(1),
	}
}

func (c *cluster) fluxStatus(o object, created time.Time, status map[string]any) object {
	kind, _ := o["kind"].(string)
	c.store(o, kind, "flux-system", created, 1)
	nestedMap(o, "metadata")["finalizers"] = []any{"finalizers.fluxcd.io"}
	o["status"] = status
	return o
}

// store adds to a custom resource, kept as written, the metadata the API
// server keeps.
func (c *cluster) store(o object, kind, namespace string, created time.Time, generation int64) metav1.ObjectMeta {
	meta := c.kube.Meta(kind, namespace, nestedString(o, "metadata", "name"), created, generation)
	md := nestedMap(o, "metadata")
	md["uid"], md["resourceVersion"], md["generation"] = string(meta.UID), meta.ResourceVersion, meta.Generation
	md["creationTimestamp"] = created.Format(time.RFC3339)
	return meta
}

// files lays the snapshot out the way `kubectl get -o yaml` output saved
// per namespace would look: one List per resource, the webhooks as JSON,
// and the Flux objects as a plain multi-document stream and a single
// object, so every format the snapshot reader accepts is used.
func (c *cluster) files() (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, ns := range slices.Sorted(maps.Keys(c.byNamespace)) {
		dir := ns
		if dir == "" {
			dir = "cluster-scoped"
		}
		for _, res := range slices.Sorted(maps.Keys(c.byNamespace[ns])) {
			items, err := toMaps(c.byNamespace[ns][res])
			if err != nil {
				return nil, err
			}
			sort.SliceStable(items, func(i, j int) bool {
				return nestedString(items[i], "metadata", "name") < nestedString(items[j], "metadata", "name")
			})
			file := path.Join(dir, res+".yaml")
			var data []byte
			switch res {
			case "mutatingwebhookconfigurations":
				file = path.Join(dir, res+".json")
				data, err = json.MarshalIndent(list(items), "", "    ")
				data = append(data, '\n')
			case "kustomizations":
				data, err = multiDoc(items)
			case "gitrepositories":
				// One object per file, as `kubectl get gitrepository NAME
				// -o yaml` saves it; the bootstrap one keeps the plain name.
				for _, item := range items[1:] {
					more, err := yaml.Marshal(item)
					if err != nil {
						return nil, err
					}
					out[path.Join(dir, res+"-"+nestedString(item, "metadata", "name")+".yaml")] = more
				}
				data, err = yaml.Marshal(items[0])
			default:
				data, err = yaml.Marshal(list(items))
			}
			if err != nil {
				return nil, err
			}
			out[file] = data
		}
	}
	return out, nil
}

func list(items []object) object {
	return object{"apiVersion": "v1", "items": items, "kind": "List", "metadata": map[string]any{"resourceVersion": ""}}
}

func multiDoc(items []object) ([]byte, error) {
	var b strings.Builder
	for _, it := range items {
		data, err := yaml.Marshal(it)
		if err != nil {
			return nil, err
		}
		b.WriteString("---\n")
		b.Write(data)
	}
	return []byte(b.String()), nil
}

func toMaps(objs []any) ([]object, error) {
	out := make([]object, 0, len(objs))
	for _, o := range objs {
		data, err := json.Marshal(o)
		if err != nil {
			return nil, err
		}
		var m object
		if err := json.Unmarshal(data, &m); err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}
