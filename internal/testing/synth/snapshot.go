package synth

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	"sigs.k8s.io/yaml"
)

// listFile is one file of a snapshot: the objects of one kind, and the
// file's name without its extension.
type listFile struct {
	name  string
	items []any
}

func pointers[T any](objs []T) []any {
	out := make([]any, len(objs))
	for i := range objs {
		out[i] = &objs[i]
	}
	return out
}

// WriteSnapshotJSON writes the cluster below dir in the snapshot format,
// one file per kind holding a List, as `kubectl get <kind> -A -o json`
// prints it. JSON is what a snapshot of full objects is taken as in
// practice; it is also written in a fraction of the time YAML takes.
func (f *Fleet) WriteSnapshotJSON(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, lf := range f.listFiles() {
		if err := writeList(filepath.Join(dir, lf.name+".json"), lf.items); err != nil {
			return fmt.Errorf("write snapshot %s: %w", lf.name, err)
		}
	}
	return nil
}

// WriteSnapshotYAML writes the files WriteSnapshotJSON writes as YAML, as
// `kubectl get <kind> -A -o yaml` prints them: the full objects, where a
// snapshot `kedge snapshot` writes holds only what kedge reads of pods and
// ReplicaSets. It holds each file in memory: for small fleets.
func (f *Fleet) WriteSnapshotYAML(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, lf := range f.listFiles() {
		list := map[string]any{"apiVersion": "v1", "kind": "List", "metadata": map[string]any{"resourceVersion": ""}, "items": lf.items}
		data, err := yaml.Marshal(list)
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, lf.name+".yaml"), data, 0o644)
		}
		if err != nil {
			return fmt.Errorf("write snapshot %s: %w", lf.name, err)
		}
	}
	return nil
}

func (f *Fleet) listFiles() []listFile {
	s := f.Set
	return []listFile{
		{"namespaces", pointers(s.Namespaces)},
		{"pods", pointers(f.Pods)},
		{"configmaps", pointers(s.ConfigMaps)},
		{"replicasets", pointers(f.ReplicaSets)},
		{"deployments", pointers(s.Deployments)},
		{"statefulsets", pointers(s.StatefulSets)},
		{"daemonsets", pointers(s.DaemonSets)},
		{"mutatingwebhookconfigurations", pointers(s.MutatingWebhookConfigurations)},
		{"rollouts", pointers(s.Rollouts)},
		{"applications", pointers(s.Applications)},
		{"kustomizations", pointers(s.Kustomizations)},
		{"gitrepositories", pointers(s.GitRepositories)},
	}
}

// writeList marshals the items on every core and writes them in order.
func writeList(path string, items []any) error {
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(out, 1<<20)
	fmt.Fprint(w, `{"apiVersion":"v1","kind":"List","metadata":{"resourceVersion":""},"items":[`)
	const batch = 512
	for start := 0; start < len(items); start += batch * runtime.GOMAXPROCS(0) {
		end := min(start+batch*runtime.GOMAXPROCS(0), len(items))
		encoded := make([][]byte, end-start)
		errs := make([]error, end-start)
		var wg sync.WaitGroup
		for lo := start; lo < end; lo += batch {
			hi := min(lo+batch, end)
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := lo; i < hi; i++ {
					encoded[i-start], errs[i-start] = json.Marshal(items[i])
				}
			}()
		}
		wg.Wait()
		for i, data := range encoded {
			if errs[i] != nil {
				_ = out.Close()
				return errs[i]
			}
			if start+i > 0 {
				w.WriteByte(',')
			}
			w.WriteString("\n")
			w.Write(data)
		}
	}
	fmt.Fprint(w, "\n]}\n")
	if err := w.Flush(); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}
