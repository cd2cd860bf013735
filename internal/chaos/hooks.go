package chaos

import "os"

// hooksGone tells that the one-shot hooks ran, in every repository: each
// deletes itself.
func hooksGone(w *World, _ CycleResult) bool {
	for _, repo := range Repos {
		for _, name := range []string{"pre-receive", "update"} {
			if _, err := os.Stat(w.Git.HookPath(gitName(repo), name)); err == nil {
				return false
			}
		}
	}
	return true
}
