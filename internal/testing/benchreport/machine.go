package main

import (
	"bufio"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// machine is what the numbers were measured on. The load average matters:
// on a shared machine every wall time stretches, which is why each figure
// is set against a floor measured in the same run.
type machine struct {
	Cores     int
	MemoryGiB float64
	CPU       string
	Kernel    string
	Go        string
	LoadStart string
	LoadAfter string
}

func readMachine() machine {
	m := machine{Cores: runtime.NumCPU(), Go: runtime.Version(), LoadStart: loadAverage()}
	if kb := procField("/proc/meminfo", "MemTotal"); kb != "" {
		if n, err := strconv.ParseFloat(strings.Fields(kb)[0], 64); err == nil {
			m.MemoryGiB = n / (1 << 20)
		}
	}
	m.CPU = procField("/proc/cpuinfo", "model name")
	if data, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = "Linux " + strings.TrimSpace(string(data))
	}
	return m
}

// procField returns the value of the first "key: value" line of a /proc
// file.
func procField(path, key string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// loadAverage is the 1, 5 and 15 minute load averages.
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " / ")
}

// memAvailable is the memory the kernel could give a new process without
// swapping, in bytes.
func memAvailable() int64 {
	if kb := procField("/proc/meminfo", "MemAvailable"); kb != "" {
		if n, err := strconv.ParseInt(strings.Fields(kb)[0], 10, 64); err == nil {
			return n << 10
		}
	}
	return 0
}
