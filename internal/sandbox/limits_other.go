//go:build !linux

package sandbox

import (
	"os"
	"os/exec"
)

// Outside Linux the worker runs without an address-space limit and with
// standard output as it is: its time is still bounded by the pool, and it
// still reaches no network.

func protocolOutput() (*os.File, error) { return os.Stdout, nil }

func limitAddressSpace(int64) error { return nil }

func forbidFileWrites() error { return nil }

func workerCommand() *exec.Cmd {
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	return exec.Command(exe)
}
