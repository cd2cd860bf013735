package snapshot_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/kedge-io/kedge/internal/cluster/snapshot"
	"github.com/kedge-io/kedge/internal/testing/synth"
)

// BenchmarkReadSnapshot decodes a synthetic fleet of 5,000 full pods (as
// the API server serves them) and their owners: as JSON Lists (`kubectl
// get -o json`) and as YAML ones (`kubectl get -o yaml`). Large files are
// streamed and decoded on every core; pods and ReplicaSets are kept
// trimmed.
func BenchmarkReadSnapshot(b *testing.B) {
	fleet, jsonDir, yamlDir := fleetSnapshots(b, synth.Spec{Seed: 1, Namespaces: 250, Workloads: 1000, Pods: 5000, Drift: 0.5})
	for _, format := range []struct{ name, dir string }{{"json", jsonDir}, {"yaml", yamlDir}} {
		b.Run(format.name, func(b *testing.B) {
			b.SetBytes(treeSize(b, format.dir))
			for b.Loop() {
				set, err := snapshot.Read(format.dir)
				if err != nil {
					b.Fatal(err)
				}
				if len(set.Pods) != len(fleet.Set.Pods) {
					b.Fatalf("read %d pods, wrote %d", len(set.Pods), len(fleet.Set.Pods))
				}
			}
		})
	}
}

// fleetSnapshots generates a fleet and writes its snapshot twice: as the
// JSON Lists `kubectl get -o json` prints and as the YAML of `-o yaml`.
func fleetSnapshots(tb testing.TB, spec synth.Spec) (fleet *synth.Fleet, jsonDir, yamlDir string) {
	tb.Helper()
	fleet, err := synth.New(spec)
	if err != nil {
		tb.Fatal(err)
	}
	jsonDir, yamlDir = tb.TempDir(), tb.TempDir()
	if err := fleet.WriteSnapshotJSON(jsonDir); err != nil {
		tb.Fatal(err)
	}
	if err := fleet.WriteSnapshotYAML(yamlDir); err != nil {
		tb.Fatal(err)
	}
	return fleet, jsonDir, yamlDir
}

// BenchmarkGenericDecodeFloor is the floor Read is held to: the
// same JSON files decoded into any by encoding/json on one goroutine, as a
// program that knows nothing of Kubernetes would read them.
func BenchmarkGenericDecodeFloor(b *testing.B) {
	fleet, err := synth.New(synth.Spec{Seed: 1, Namespaces: 250, Workloads: 1000, Pods: 5000, Drift: 0.5})
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	if err := fleet.WriteSnapshotJSON(dir); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(treeSize(b, dir))
	for b.Loop() {
		if err := decodeAllGeneric(dir); err != nil {
			b.Fatal(err)
		}
	}
}

func decodeAllGeneric(dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		dec := json.NewDecoder(bufio.NewReaderSize(f, 1<<20))
		for {
			var v any
			if err := dec.Decode(&v); errors.Is(err, io.EOF) {
				return nil
			} else if err != nil {
				return err
			}
		}
	})
}

func treeSize(b *testing.B, dir string) int64 {
	var total int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		total += info.Size()
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return total
}
