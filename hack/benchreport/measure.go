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
	"syscall"
	"time"
)

// outcome is one measured process: its wall time, its CPU time and the peak
// resident memory of the process (getrusage of the child).
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
	err := cmd.Run()
	wall := time.Since(start)
	if err != nil {
		return outcome{}, fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, tail(stderr.String(), 2000))
	}
	r := outcome{Wall: wall, Stdout: stdout.Bytes()}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.PeakRSS = ru.Maxrss * 1024 // Linux reports KiB
		r.CPU = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return r, nil
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
