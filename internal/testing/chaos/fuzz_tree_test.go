package chaos

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kedge-io/kedge/internal/assemble"
	"github.com/kedge-io/kedge/internal/cluster/snapshot"
	"github.com/kedge-io/kedge/internal/config"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/plan"
	"github.com/kedge-io/kedge/internal/sandbox"
)

// A fuzzed repository is a text archive: "-- PATH --" starts a file whose
// content follows, "-- PATH -> TARGET --" is a symbolic link and
// "-- PATH |fifo --" a named pipe. In contents and link targets, CANARY
// stands for the canary's host:port, SECRET for the absolute path of the
// secret key beside the repository and SECRETDIR for its directory. The
// tree is written through an os.Root of the repository, so no entry, link
// or path of the archive can make the harness write outside it.
const (
	fuzzMaxEntries = 40
	fuzzMaxBytes   = 256 << 10
)

type fuzzEntry struct {
	path, target string
	fifo         bool
	content      []byte
}

// decodeTree reads the archive; entries past the bounds are dropped.
func decodeTree(data []byte) []fuzzEntry {
	var out []fuzzEntry
	var cur *fuzzEntry
	total := 0
	for _, line := range bytes.SplitAfter(data, []byte("\n")) {
		header := strings.TrimRight(string(line), "\r\n")
		if name, ok := strings.CutPrefix(header, "-- "); ok && strings.HasSuffix(name, " --") {
			if len(out) == fuzzMaxEntries {
				break
			}
			name = strings.TrimSuffix(name, " --")
			e := fuzzEntry{path: name}
			if p, target, ok := strings.Cut(name, " -> "); ok {
				e.path, e.target = p, target
			} else if p, ok := strings.CutSuffix(name, " |fifo"); ok {
				e.path, e.fifo = p, true
			}
			out = append(out, e)
			cur = &out[len(out)-1]
			continue
		}
		if cur == nil || total+len(line) > fuzzMaxBytes {
			continue
		}
		cur.content = append(cur.content, line...)
		total += len(line)
	}
	return out
}

// writeTree writes the entries into repo, through an os.Root of it.
func writeTree(repo string, entries []fuzzEntry, expand func(string) string) error {
	if err := os.MkdirAll(repo, 0o755); err != nil {
		return err
	}
	root, err := os.OpenRoot(repo)
	if err != nil {
		return err
	}
	defer root.Close()
	for _, e := range entries {
		p := filepath.Clean(filepath.FromSlash(e.path))
		if !filepath.IsLocal(p) {
			continue
		}
		// Entries that cannot be made (a parent is a file or a link out
		// of the repository) are left out: the archive is arbitrary.
		if dir := filepath.Dir(p); dir != "." && root.MkdirAll(dir, 0o755) != nil {
			continue
		}
		// A later entry replaces an earlier one of the same path.
		if info, err := root.Lstat(p); err == nil && !info.IsDir() {
			_ = root.Remove(p)
		}
		switch {
		case e.target != "":
			_ = root.Symlink(expand(e.target), p)
		case e.fifo:
			if f, err := root.Open(filepath.Dir(p)); err == nil {
				_ = unix.Mkfifoat(int(f.Fd()), filepath.Base(p), 0o644)
				f.Close()
			}
		default:
			_ = root.WriteFile(p, []byte(expand(string(e.content))), 0o644)
		}
	}
	return nil
}

// secretWatch reports every time a process opens or reads the secret
// file: a read refused by the confinement never opens it.
type secretWatch struct{ fd int }

func watchSecret(path string) (*secretWatch, error) {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil, err
	}
	if _, err := unix.InotifyAddWatch(fd, path, unix.IN_OPEN|unix.IN_ACCESS); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return &secretWatch{fd: fd}, nil
}

// opened drains the events so far and tells whether there were any.
func (s *secretWatch) opened() bool {
	buf := make([]byte, 4096)
	seen := false
	for {
		n, err := unix.Read(s.fd, buf)
		if n > 0 {
			seen = true
		}
		if err != nil || n <= 0 {
			if err != nil && !errors.Is(err, syscall.EAGAIN) {
				return true
			}
			return seen
		}
	}
}

func (s *secretWatch) close() { unix.Close(s.fd) }

// fuzzWorld is what every run of the fuzz target shares in one process.
type fuzzWorld struct {
	set    *objects.Set
	cfg    *config.Config
	canary *canary
}

var (
	fuzzWorldOnce sync.Once
	fuzzShared    fuzzWorld
	fuzzErr       error
)

// FuzzHostileTree plans the demo cluster (its Flux Kustomizations and its
// Argo CD Application of charts/notifications, helm.prefer values) against
// a repository decoded from the input: kustomizations, charts, values,
// links anywhere (to the secret key beside the repository too), named
// pipes, URLs at a canary. Whatever the tree, indexing and locating never
// panic and finish; no process opens the secret key (watched with
// inotify, render workers included) and no part of it appears in the plan,
// its problems, edits or refusals; and nothing reaches the canary. The
// seeds (testdata/fuzz/FuzzHostileTree) are probes of the hostile corpus
// as small trees, laid over the demo's paths: the chart of the
// orders-notifications Application, the teams' Flux Kustomizations.
func FuzzHostileTree(f *testing.F) {
	fuzzWorldOnce.Do(func() {
		fuzzShared.set, fuzzErr = snapshot.Read(DemoCluster)
		if fuzzErr != nil {
			return
		}
		fuzzShared.cfg, fuzzErr = repoConfig()
		if fuzzErr == nil {
			fuzzShared.cfg.Helm.Prefer = config.HelmPreferValues
		}
	})
	if fuzzErr != nil {
		f.Fatal(fuzzErr)
	}
	// Bombs are the fuzzer's to find, not to wait for: a render stopped
	// at 2 s is as much a refusal as one stopped at 20 s. The tests that
	// run after it in this process get the default pool back.
	saved := sandbox.Default().Limits()
	sandbox.SetDefault(sandbox.Limits{Timeout: 2 * time.Second, Memory: 256 << 20, Workers: 2})
	f.Cleanup(func() { sandbox.SetDefault(saved) })
	w := fuzzShared
	w.canary = newCanary(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		world := t.TempDir()
		key := newKeySecret(t, filepath.Join(world, "secret", "app.pem"))
		watch, err := watchSecret(key.Path)
		if err != nil {
			t.Fatal(err)
		}
		defer watch.close()
		repo := filepath.Join(world, "repo")
		expand := strings.NewReplacer("CANARY", w.canary.Addr(), "SECRETDIR", filepath.Dir(key.Path), "SECRET", key.Path).Replace
		if err := writeTree(repo, decodeTree(data), expand); err != nil {
			t.Fatal(err)
		}

		type outcome struct {
			res *plan.Result
			err error
		}
		done := make(chan outcome, 1)
		go func() {
			res, err := plan.Build(w.set, assemble.PlanOptions(w.cfg, repo))
			done <- outcome{res, err}
		}()
		var out outcome
		select {
		case out = <-done:
		case <-time.After(time.Minute):
			t.Fatal("planning did not finish within a minute")
		}
		if out.err != nil {
			// A plan fails as a whole only for a checkout it cannot open.
			t.Fatalf("the plan failed: %v", out.err)
		}
		shown, err := json.Marshal(struct {
			Plan     any
			Problems any
			Edits    any
			Refused  any
		}{out.res.Plan, out.res.Index.Problems, out.res.Edits.All(), out.res.Edits.Refused})
		if err != nil {
			t.Fatal(err)
		}
		if key.leakIn(shown) {
			t.Fatalf("the plan shows part of the secret key: %s", shown)
		}
		if watch.opened() {
			t.Fatal("a process opened the secret key")
		}
		if reached := w.canary.Reached(); reached != "" {
			t.Fatalf("a request left for the canary: %s", reached)
		}
	})
}

// TestDecodeTreeStaysInside: whatever the archive says, the tree is
// written inside the repository: a link to a directory outside followed
// by a file through it writes nothing outside.
func TestDecodeTreeStaysInside(t *testing.T) {
	world := t.TempDir()
	outside := filepath.Join(world, "outside")
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	archive := fmt.Sprintf("-- a -> %s --\n-- a/dropped --\nx\n-- ../escaped --\nx\n-- /abs --\nx\n-- ok/file --\nkept\n-- p |fifo --\n", outside)
	repo := filepath.Join(world, "repo")
	if err := writeTree(repo, decodeTree([]byte(archive)), func(s string) string { return s }); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("written outside: %v", entries)
	}
	if _, err := os.Stat(filepath.Join(world, "escaped")); err == nil {
		t.Error("../escaped was written")
	}
	if data, err := os.ReadFile(filepath.Join(repo, "ok", "file")); err != nil || string(data) != "kept\n" {
		t.Errorf("ok/file: %q, %v", data, err)
	}
	if info, err := os.Lstat(filepath.Join(repo, "p")); err != nil || info.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("p is not a named pipe: %v", err)
	}
}

// TestSecretWatchSeesARead: the fuzz target's watch sees a read of the
// secret by another process, and nothing when the file is only looked at.
func TestSecretWatchSeesARead(t *testing.T) {
	key := newKeySecret(t, filepath.Join(t.TempDir(), "secret", "app.pem"))
	watch, err := watchSecret(key.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer watch.close()
	if _, err := os.Lstat(key.Path); err != nil {
		t.Fatal(err)
	}
	if watch.opened() {
		t.Fatal("a stat is not a read")
	}
	if err := exec.Command("/bin/cat", key.Path).Run(); err != nil {
		t.Fatal(err)
	}
	if !watch.opened() {
		t.Fatal("the read of another process was not seen")
	}
}
