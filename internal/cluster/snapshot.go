// Package cluster reads the objects kedge needs from a cluster: a snapshot
// directory (offline) or the live API server (informers).
package cluster

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

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/kedge-io/kedge/internal/objects"
)

// SnapshotError names the file (and document) a snapshot could not be read
// from, so an operator can fix the exact place.
type SnapshotError struct {
	File     string
	Document int // 1-based; 0 when the whole file is at fault
	Err      error
}

func (e *SnapshotError) Error() string {
	if e.Document > 0 {
		return fmt.Sprintf("snapshot %s: document %d: %v", e.File, e.Document, e.Err)
	}
	return fmt.Sprintf("snapshot %s: %v", e.File, e.Err)
}

func (e *SnapshotError) Unwrap() error { return e.Err }

// ReadSnapshot reads every *.yaml, *.yml and *.json file below dir. Each
// file holds one object, a multi-document stream, or a List. Kinds kedge does
// not read are ignored; a malformed document fails the whole read, because a
// plan computed from a partial cluster would restart the wrong workloads.
func ReadSnapshot(dir string) (*objects.Set, error) {
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
	set := &objects.Set{}
	for _, p := range parts {
		merge(set, p)
	}
	return set, nil
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
		return nil, &SnapshotError{File: name, Err: err}
	}
	return decodeSnapshot(data, isJSON, name)
}

// decodeSnapshot reads the objects of one snapshot file's content; name is
// what errors call the file.
func decodeSnapshot(data []byte, isJSON bool, name string) (*objects.Set, error) {
	set := &objects.Set{}
	doc := 0
	err := eachDocument(data, isJSON, func(raw []byte) error {
		doc++
		if err := addObject(set, raw); err != nil {
			return &SnapshotError{File: name, Document: doc, Err: err}
		}
		return nil
	})
	if err != nil {
		var se *SnapshotError
		if errors.As(err, &se) {
			return nil, err
		}
		return nil, &SnapshotError{File: name, Document: doc + 1, Err: err}
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
		raw, err := yaml.YAMLToJSON(doc)
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

func isEmptyDocument(raw []byte) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || bytes.Equal(raw, []byte("null"))
}

type typeHeader struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Items      []json.RawMessage `json:"items"`
}

func addObject(set *objects.Set, raw []byte) error {
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
			if err := addObject(set, item); err != nil {
				return fmt.Errorf("items[%d]: %w", i, err)
			}
		}
		return nil
	}
	group, _ := splitAPIVersion(head.APIVersion)
	target := route(set, group, head.Kind)
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
func route(set *objects.Set, group, kind string) func([]byte) error {
	switch group + "/" + kind {
	case "/Namespace":
		return appendTo(&set.Namespaces)
	case "/Pod":
		return appendTo(&set.Pods)
	case "/ConfigMap":
		return appendTo(&set.ConfigMaps)
	case "apps/ReplicaSet":
		return appendTo(&set.ReplicaSets)
	case "apps/Deployment":
		return appendTo(&set.Deployments)
	case "apps/StatefulSet":
		return appendTo(&set.StatefulSets)
	case "apps/DaemonSet":
		return appendTo(&set.DaemonSets)
	case "batch/Job":
		return appendTo(&set.Jobs)
	case "batch/CronJob":
		return appendTo(&set.CronJobs)
	case "admissionregistration.k8s.io/MutatingWebhookConfiguration":
		return appendTo(&set.MutatingWebhookConfigurations)
	case "argoproj.io/Rollout":
		return appendTo(&set.Rollouts)
	case "argoproj.io/Application":
		return appendTo(&set.Applications)
	case "kustomize.toolkit.fluxcd.io/Kustomization":
		return appendTo(&set.Kustomizations)
	case "source.toolkit.fluxcd.io/GitRepository":
		return appendTo(&set.GitRepositories)
	}
	return nil
}

func appendTo[T any](slice *[]T) func([]byte) error {
	return func(raw []byte) error {
		var obj T
		if err := json.Unmarshal(raw, &obj); err != nil {
			return err
		}
		*slice = append(*slice, obj)
		return nil
	}
}

func merge(dst, src *objects.Set) {
	dst.Namespaces = append(dst.Namespaces, src.Namespaces...)
	dst.Pods = append(dst.Pods, src.Pods...)
	dst.ConfigMaps = append(dst.ConfigMaps, src.ConfigMaps...)
	dst.ReplicaSets = append(dst.ReplicaSets, src.ReplicaSets...)
	dst.Deployments = append(dst.Deployments, src.Deployments...)
	dst.StatefulSets = append(dst.StatefulSets, src.StatefulSets...)
	dst.DaemonSets = append(dst.DaemonSets, src.DaemonSets...)
	dst.Jobs = append(dst.Jobs, src.Jobs...)
	dst.CronJobs = append(dst.CronJobs, src.CronJobs...)
	dst.Rollouts = append(dst.Rollouts, src.Rollouts...)
	dst.MutatingWebhookConfigurations = append(dst.MutatingWebhookConfigurations, src.MutatingWebhookConfigurations...)
	dst.Applications = append(dst.Applications, src.Applications...)
	dst.Kustomizations = append(dst.Kustomizations, src.Kustomizations...)
	dst.GitRepositories = append(dst.GitRepositories, src.GitRepositories...)
}
