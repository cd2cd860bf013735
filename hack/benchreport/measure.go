package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// outcome is one measured process: its wall time, its CPU time and the peak
// resident memory of its program.
type outcome struct {
	Wall    time.Duration
	CPU     time.Duration
	PeakRSS int64 // bytes
	Stdout  []byte
}

// measure runs a command to completion and keeps its output (the child
// modes print their result on it).
func measure(ctx context.Context, dir string, env []string, name string, args ...string) (outcome, error) {
	return measureTo(ctx, dir, env, false, name, args...)
}

// measureTo is measure; with discard the output goes to /dev/null, so a
// large one costs the parent nothing.
func measureTo(ctx context.Context, dir string, env []string, discard bool, name string, args ...string) (outcome, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if discard {
		null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
		if err != nil {
			return outcome{}, err
		}
		defer null.Close()
		cmd.Stdout = null
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return outcome{}, err
	}
	done := make(chan struct{})
	peak := make(chan int64, 1)
	go func() { peak <- watchPeakRSS(cmd.Process.Pid, done) }()
	err := cmd.Wait()
	wall := time.Since(start)
	close(done)
	hwm := <-peak
	if err != nil {
		return outcome{}, fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, tail(stderr.String(), 2000))
	}
	r := outcome{Wall: wall, Stdout: stdout.Bytes(), PeakRSS: hwm}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.CPU = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return r, nil
}

// watchPeakRSS follows a process's VmHWM (the peak resident set of its
// program, since exec) until done. getrusage's ru_maxrss cannot be used:
// Go starts children with vfork, and Linux then carries the parent's peak
// into the child's.
func watchPeakRSS(pid int, done <-chan struct{}) int64 {
	status := fmt.Sprintf("/proc/%d/status", pid)
	var peak int64
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if data, err := os.ReadFile(status); err == nil {
			for _, line := range strings.Split(string(data), "\n") {
				if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
					if kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64); err == nil {
						peak = max(peak, kb*1024)
					}
				}
			}
		}
		select {
		case <-done:
			return peak
		case <-tick.C:
		}
	}
}

// childSeconds reads the duration a child mode printed on its last line.
func childSeconds(r outcome) (childResult, error) {
	lines := bytes.Split(bytes.TrimSpace(r.Stdout), []byte("\n"))
	var res childResult
	err := json.Unmarshal(lines[len(lines)-1], &res)
	return res, err
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

func median[T int64 | float64 | time.Duration](xs []T) T {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// series collects the runs of one variant.
type series struct {
	wall []time.Duration
	cpu  []time.Duration
	rss  []int64
}

func (s *series) add(r outcome) {
	s.wall = append(s.wall, r.Wall)
	s.cpu = append(s.cpu, r.CPU)
	s.rss = append(s.rss, r.PeakRSS)
}

func (s *series) medianWall() time.Duration { return median(s.wall) }
func (s *series) medianRSS() int64          { return median(s.rss) }
func (s *series) maxRSS() int64             { return slices.Max(s.rss) }
