package chaos

import (
	"os"
	"path/filepath"
)

func hookPath(w *World, name string) string {
	return filepath.Join(w.Git.RepoPath(RepoName), "hooks", name)
}

// installHook makes script the repository's hook of that name
// (pre-receive refuses a whole push, update one branch of it).
func installHook(w *World, name, script string) {
	w.T.Helper()
	must(w.T, os.MkdirAll(filepath.Dir(hookPath(w, name)), 0o755))
	must(w.T, os.WriteFile(hookPath(w, name), []byte(script), 0o755))
}

// hooksGone tells that the one-shot hooks ran: each deletes itself.
func hooksGone(w *World, _ CycleResult) bool {
	for _, name := range []string{"pre-receive", "update"} {
		if _, err := os.Stat(hookPath(w, name)); err == nil {
			return false
		}
	}
	return true
}
