package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strings"
	"time"

	"github.com/kedge-io/kedge/internal/testing/synth"
)

// indexRepoFiles is the size of the repository whose indexing is measured.
const indexRepoFiles = 20000

// fleetData is the generated fleet on disk.
type fleetData struct {
	Spec synth.Spec
	// Snapshot and Repo are the cluster (JSON Lists, as kubectl prints
	// them) and its GitOps repository.
	Snapshot      string
	SnapshotBytes int64
	Repo          string
	RepoFiles     int
	Expect        synth.Expectation
	// IndexRepo is a repository of indexRepoFiles files or a few more,
	// from a fleet sized for it.
	IndexRepo      string
	IndexRepoFiles int
	IndexSpec      synth.Spec
}

// prepareFleet generates the fleet, or reuses the one cached for the
// same generator sources.
func prepareFleet(opts options) (*fleetData, error) {
	key, err := generatorKey(opts.root)
	if err != nil {
		return nil, err
	}
	generator := "fleet-" + key + "-"
	dir := filepath.Join(opts.cache, fmt.Sprintf("%s%g", generator, opts.scale))
	meta := filepath.Join(dir, "fleet.json")
	if data, err := os.ReadFile(meta); err == nil {
		var f fleetData
		if err := json.Unmarshal(data, &f); err == nil {
			logf("reusing the fleet in %s", dir)
			return &f, nil
		}
	}
	if err := removeStale(opts.cache, generator); err != nil {
		return nil, err
	}
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	spec := scaled(synth.FleetSpec(), opts.scale)
	logf("generating a fleet of %d pods, %d namespaces, %d workloads (a few minutes, once)", spec.Pods, spec.Namespaces, spec.Workloads)
	start := time.Now()
	fleet, err := synth.New(spec)
	if err != nil {
		return nil, err
	}
	f := &fleetData{
		Spec:      fleet.Spec,
		Snapshot:  filepath.Join(dir, "fleet", "snapshot"),
		Repo:      filepath.Join(dir, "fleet", "repo"),
		IndexRepo: filepath.Join(dir, "index", "repo"),
		Expect:    fleet.Expect(),
	}
	if err := fleet.WriteSnapshotJSON(f.Snapshot); err != nil {
		return nil, err
	}
	if f.RepoFiles, err = fleet.WriteRepo(f.Repo); err != nil {
		return nil, err
	}
	fleet = nil
	// The generated objects are gigabytes; give them back before anything
	// is measured.
	debug.FreeOSMemory()
	if f.SnapshotBytes, err = dirSize(f.Snapshot); err != nil {
		return nil, err
	}
	logf("fleet written in %s: snapshot %d MiB, repository %d files", time.Since(start).Round(time.Second), f.SnapshotBytes>>20, f.RepoFiles)

	index, spec, err := sizedRepo(int(indexRepoFiles * opts.scale))
	if err != nil {
		return nil, err
	}
	f.IndexSpec = spec
	if f.IndexRepoFiles, err = index.WriteRepo(f.IndexRepo); err != nil {
		return nil, err
	}
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return nil, err
	}
	return f, os.WriteFile(meta, data, 0o644)
}

// sizedRepo returns the smallest fleet (in steps of ten namespaces) whose
// repository has at least files files. Pods do not change the
// repository's size, so each workload gets one.
func sizedRepo(files int) (*synth.Fleet, synth.Spec, error) {
	at := func(namespaces int) (*synth.Fleet, synth.Spec, error) {
		spec := synth.Spec{Seed: 2, Namespaces: namespaces, Workloads: 4 * namespaces, Pods: 4 * namespaces}
		f, err := synth.New(spec)
		return f, spec, err
	}
	probe, _, err := at(100)
	if err != nil {
		return nil, synth.Spec{}, err
	}
	perNamespace := float64(probe.RepoFileCount()) / 100
	n := max(int(float64(files)/perNamespace)/10*10, 10)
	for {
		f, spec, err := at(n)
		if err != nil {
			return nil, spec, err
		}
		if f.RepoFileCount() >= files {
			return f, spec, nil
		}
		n += 10
	}
}

// generatorKey hashes the sources that decide what is generated, so a
// change to the generator regenerates the cache.
func generatorKey(root string) (string, error) {
	h := sha256.New()
	var paths []string
	for _, dir := range []string{"internal/testing/synth", "internal/testing/meshtest"} {
		matches, err := filepath.Glob(filepath.Join(root, dir, "*.go"))
		if err != nil {
			return "", err
		}
		paths = append(paths, matches...)
	}
	sort.Strings(paths)
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s\n%d\n", filepath.Base(p), len(data))
		h.Write(data)
	}
	fmt.Fprintf(h, "%+v %d", synth.FleetSpec(), indexRepoFiles)
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// scaled shrinks a spec's counts, keeping at least one of each.
func scaled(s synth.Spec, f float64) synth.Spec {
	s.Namespaces = max(int(float64(s.Namespaces)*f), 1)
	s.Workloads = max(int(float64(s.Workloads)*f), s.Namespaces)
	s.Pods = max(int(float64(s.Pods)*f), s.Workloads)
	return s
}

// removeStale deletes fleets of older generator versions (each is over a
// gigabyte), and keeps those of the current one at any scale.
func removeStale(cache, current string) error {
	entries, err := os.ReadDir(cache)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.IsDir() && strings.HasPrefix(e.Name(), "fleet-") && !strings.HasPrefix(e.Name(), current) {
			logf("removing the stale fleet %s", e.Name())
			if err := os.RemoveAll(filepath.Join(cache, e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}

func dirSize(dir string) (int64, error) {
	var total int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			total += info.Size()
		}
		return nil
	})
	return total, err
}
