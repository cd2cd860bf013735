package gitopstest

import (
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/gitops/index"
)

// WorkloadsOf are the indexed objects as drifted workloads, each once.
// CommitsPerRepo is how many random commits each repository takes.
const CommitsPerRepo = 12

func WorkloadsOf(objs []index.Object) []drift.Workload {
	seen := map[string]bool{}
	var out []drift.Workload
	for _, o := range objs {
		w := Drifted(o.Namespace, o.Kind, o.Name, Istio125)
		w.APIVersion = o.APIVersion
		if key := fmt.Sprint(w.Namespace, w.Kind, w.Name); !seen[key] {
			seen[key] = true
			out = append(out, w)
		}
	}
	return out
}

// Commit is one random change to a checkout.
type Commit struct {
	What    string
	Changed []string
}

// mutation changes the checkout and returns the repo-relative paths it
// changed, or nil when the checkout has nothing it applies to.
type mutation struct {
	name  string
	apply func(m *mutator) []string
}

var mutations = []mutation{
	{"edit annotation", (*mutator).editAnnotation},
	{"rename workload", (*mutator).renameWorkload},
	{"move workload to another namespace", (*mutator).changeNamespace},
	{"append comment", (*mutator).appendComment},
	{"delete file", (*mutator).deleteFile},
	{"rename file", (*mutator).renameFile},
	{"add plain file", (*mutator).addPlainFile},
	{"add kustomize root", (*mutator).addRoot},
	{"remove kustomize root", (*mutator).removeRoot},
	{"add kustomization entry", (*mutator).addEntry},
	{"remove kustomization entry", (*mutator).removeEntry},
}

func RandomCommit(t *testing.T, rng *rand.Rand, dir string, step int) Commit {
	t.Helper()
	m := &mutator{t: t, rng: rng, dir: dir, step: step}
	var c Commit
	// One to three changes, like most commits to a GitOps repository.
	for range 1 + rng.IntN(3) {
		for {
			mu := mutations[rng.IntN(len(mutations))]
			if changed := mu.apply(m); changed != nil {
				c.What = strings.TrimPrefix(c.What+", "+mu.name, ", ")
				c.Changed = append(c.Changed, changed...)
				break
			}
		}
	}
	return c
}

// mutator changes files of a checkout the way commits do.
type mutator struct {
	t    *testing.T
	rng  *rand.Rand
	dir  string
	step int
	n    int
}

// files lists the checkout's regular files, repo-relative, matching keep.
func (m *mutator) files(keep func(rel string, data []byte) bool) []string {
	var out []string
	err := filepath.WalkDir(m.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != m.dir && strings.HasPrefix(d.Name(), ".") {
			return fs.SkipDir
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel := filepath.ToSlash(strings.TrimPrefix(p, m.dir+string(filepath.Separator)))
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if keep(rel, data) {
			out = append(out, rel)
		}
		return nil
	})
	require.NoError(m.t, err)
	return out
}

func (m *mutator) pick(keep func(rel string, data []byte) bool) (string, bool) {
	files := m.files(keep)
	if len(files) == 0 {
		return "", false
	}
	return files[m.rng.IntN(len(files))], true
}

func (m *mutator) read(rel string) string {
	data, err := os.ReadFile(filepath.Join(m.dir, rel))
	require.NoError(m.t, err)
	return string(data)
}

func (m *mutator) write(rel, content string) {
	p := filepath.Join(m.dir, filepath.FromSlash(rel))
	require.NoError(m.t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(m.t, os.WriteFile(p, []byte(content), 0o644))
}

func (m *mutator) unique() string {
	m.n++
	return fmt.Sprintf("s%d-%d", m.step, m.n)
}

var (
	workloadKind  = regexp.MustCompile(`(?m)^kind: (Deployment|StatefulSet|DaemonSet|Rollout)\s*$`)
	metadataName  = regexp.MustCompile(`(?m)^metadata:\n((?:  .*\n)*?)  name: (\S+)`)
	metadataNS    = regexp.MustCompile(`(?m)^(  namespace: )(\S+)`)
	templateMeta  = regexp.MustCompile(`(?m)^  template:\n    metadata:\n`)
	resourcesList = regexp.MustCompile(`(?m)^resources:\n((?:- .*\n|  - .*\n)*)`)
)

func isYAMLFile(rel string) bool {
	return strings.HasSuffix(rel, ".yaml") || strings.HasSuffix(rel, ".yml")
}

func isKustomization(rel string) bool {
	return slices.Contains(index.KustomizationFileNames, path.Base(rel))
}

func (m *mutator) workloadFile() (string, bool) {
	return m.pick(func(rel string, data []byte) bool {
		return isYAMLFile(rel) && !isKustomization(rel) && workloadKind.Match(data)
	})
}

func (m *mutator) editAnnotation() []string {
	rel, ok := m.pick(func(rel string, data []byte) bool { return templateMeta.Match(data) })
	if !ok {
		return nil
	}
	ann := fmt.Sprintf("    metadata:\n      annotations:\n        example.com/Commit: %q\n", m.unique())
	content := templateMeta.ReplaceAllString(m.read(rel), "  template:\n"+ann)
	m.write(rel, content)
	return []string{rel}
}

func (m *mutator) renameWorkload() []string {
	rel, ok := m.workloadFile()
	if !ok {
		return nil
	}
	content := m.read(rel)
	loc := metadataName.FindStringSubmatchIndex(content)
	if loc == nil {
		return nil
	}
	m.write(rel, content[:loc[5]]+"-"+m.unique()+content[loc[5]:])
	return []string{rel}
}

func (m *mutator) changeNamespace() []string {
	rel, ok := m.pick(func(rel string, data []byte) bool { return isYAMLFile(rel) && metadataNS.Match(data) })
	if !ok {
		return nil
	}
	content := m.read(rel)
	loc := metadataNS.FindStringSubmatchIndex(content)
	m.write(rel, content[:loc[5]]+"-"+m.unique()+content[loc[5]:])
	return []string{rel}
}

func (m *mutator) appendComment() []string {
	rel, ok := m.pick(func(rel string, _ []byte) bool { return isYAMLFile(rel) || isKustomization(rel) })
	if !ok {
		return nil
	}
	m.write(rel, m.read(rel)+"# "+m.unique()+"\n")
	return []string{rel}
}

func (m *mutator) deleteFile() []string {
	rel, ok := m.pick(func(string, []byte) bool { return true })
	if !ok {
		return nil
	}
	require.NoError(m.t, os.Remove(filepath.Join(m.dir, rel)))
	return []string{rel}
}

// renameFile moves a file within its directory, or into a new one.
func (m *mutator) renameFile() []string {
	rel, ok := m.pick(func(rel string, _ []byte) bool { return isYAMLFile(rel) && !isKustomization(rel) })
	if !ok {
		return nil
	}
	to := path.Join(path.Dir(rel), m.unique()+path.Ext(rel))
	if m.rng.IntN(2) == 0 {
		to = path.Join(path.Dir(rel), m.unique(), path.Base(rel))
	}
	content := m.read(rel)
	require.NoError(m.t, os.Remove(filepath.Join(m.dir, rel)))
	m.write(to, content)
	return []string{rel, to}
}

// addPlainFile copies a workload under a new name, beside its original or
// at the top of the repository.
func (m *mutator) addPlainFile() []string {
	rel, ok := m.workloadFile()
	if !ok {
		return nil
	}
	name := m.unique()
	content := metadataName.ReplaceAllString(m.read(rel), "metadata:\n${1}  name: "+name)
	to := path.Join(path.Dir(rel), name+".yaml")
	if m.rng.IntN(2) == 0 {
		to = name + ".yaml"
	}
	m.write(to, content)
	return []string{to}
}

// addRoot writes a new overlay: a kustomization with a workload of its
// own and, sometimes, an existing root as its base.
func (m *mutator) addRoot() []string {
	dir := path.Join("overlays", m.unique())
	name := m.unique()
	workload := fmt.Sprintf("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: %s\nspec:\n  template:\n    spec:\n      containers:\n        - name: app\n          image: example.com/app:1\n", name)
	resources := "  - deployment.yaml\n"
	if base, ok := m.pick(func(rel string, _ []byte) bool { return isKustomization(rel) }); ok && m.rng.IntN(2) == 0 {
		resources += "  - ../../" + path.Dir(base) + "\n"
	}
	m.write(path.Join(dir, "deployment.yaml"), workload)
	m.write(path.Join(dir, "kustomization.yaml"), "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: "+name+"\nresources:\n"+resources)
	return []string{path.Join(dir, "deployment.yaml"), path.Join(dir, "kustomization.yaml")}
}

func (m *mutator) removeRoot() []string {
	rel, ok := m.pick(func(rel string, _ []byte) bool { return isKustomization(rel) })
	if !ok {
		return nil
	}
	require.NoError(m.t, os.Remove(filepath.Join(m.dir, rel)))
	return []string{rel}
}

// addEntry lists a new workload file in a kustomization's resources.
func (m *mutator) addEntry() []string {
	rel, ok := m.pick(func(rel string, data []byte) bool { return isKustomization(rel) && resourcesList.Match(data) })
	if !ok {
		return nil
	}
	src, ok := m.workloadFile()
	if !ok {
		return nil
	}
	name := m.unique()
	file := path.Join(path.Dir(rel), name+".yaml")
	m.write(file, metadataName.ReplaceAllString(m.read(src), "metadata:\n${1}  name: "+name))
	content := resourcesList.ReplaceAllString(m.read(rel), "resources:\n${1}- "+name+".yaml\n")
	m.write(rel, content)
	return []string{rel, file}
}

// removeEntry drops the first entry of a kustomization's resources.
func (m *mutator) removeEntry() []string {
	rel, ok := m.pick(func(rel string, data []byte) bool {
		if !isKustomization(rel) {
			return false
		}
		sub := resourcesList.FindSubmatch(data)
		return sub != nil && len(sub[1]) > 0
	})
	if !ok {
		return nil
	}
	content := m.read(rel)
	loc := resourcesList.FindStringSubmatchIndex(content)
	entries := content[loc[2]:loc[3]]
	first := entries[:strings.Index(entries, "\n")+1]
	m.write(rel, content[:loc[2]]+strings.TrimPrefix(entries, first)+content[loc[3]:])
	return []string{rel}
}
