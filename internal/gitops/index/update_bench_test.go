package index_test

import (
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kedge-io/kedge/internal/gitops/index"
	"github.com/kedge-io/kedge/internal/testing/synth"
)

// BenchmarkIndexUpdate compares, on the repository of the fleet kedge is
// sized for, a full index build with the update a service cycle makes when
// Git brought nothing new, and with one that edits one workload's file.
// cpu-ms/op is the process's CPU time (user and system, every core).
func BenchmarkIndexUpdate(b *testing.B) {
	fleet, err := synth.New(synth.FleetSpec())
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	if _, err := fleet.WriteRepo(dir); err != nil {
		b.Fatal(err)
	}
	fleet = nil
	base, err := index.Read(dir, index.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("full-build", func(b *testing.B) {
		measureCPU(b, func() {
			if _, err := index.Read(dir, index.Options{}); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("unchanged", func(b *testing.B) {
		measureCPU(b, func() {
			if _, err := base.Update(nil); err != nil {
				b.Fatal(err)
			}
		})
	})
	edited := editOneOverlayWorkload(b, base)
	b.Run("one-file-edited", func(b *testing.B) {
		measureCPU(b, func() {
			if _, err := base.Update([]string{edited}); err != nil {
				b.Fatal(err)
			}
		})
	})
}

// editOneOverlayWorkload changes the restart annotation of the first
// workload an overlay writes, and returns its file.
func editOneOverlayWorkload(b *testing.B, ix *index.Index) string {
	for _, o := range ix.Objects() {
		if o.Root == "" || !strings.HasPrefix(o.Source.Path, "tenants/") {
			continue
		}
		p := filepath.Join(ix.Root(), o.Source.Path)
		data, err := os.ReadFile(p)
		if err != nil {
			b.Fatal(err)
		}
		edited := regexp.MustCompile(`(?m)^  template:\n    metadata:\n`).ReplaceAll(data, []byte("  template:\n    metadata:\n      annotations:\n        example.com/restart: \"1\"\n"))
		if err := os.WriteFile(p, edited, 0o644); err != nil {
			b.Fatal(err)
		}
		return o.Source.Path
	}
	b.Fatal("no overlay workload")
	return ""
}

// measureCPU runs fn b.N times and reports the CPU time it took per run.
func measureCPU(b *testing.B, fn func()) {
	b.ReportAllocs()
	// The garbage of the run before is not this run's to collect.
	runtime.GC()
	start := cpuTime(b)
	b.ResetTimer()
	for range b.N {
		fn()
	}
	b.StopTimer()
	b.ReportMetric(float64((cpuTime(b)-start).Microseconds())/1000/float64(b.N), "cpu-ms/op")
}

func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
