// Package memlimit sets how the Go runtime spends memory. Apply gives it a
// soft memory limit once per process: as the heap nears the memory kedge
// may use, the collector works harder, wherever in the program the memory
// goes; peaks need no tuning phase by phase. Packed paces the phases that
// build what kedge keeps between cycles.
package memlimit

import (
	"errors"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
)

// Where a limit came from.
const (
	FromEnv     = "GOMEMLIMIT"
	FromCgroup  = "cgroup"
	FromDefault = "default"
)

// DefaultBudget is the memory kedge is sized for when neither GOMEMLIMIT
// nor a cgroup says otherwise: the limit its deployment sets (deploy/).
const DefaultBudget = 1 << 30

// limitPercent is the share of the budget given to the runtime. The rest is
// for what its limit does not count (the binary, memory outside Go) and for
// overshoot: the limit is soft. At 85%, the largest peaks docs/benchmarks.md
// measures at 100k pods (`kedge plan --repo` near 820 MiB, `kedge run` near
// 930 MiB during its first cycle) stay inside the 1 GiB budget.
const limitPercent = 85

// unlimited is where cgroup v1 values stop being limits: it writes "no
// limit" as the largest page-aligned int64.
const unlimited = 1 << 62

const cgroupRoot = "/sys/fs/cgroup"

// Apply sets the runtime's memory limit unless GOMEMLIMIT already did (the
// runtime reads it at start; "off" turns the limit off), and returns the
// limit in force and where it came from.
func Apply() (limit int64, from string) {
	return apply(cgroupRoot)
}

func apply(root string) (int64, string) {
	if _, set := os.LookupEnv("GOMEMLIMIT"); set {
		return debug.SetMemoryLimit(-1), FromEnv
	}
	budget, from := int64(DefaultBudget), FromDefault
	if b, err := cgroupLimit(root); err == nil {
		budget, from = b, FromCgroup
	}
	limit := budget / 100 * limitPercent
	debug.SetMemoryLimit(limit)
	return limit, from
}

var errNoLimit = errors.New("no cgroup memory limit")

// cgroupLimit reads the memory limit of the process's cgroup: memory.max
// under cgroup v2, memory/memory.limit_in_bytes under v1. Inside a container
// the cgroup file system shows the container's own cgroup at its root.
func cgroupLimit(root string) (int64, error) {
	for _, name := range []string{"memory.max", filepath.Join("memory", "memory.limit_in_bytes")} {
		raw, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			continue
		}
		value := strings.TrimSpace(string(raw))
		if value == "max" {
			return 0, errNoLimit
		}
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil {
			return 0, err
		}
		if n <= 0 || n >= unlimited {
			return 0, errNoLimit
		}
		return n, nil
	}
	return 0, errNoLimit
}
