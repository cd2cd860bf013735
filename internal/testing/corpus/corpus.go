// Package corpus runs kedge on public GitOps repositories nobody on the
// project wrote (testdata/corpus): each a byte-for-byte copy at a pinned
// commit, with the cluster that applies it modelled after an Istio upgrade
// and the outcome for every drifted workload worked out from the
// controllers' documentation. A workload counts as restarted correctly
// when kedge's edit applies, the controllers' own builds of what the
// cluster applies (internal/testing/editcheck) change by its restart
// annotations and nothing else, and planning again on the edited checkout
// changes nothing.
package corpus

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/kedge-io/kedge/internal/cluster/snapshot"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/testing/meshtest"
)

// Dir is testdata/corpus.
var Dir = corpusDir()

func corpusDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "testdata", "corpus")
}

// The mesh every modelled cluster runs: pods injected by istiod 1-24-1,
// and istiod 1-25-0 installed since as the revision of the namespaces
// that inject. Every injected pod drifts by revision.
const (
	OldRevision = "1-24-1"
	OldImage    = "docker.io/istio/proxyv2:1.24.1"
	NewRevision = "1-25-0"
	NewImage    = "docker.io/istio/proxyv2:1.25.0"
)

// Entry is one repository of the corpus.
type Entry struct {
	Name string
	Dir  string
	Expected
}

// Expected is testdata/corpus/<name>/expected.yaml: how the cluster
// applies the repository and what becomes of each drifted workload.
type Expected struct {
	// Repository is the address the cluster's sources name.
	Repository string `json:"repository"`
	// Checkouts, when set, are several branches of the repository the
	// cluster applies from, each a directory of the entry.
	Checkouts []Checkout `json:"checkouts"`
	// Charts are the charts of chart repositories the cluster's
	// Applications and HelmReleases name, by "<repoURL> <chart>
	// <version>", as directories of the entry.
	Charts map[string]string `json:"charts"`
	// FluxDirs are, for the Flux Kustomizations of an ExternalArtifact,
	// where their path is in the repository ("namespace/name" to the
	// directory), as the artifact's ArtifactGenerator copies it.
	FluxDirs map[string]string `json:"fluxDirs"`
	// Workloads are the drifted workloads, each with its outcome.
	Workloads []Outcome `json:"workloads"`
}

// Checkout is one branch of the repository.
type Checkout struct {
	Branch string `json:"branch"`
	Dir    string `json:"dir"`
}

// Outcome is what becomes of one drifted workload.
type Outcome struct {
	// Workload is "Kind namespace/name".
	Workload string `json:"workload"`
	// Restart is set when a Git edit restarts it.
	Restart bool `json:"restart"`
	// Edit and File, when set, are the edit kind and a file it changes.
	Edit string `json:"edit"`
	File string `json:"file"`
	// Status and Detail are what kedge reports for a workload no Git edit
	// restarts: the status, and words the detail must hold.
	Status string `json:"status"`
	Detail string `json:"detail"`
	// Why says how the outcome follows from the controllers' documents.
	Why string `json:"why"`
}

// Entries lists the corpus, by name.
func Entries() ([]Entry, error) {
	dirs, err := os.ReadDir(Dir)
	if err != nil {
		return nil, err
	}
	var out []Entry
	for _, d := range dirs {
		if !d.IsDir() || d.Name() == "mesh" {
			continue
		}
		e := Entry{Name: d.Name(), Dir: filepath.Join(Dir, d.Name())}
		data, err := os.ReadFile(filepath.Join(e.Dir, "expected.yaml"))
		if err != nil {
			return nil, err
		}
		if err := yaml.UnmarshalStrict(data, &e.Expected); err != nil {
			return nil, fmt.Errorf("%s: %w", e.Name, err)
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Cluster reads the entry's cluster: what cluster/ holds (the namespaces,
// the GitOps objects, the workloads as their controllers applied them),
// with each workload's pod as the kube controllers and istiod 1-24-1's
// injector made it, and the mesh of both istiod revisions.
func (e Entry) Cluster() (*objects.Set, error) {
	set, err := snapshot.Read(filepath.Join(e.Dir, "cluster"))
	if err != nil {
		return nil, err
	}
	created := time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)
	kube := &meshtest.Cluster{
		Name: e.Name, Now: created.Add(90 * 24 * time.Hour),
		Nodes: []meshtest.Node{{Name: "node-a", IP: "10.0.0.10", PodCIDR: netip.MustParsePrefix("10.1.0.0/24")}},
	}
	story := meshtest.Story{Created: created, Revision: 1, Templates: []meshtest.Template{{
		Pods: meshtest.PodsFrom(1, created.Add(time.Minute), &meshtest.Sidecar{Revision: OldRevision, Image: OldImage}),
	}}}
	// The workloads as applied, whole: the snapshot reader keeps of them
	// only what kedge reads.
	applied, err := e.objects(func(kind string) bool {
		return kind == "Deployment" || kind == "StatefulSet" || kind == "DaemonSet" || kind == "Rollout"
	})
	if err != nil {
		return nil, err
	}
	var rollouts []*objects.Rollout
	for _, o := range applied {
		switch o.GetKind() {
		case "Deployment":
			var d appsv1.Deployment
			if err := fromUnstructured(o, &d); err != nil {
				return nil, err
			}
			kube.Deployment(d, story)
		case "StatefulSet":
			var s appsv1.StatefulSet
			if err := fromUnstructured(o, &s); err != nil {
				return nil, err
			}
			kube.StatefulSet(s, story)
		case "DaemonSet":
			var d appsv1.DaemonSet
			if err := fromUnstructured(o, &d); err != nil {
				return nil, err
			}
			kube.DaemonSet(d, story)
		case "Rollout":
			var r objects.Rollout
			if err := fromUnstructured(o, &r); err != nil {
				return nil, err
			}
			r.UID = types.UID("rollout-" + r.Namespace + "-" + r.Name)
			kube.RolloutReplicaSets(r.ObjectMeta, 1, &metav1.LabelSelector{MatchLabels: r.Spec.Template.Labels}, r.Spec.Template, story)
			rollouts = append(rollouts, &r)
		}
	}
	out := *set
	out.Deployments, out.StatefulSets, out.DaemonSets, out.ReplicaSets, out.Pods, out.Rollouts = nil, nil, nil, nil, nil, rollouts
	kube.Objects.AddTo(&out)
	meshtest.Merge(
		meshtest.IstiodRevision(OldRevision, OldImage),
		meshtest.IstiodRevision(NewRevision, NewImage),
	).AddTo(&out)
	return &out, nil
}

func fromUnstructured(o *unstructured.Unstructured, into any) error {
	return kruntime.DefaultUnstructuredConverter.FromUnstructured(o.Object, into)
}

// objects reads the objects of cluster/ of the kinds keep says, whole.
func (e Entry) objects(keep func(kind string) bool) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	err := filepath.WalkDir(filepath.Join(e.Dir, "cluster"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			o := &unstructured.Unstructured{}
			if err := dec.Decode(&o.Object); errors.Is(err, io.EOF) {
				return nil
			} else if err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			if keep(o.GetKind()) {
				out = append(out, o)
			}
		}
	})
	return out, err
}
