package chaos

import "os"

// hooksGone tells that the one-shot hooks ran: each deletes itself.
func hooksGone(w *World, _ CycleResult) bool {
	for _, name := range []string{"pre-receive", "update"} {
		if _, err := os.Stat(w.Git.HookPath(RepoName, name)); err == nil {
			return false
		}
	}
	return true
}
