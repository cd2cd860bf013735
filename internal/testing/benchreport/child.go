package main

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/kedge-io/kedge/internal/gitops/index"
	"github.com/kedge-io/kedge/internal/memlimit"
)

// childResult is what a child run prints on its last line.
type childResult struct {
	Seconds float64 `json:"seconds"`
	Objects int     `json:"objects"`
}

// runChild is the benchreport binary re-executed to measure one step in
// a process of its own, so its peak memory is the step's alone:
//
//	generic DIR decodes a snapshot's JSON into any, on one core (the floor of `kedge plan`)
//	index DIR   indexes a GitOps checkout
func runChild(mode, dir string) error {
	// The same memory limit as kedge's, so that the floors compare.
	memlimit.Apply()
	start := time.Now()
	var n int
	switch mode {
	case "generic":
		objects, err := decodeGeneric(dir)
		if err != nil {
			return err
		}
		n = objects
	case "index":
		ix, err := index.Read(dir, index.Options{})
		if err != nil {
			return err
		}
		n = len(ix.Objects())
	default:
		return fmt.Errorf("unknown child mode %q", mode)
	}
	return json.NewEncoder(os.Stdout).Encode(childResult{Seconds: time.Since(start).Seconds(), Objects: n})
}
