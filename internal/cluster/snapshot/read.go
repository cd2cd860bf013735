// Package snapshot reads and writes a cluster's objects as a directory of
// YAML or JSON files, so that a plan can be computed, reviewed and repeated
// without access to the cluster. A snapshot reads like the cluster it was
// taken from: every object is trimmed exactly as the live source's caches
// trim it (internal/cluster/trim). A malformed document fails the whole
// read with the file and document named, because a plan computed from part
// of a cluster would restart the wrong workloads. The pods of a large
// cluster are one List of a gigabyte or more, so large files are decoded as
// a stream spread over the cores, and files are written one item at a time.
package snapshot

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/kedge-io/kedge/internal/cluster/trim"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/yamlguard"
)

// Error names the file (and document) a snapshot could not be read
// from, so an operator can fix the exact place.
type Error struct {
	File     string
	Document int // 1-based; 0 when the whole file is at fault
	Err      error
}

func (e *Error) Error() string {
	if e.Document > 0 {
		return fmt.Sprintf("snapshot %s: document %d: %v", e.File, e.Document, e.Err)
	}
	return fmt.Sprintf("snapshot %s: %v", e.File, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Read reads every *.yaml, *.yml and *.json file below dir. Each
// file holds one object, a multi-document stream, or a List. Kinds kedge does
// not read are ignored; a malformed document fails the whole read, because a
// plan computed from a partial cluster would restart the wrong workloads.
func Read(dir string) (*objects.Set, error) {
	info, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", dir, err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("snapshot %s: not a directory", dir)
	}
	var files []string
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !isSnapshotFile(path) {
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			// A link may point anywhere on the machine; a snapshot is a
			// self-contained directory.
			return nil
		}
		files = append(files, path)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", dir, err)
	}
	sort.Strings(files)

	// Files decode independently; decoding dominates a plan's cost on large
	// clusters, so spread it over the cores and merge in file order to keep
	// the result deterministic.
	parts := make([]*objects.Set, len(files))
	errs := make([]error, len(files))
	work := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				parts[i], errs[i] = readSnapshotFile(files[i], relative(dir, files[i]))
			}
		}()
	}
	for i := range files {
		work <- i
	}
	close(work)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return mergeAll(parts), nil
}

func isSnapshotFile(path string) bool {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

func relative(dir, path string) string {
	if rel, err := filepath.Rel(dir, path); err == nil {
		return rel
	}
	return path
}

func readSnapshotFile(path, name string) (*objects.Set, error) {
	isJSON := strings.EqualFold(filepath.Ext(path), ".json")
	if info, err := os.Stat(path); err == nil && info.Size() >= streamThreshold {
		if set, err := readSnapshotStream(path, isJSON); err == nil {
			return set, nil
		}
		// Whatever the stream could not take is read whole below, which
		// gives the exact result or error of a small file.
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &Error{File: name, Err: err}
	}
	return decodeSnapshot(data, isJSON, name)
}

// decodeSnapshot reads the objects of one snapshot file's content; name is
// what errors call the file.
func decodeSnapshot(data []byte, isJSON bool, name string) (*objects.Set, error) {
	set := &objects.Set{}
	tr := trim.New()
	doc := 0
	err := eachDocument(data, isJSON, func(raw []byte) error {
		doc++
		if err := addObject(set, raw, tr); err != nil {
			return &Error{File: name, Document: doc, Err: err}
		}
		return nil
	})
	if err != nil {
		var se *Error
		if errors.As(err, &se) {
			return nil, err
		}
		return nil, &Error{File: name, Document: doc + 1, Err: err}
	}
	return set, nil
}

// eachDocument calls fn with the JSON form of every non-empty document.
func eachDocument(data []byte, isJSON bool, fn func(raw []byte) error) error {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	if isJSON {
		dec := json.NewDecoder(bytes.NewReader(data))
		for {
			var raw json.RawMessage
			if err := dec.Decode(&raw); err == io.EOF {
				return nil
			} else if err != nil {
				return err
			}
			if err := fn(raw); err != nil {
				return err
			}
		}
	}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := reader.Read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		raw, err := yamlToJSON(doc)
		if err != nil {
			return err
		}
		if isEmptyDocument(raw) {
			continue
		}
		if err := fn(raw); err != nil {
			return err
		}
	}
}

// yamlToJSON converts one YAML document, refusing one whose aliases would
// expand it far beyond its size before the converter expands them.
// Snapshots have no size or depth budget: the pods of a large cluster are
// one List of a gigabyte, and the decoders bound nesting themselves.
func yamlToJSON(doc []byte) ([]byte, error) {
	if err := yamlguard.Check(doc, yamlguard.AliasesOnly); err != nil {
		return nil, err
	}
	return yaml.YAMLToJSON(doc)
}

func isEmptyDocument(raw []byte) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || bytes.Equal(raw, []byte("null"))
}

type typeHeader struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Items      []json.RawMessage `json:"items"`
}

// addObject decodes one object (or List) into set. Pods and ReplicaSets,
// the bulk of a cluster, are kept trimmed to what kedge reads, exactly as
// the live source's caches keep them: a snapshot reads like the cluster it
// was taken from, and a large one fits in memory.
func addObject(set *objects.Set, raw []byte, tr *trim.Trimmer) error {
	if len(bytes.TrimSpace(raw)) > 0 && bytes.TrimSpace(raw)[0] != '{' {
		return errors.New("not an object (expected a mapping with apiVersion and kind)")
	}
	var head typeHeader
	if err := json.Unmarshal(raw, &head); err != nil {
		return err
	}
	if head.Kind == "" {
		return errors.New("object has no kind")
	}
	if head.Kind == "List" || (strings.HasSuffix(head.Kind, "List") && head.Items != nil) {
		for i, item := range head.Items {
			if err := addObject(set, item, tr); err != nil {
				return fmt.Errorf("items[%d]: %w", i, err)
			}
		}
		return nil
	}
	group, _ := splitAPIVersion(head.APIVersion)
	target := route(set, group, head.Kind, tr)
	if target == nil {
		return nil
	}
	if err := target(raw); err != nil {
		return fmt.Errorf("%s: %w", head.Kind, err)
	}
	return nil
}

func splitAPIVersion(apiVersion string) (group, version string) {
	if i := strings.LastIndex(apiVersion, "/"); i >= 0 {
		return apiVersion[:i], apiVersion[i+1:]
	}
	return "", apiVersion
}

// route returns a decoder appending the object to the right slice of set,
// or nil for a kind kedge does not read.
func route(set *objects.Set, group, kind string, tr *trim.Trimmer) func([]byte) error {
	switch group + "/" + kind {
	case "/Namespace":
		return appendTo(&set.Namespaces)
	case "/Pod":
		return appendDecoded(&set.Pods, tr, decodePod)
	case "/ConfigMap":
		return appendTo(&set.ConfigMaps)
	case "apps/ReplicaSet":
		return appendDecoded(&set.ReplicaSets, tr, decodeReplicaSet)
	case "apps/Deployment":
		return appendEach(&set.Deployments, trim.Deployment)
	case "apps/StatefulSet":
		return appendEach(&set.StatefulSets, trim.StatefulSet)
	case "apps/DaemonSet":
		return appendEach(&set.DaemonSets, trim.DaemonSet)
	case "batch/Job":
		return appendEach(&set.Jobs, trim.Job)
	case "batch/CronJob":
		return appendEach(&set.CronJobs, trim.CronJob)
	case "admissionregistration.k8s.io/MutatingWebhookConfiguration":
		return appendTo(&set.MutatingWebhookConfigurations)
	case "argoproj.io/Rollout":
		return appendEach(&set.Rollouts, func(r *objects.Rollout) { r.Spec.Template = trim.Template(r.Spec.Template) })
	case "argoproj.io/Application":
		return appendTo(&set.Applications)
	case "kustomize.toolkit.fluxcd.io/Kustomization":
		return appendTo(&set.Kustomizations)
	case "source.toolkit.fluxcd.io/GitRepository":
		return appendTo(&set.GitRepositories)
	case "source.toolkit.fluxcd.io/HelmRepository":
		return appendTo(&set.HelmRepositories)
	case "networking.istio.io/ProxyConfig":
		return appendTo(&set.ProxyConfigs)
	case "flagger.app/Canary":
		return appendTo(&set.Canaries)
	case "/Node":
		return appendDecoded(&set.Nodes, tr, decodeNode)
	case "security.istio.io/AuthorizationPolicy":
		return appendTo(&set.AuthorizationPolicies)
	case "gateway.networking.k8s.io/Gateway":
		return appendTo(&set.Gateways)
	case "source.toolkit.fluxcd.io/OCIRepository":
		return appendTo(&set.OCIRepositories)
	case "argoproj.io/AppProject":
		return appendTo(&set.AppProjects)
	case "security.istio.io/PeerAuthentication":
		return appendTo(&set.PeerAuthentications)
	case "security.istio.io/RequestAuthentication":
		return appendTo(&set.RequestAuthentications)
	case "networking.istio.io/EnvoyFilter":
		return appendTo(&set.EnvoyFilters)
	case "extensions.istio.io/WasmPlugin":
		return appendTo(&set.WasmPlugins)
	case "networking.istio.io/VirtualService":
		return appendTo(&set.VirtualServices)
	case "gateway.networking.k8s.io/HTTPRoute":
		return appendTo(&set.HTTPRoutes)
	case "/Service":
		return appendTrimmed(&set.Services, trim.Service)
	}
	return nil
}

// appendDecoded keeps what decode reads of the object: a malformed field
// fails the read when kedge reads it, and the JSON must be valid throughout.
func appendDecoded[T any](slice *[]T, tr *trim.Trimmer, decode func([]byte, *trim.Trimmer) (T, error)) func([]byte) error {
	return func(raw []byte) error {
		obj, err := decode(raw, tr)
		if err != nil {
			return err
		}
		*slice = append(*slice, obj)
		return nil
	}
}

func appendTo[T any](slice *[]T) func([]byte) error {
	return appendTrimmed(slice, func(*T) {})
}

// appendEach is appendTrimmed for the kinds a Set points at: each object
// is decoded into a value of its own.
func appendEach[T any](slice *[]*T, cut func(*T)) func([]byte) error {
	return func(raw []byte) error {
		obj, err := decodeTrimmed(raw, cut)
		if err == nil {
			*slice = append(*slice, obj)
		}
		return err
	}
}

// appendTrimmed decodes the whole object, then keeps what the live
// source's informers keep of it.
func appendTrimmed[T any](slice *[]T, cut func(*T)) func([]byte) error {
	return func(raw []byte) error {
		obj, err := decodeTrimmed(raw, cut)
		if err == nil {
			*slice = append(*slice, *obj)
		}
		return err
	}
}

func decodeTrimmed[T any](raw []byte, cut func(*T)) (*T, error) {
	obj := new(T)
	if err := json.Unmarshal(raw, obj); err != nil {
		return nil, err
	}
	cut(obj)
	return obj, nil
}

// mergeAll concatenates the parts' objects in order. A kind held by one
// part only is taken over as it is, so the slice of a gigabyte List is
// never copied.
func mergeAll(parts []*objects.Set) *objects.Set {
	return &objects.Set{
		Namespaces:   concat(parts, func(s *objects.Set) []corev1.Namespace { return s.Namespaces }),
		Pods:         concat(parts, func(s *objects.Set) []*objects.Pod { return s.Pods }),
		ConfigMaps:   concat(parts, func(s *objects.Set) []corev1.ConfigMap { return s.ConfigMaps }),
		ReplicaSets:  concat(parts, func(s *objects.Set) []*objects.ReplicaSet { return s.ReplicaSets }),
		Deployments:  concat(parts, func(s *objects.Set) []*appsv1.Deployment { return s.Deployments }),
		StatefulSets: concat(parts, func(s *objects.Set) []*appsv1.StatefulSet { return s.StatefulSets }),
		DaemonSets:   concat(parts, func(s *objects.Set) []*appsv1.DaemonSet { return s.DaemonSets }),
		Jobs:         concat(parts, func(s *objects.Set) []*batchv1.Job { return s.Jobs }),
		CronJobs:     concat(parts, func(s *objects.Set) []*batchv1.CronJob { return s.CronJobs }),
		Rollouts:     concat(parts, func(s *objects.Set) []*objects.Rollout { return s.Rollouts }),
		MutatingWebhookConfigurations: concat(parts, func(s *objects.Set) []admissionregistrationv1.MutatingWebhookConfiguration {
			return s.MutatingWebhookConfigurations
		}),
		Applications:     concat(parts, func(s *objects.Set) []objects.Application { return s.Applications }),
		Kustomizations:   concat(parts, func(s *objects.Set) []objects.Kustomization { return s.Kustomizations }),
		GitRepositories:  concat(parts, func(s *objects.Set) []objects.GitRepository { return s.GitRepositories }),
		HelmRepositories: concat(parts, func(s *objects.Set) []objects.HelmRepository { return s.HelmRepositories }),
		ProxyConfigs:     concat(parts, func(s *objects.Set) []objects.ProxyConfig { return s.ProxyConfigs }),
		Canaries:         concat(parts, func(s *objects.Set) []objects.Canary { return s.Canaries }),
		Nodes:            concat(parts, func(s *objects.Set) []corev1.Node { return s.Nodes }),
		AuthorizationPolicies: concat(parts, func(s *objects.Set) []objects.AuthorizationPolicy {
			return s.AuthorizationPolicies
		}),
		Gateways:        concat(parts, func(s *objects.Set) []objects.Gateway { return s.Gateways }),
		OCIRepositories: concat(parts, func(s *objects.Set) []objects.OCIRepository { return s.OCIRepositories }),
		AppProjects:     concat(parts, func(s *objects.Set) []objects.AppProject { return s.AppProjects }),
		PeerAuthentications: concat(parts, func(s *objects.Set) []objects.PeerAuthentication {
			return s.PeerAuthentications
		}),
		RequestAuthentications: concat(parts, func(s *objects.Set) []objects.RequestAuthentication {
			return s.RequestAuthentications
		}),
		EnvoyFilters:    concat(parts, func(s *objects.Set) []objects.EnvoyFilter { return s.EnvoyFilters }),
		WasmPlugins:     concat(parts, func(s *objects.Set) []objects.WasmPlugin { return s.WasmPlugins }),
		VirtualServices: concat(parts, func(s *objects.Set) []objects.VirtualService { return s.VirtualServices }),
		HTTPRoutes:      concat(parts, func(s *objects.Set) []objects.HTTPRoute { return s.HTTPRoutes }),
		Services:        concat(parts, func(s *objects.Set) []corev1.Service { return s.Services }),
	}
}

func concat[T any](parts []*objects.Set, get func(*objects.Set) []T) []T {
	var only []T
	total, holders := 0, 0
	for _, p := range parts {
		if s := get(p); len(s) > 0 {
			only, total, holders = s, total+len(s), holders+1
		}
	}
	if holders <= 1 {
		return only
	}
	out := make([]T, 0, total)
	for _, p := range parts {
		out = append(out, get(p)...)
	}
	return out
}
