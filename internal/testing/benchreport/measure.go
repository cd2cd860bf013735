package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync/atomic"
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
	// Stopped is set when the process was killed for going over its
	// memory cap; Wall is then how long it ran.
	Stopped bool
}

// measure runs a command to completion and keeps its output (the child
// modes print their result on it).
func measure(ctx context.Context, dir string, env []string, name string, args ...string) (outcome, error) {
	return measureTo(ctx, dir, env, false, name, args...)
}

// measureTo is measure; with discard the output goes to /dev/null, so a
// large one costs the parent nothing.
func measureTo(ctx context.Context, dir string, env []string, discard bool, name string, args ...string) (outcome, error) {
	return measureCapped(ctx, dir, env, discard, 0, name, args...)
}

// measureCapped is measureTo for a process that is killed once its
// resident set passes limit bytes (0: no limit): a floor that would take
// more memory than the machine has is reported as stopped, not run into
// the kernel's OOM killer on a shared machine.
func measureCapped(ctx context.Context, dir string, env []string, discard bool, limit int64, name string, args ...string) (outcome, error) {
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
	var stopped atomic.Bool
	go func() {
		peak <- watchPeakRSS(cmd.Process.Pid, done, limit, func() {
			stopped.Store(true)
			_ = cmd.Process.Kill()
		})
	}()
	err := cmd.Wait()
	wall := time.Since(start)
	close(done)
	hwm := <-peak
	if stopped.Load() {
		return outcome{Wall: wall, PeakRSS: hwm, Stopped: true}, nil
	}
	if err != nil {
		return outcome{}, fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, tail(stderr.String(), 2000))
	}
	r := outcome{Wall: wall, Stdout: stdout.Bytes(), PeakRSS: hwm}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.CPU = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return r, nil
}

// watchPeakRSS follows a process's peak resident set until done: its
// VmHWM (the peak of its program, since exec) or, when higher, the resident
// set of it and its render workers together, sampled, as a pod's memory
// limit counts them. It calls over once when the peak passes limit (0:
// never). getrusage's ru_maxrss cannot be used: Go starts children with
// vfork, and Linux then carries the parent's peak into the child's.
func watchPeakRSS(pid int, done <-chan struct{}, limit int64, over func()) int64 {
	var peak int64
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		peak = max(peak, readStatus(pid, "VmHWM:"), treeRSS(pid))
		if limit > 0 && peak > limit {
			over()
			limit = 0
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
	wall    []time.Duration
	cpu     []time.Duration
	rss     []int64
	stopped []bool
}

func (s *series) add(r outcome) {
	s.wall = append(s.wall, r.Wall)
	s.cpu = append(s.cpu, r.CPU)
	s.rss = append(s.rss, r.PeakRSS)
	s.stopped = append(s.stopped, r.Stopped)
}

func (s *series) medianCPU() time.Duration { return median(s.cpu) }

func (s *series) medianWall() time.Duration { return median(s.wall) }
func (s *series) medianRSS() int64          { return median(s.rss) }
func (s *series) maxRSS() int64 {
	if len(s.rss) == 0 {
		return 0
	}
	return slices.Max(s.rss)
}
