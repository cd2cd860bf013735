package chaos

import (
	"os"
	"path/filepath"
)

func hookPath(w *World) string {
	return filepath.Join(w.Git.RepoPath(RepoName), "hooks", "pre-receive")
}

// installHook makes script the repository's pre-receive hook.
func installHook(w *World, script string) {
	w.T.Helper()
	must(w.T, os.MkdirAll(filepath.Dir(hookPath(w)), 0o755))
	must(w.T, os.WriteFile(hookPath(w), []byte(script), 0o755))
}

func hookInstalled(w *World) bool {
	_, err := os.Stat(hookPath(w))
	return err == nil
}
