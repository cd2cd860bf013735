package sandbox

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// protocolOutput keeps the worker's standard output for results alone: the
// jobs run libraries that may print, and whatever they print to file
// descriptor 1 goes to standard error instead of into a result.
func protocolOutput() (*os.File, error) {
	fd, err := unix.Dup(1)
	if err != nil {
		return nil, err
	}
	if err := unix.Dup2(2, 1); err != nil {
		return nil, err
	}
	unix.CloseOnExec(fd)
	return os.NewFile(uintptr(fd), "results"), nil
}

// limitAddressSpace lets the worker map memory beyond what it holds now by
// at most budget bytes: a job past it fails to allocate, and the Go
// runtime ends the worker ("out of memory"). The Go runtime reserves some
// address space at start that it never touches, so the limit is measured
// from the worker's own size, not from zero.
func limitAddressSpace(budget int64) error {
	size, err := virtualSize()
	if err != nil {
		return err
	}
	limit := uint64(size + budget)
	return unix.Setrlimit(unix.RLIMIT_AS, &unix.Rlimit{Cur: limit, Max: limit})
}

// virtualSize is the process's mapped address space (VmSize).
func virtualSize() (int64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "VmSize:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmSize in /proc/self/status")
}

// forbidFileWrites makes every write that would grow a file fail: a job
// only reads.
func forbidFileWrites() error {
	if err := unix.Setrlimit(unix.RLIMIT_FSIZE, &unix.Rlimit{Cur: 0, Max: 0}); err != nil {
		return err
	}
	return unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{Cur: 0, Max: 0})
}

// workerCommand starts this executable as a worker; the kernel kills it
// when kedge dies.
func workerCommand() *exec.Cmd {
	cmd := exec.Command("/proc/self/exe")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd
}
