package demodata

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/kedge-io/kedge/internal/testing/meshtest"
)

// repoRoot is where the GitOps checkout is mounted in the in-memory
// filesystem the builds run on.
const repoRoot = "/repo"

// object is one Kubernetes object as a generic map, the shape kustomize
// emits and the shape written to the snapshot.
type object = map[string]any

// fluxKustomization is one Flux Kustomization and what it applied.
type fluxKustomization struct {
	Object object
	Name   string
	Path   string // repo-relative, without "./"
	// Source is the URL of the GitRepository it builds from; "" for the
	// platform repository the bootstrap Kustomization names.
	Source  string
	Applied []object
	// Origins[i] is the repo-relative file Applied[i] was read from.
	Origins []string
}

// renderFlux replays what kustomize-controller does for the cluster: build
// the bootstrap path of the platform repository (demoDir/gitops), then
// every Kustomization found in what was applied, from the repository its
// GitRepository names (teamRepositories), each with Flux's generated
// kustomization.yaml for plain directories and its targetNamespace. Every
// applied object carries Flux's ownership labels.
func renderFlux(demoDir, bootstrapPath string) ([]*fluxKustomization, error) {
	platform, err := loadRepo(filepath.Join(demoDir, platformRepoDir))
	if err != nil {
		return nil, err
	}
	checkouts := map[string]filesys.FileSystem{"": platform}
	sourceURLs := map[string]string{} // GitRepository name -> spec.url
	root := &fluxKustomization{Name: "flux-system", Path: bootstrapPath}
	queue := []*fluxKustomization{root}
	byName := map[string]*fluxKustomization{root.Name: root}
	var done []*fluxKustomization
	for len(queue) > 0 {
		ks := queue[0]
		queue = queue[1:]
		target := ""
		if ks.Object != nil {
			target = nestedString(ks.Object, "spec", "targetNamespace")
			if ks.Source, err = sourceOf(ks.Object, sourceURLs); err != nil {
				return nil, err
			}
		}
		repo, err := checkoutOf(demoDir, ks.Source, checkouts)
		if err != nil {
			return nil, fmt.Errorf("kustomization %s: %w", ks.Name, err)
		}
		objs, origins, err := fluxBuild(repo, ks.Path, target)
		if err != nil {
			return nil, fmt.Errorf("kustomization %s: %w", ks.Name, err)
		}
		for _, o := range objs {
			setLabel(o, meshtest.FluxNameLabel, ks.Name)
			setLabel(o, meshtest.FluxNamespaceLabel, "flux-system")
			if o["kind"] == "GitRepository" && strings.HasPrefix(nestedString(o, "apiVersion"), "source.toolkit.fluxcd.io/") {
				sourceURLs[nestedString(o, "metadata", "name")] = nestedString(o, "spec", "url")
			}
			if o["kind"] != "Kustomization" || !strings.HasPrefix(nestedString(o, "apiVersion"), "kustomize.toolkit.fluxcd.io/") {
				continue
			}
			name := nestedString(o, "metadata", "name")
			if existing, ok := byName[name]; ok {
				existing.Object = o
				continue
			}
			child := &fluxKustomization{
				Object: o,
				Name:   name,
				Path:   strings.TrimPrefix(path.Clean(nestedString(o, "spec", "path")), "./"),
			}
			byName[name] = child
			queue = append(queue, child)
		}
		ks.Applied, ks.Origins = objs, origins
		done = append(done, ks)
	}
	if root.Object == nil {
		return nil, fmt.Errorf("bootstrap path %s does not define Kustomization flux-system", bootstrapPath)
	}
	sort.Slice(done, func(i, j int) bool { return done[i].Name < done[j].Name })
	return done, nil
}

// platformRepoDir holds, below the demo directory, the platform
// repository: the one Flux was bootstrapped from.
const platformRepoDir = "gitops"

// sourceOf is the URL of the GitRepository a Kustomization builds from, ""
// for the bootstrap one (the platform repository).
func sourceOf(ks object, sourceURLs map[string]string) (string, error) {
	name := nestedString(ks, "spec", "sourceRef", "name")
	if name == "flux-system" {
		return "", nil
	}
	url, ok := sourceURLs[name]
	if !ok {
		return "", fmt.Errorf("kustomization %s: no GitRepository %s applied", nestedString(ks, "metadata", "name"), name)
	}
	return url, nil
}

// checkoutOf loads the tree of the repository at url once.
func checkoutOf(demoDir, url string, checkouts map[string]filesys.FileSystem) (filesys.FileSystem, error) {
	if repo, ok := checkouts[url]; ok {
		return repo, nil
	}
	team, ok := teamRepositories[url]
	if !ok {
		return nil, fmt.Errorf("no tree for repository %s", url)
	}
	repo, err := loadRepo(filepath.Join(demoDir, team.Dir))
	if err != nil {
		return nil, err
	}
	checkouts[url] = repo
	return repo, nil
}

// loadRepo copies the checkout into memory: Flux edits kustomization.yaml
// files before building, and the committed tree must stay untouched.
func loadRepo(dir string) (filesys.FileSystem, error) {
	mem := filesys.MakeFsInMemory()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return mem.WriteFile(path.Join(repoRoot, filepath.ToSlash(rel)), data)
	})
	return mem, err
}

// fluxBuild builds one Kustomization path the way kustomize-controller does
// and says which file each object came from.
func fluxBuild(repo filesys.FileSystem, relPath, targetNamespace string) ([]object, []string, error) {
	dir := path.Join(repoRoot, relPath)
	kfile := path.Join(dir, "kustomization.yaml")
	if !repo.Exists(kfile) {
		if err := generateKustomization(repo, dir); err != nil {
			return nil, nil, err
		}
	}
	data, err := repo.ReadFile(kfile)
	if err != nil {
		return nil, nil, err
	}
	var k object
	if err := yaml.Unmarshal(data, &k); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", kfile, err)
	}
	original := data
	if targetNamespace != "" {
		k["namespace"] = targetNamespace
	}
	// Origin annotations are asked for on the in-memory copy only, read
	// back, and removed: Flux does not add them.
	k["buildMetadata"] = []any{types.OriginAnnotations}
	if data, err = yaml.Marshal(k); err != nil {
		return nil, nil, err
	}
	if err := repo.WriteFile(kfile, data); err != nil {
		return nil, nil, err
	}
	opts := krusty.MakeDefaultOptions()
	opts.LoadRestrictions = types.LoadRestrictionsNone
	res, err := krusty.MakeKustomizer(opts).Run(repo, dir)
	if err != nil {
		return nil, nil, err
	}
	if err := repo.WriteFile(kfile, original); err != nil {
		return nil, nil, err
	}
	var out []object
	var origins []string
	for _, r := range res.Resources() {
		origin, err := r.GetOrigin()
		if err != nil {
			return nil, nil, err
		}
		if origin == nil || origin.Path == "" {
			return nil, nil, fmt.Errorf("%s: no origin for %s", relPath, r.CurId())
		}
		if err := r.SetOrigin(nil); err != nil {
			return nil, nil, err
		}
		m, err := r.Map()
		if err != nil {
			return nil, nil, err
		}
		if ann := nestedMap(m, "metadata", "annotations"); len(ann) == 0 {
			delete(nestedMap(m, "metadata"), "annotations")
		}
		out = append(out, m)
		origins = append(origins, path.Clean(path.Join(relPath, origin.Path)))
	}
	return out, origins, nil
}

// generateKustomization writes the kustomization.yaml Flux generates for a
// directory without one: every YAML file below it, and every subdirectory
// that has its own kustomization.yaml as a whole.
func generateKustomization(repo filesys.FileSystem, dir string) error {
	var resources []string
	err := repo.Walk(dir, func(p string, info fs.FileInfo, err error) error {
		if err != nil || p == dir {
			return err
		}
		if info.IsDir() {
			if repo.Exists(path.Join(p, "kustomization.yaml")) {
				resources = append(resources, "."+strings.TrimPrefix(p, dir))
				return filepath.SkipDir
			}
			return nil
		}
		if ext := path.Ext(p); ext == ".yaml" || ext == ".yml" {
			resources = append(resources, "."+strings.TrimPrefix(p, dir))
		}
		return nil
	})
	if err != nil {
		return err
	}
	data, err := yaml.Marshal(object{
		"apiVersion": "kustomize.config.k8s.io/v1beta1",
		"kind":       "Kustomization",
		"resources":  resources,
	})
	if err != nil {
		return err
	}
	return repo.WriteFile(path.Join(dir, "kustomization.yaml"), data)
}

// inventoryID is how Flux names an applied object in a Kustomization's
// status.inventory.
func inventoryID(o object) (id, version string) {
	group, version := "", nestedString(o, "apiVersion")
	if i := strings.LastIndex(version, "/"); i >= 0 {
		group, version = version[:i], version[i+1:]
	}
	return fmt.Sprintf("%s_%s_%s_%s", nestedString(o, "metadata", "namespace"), nestedString(o, "metadata", "name"), group, o["kind"]), version
}

func nestedString(o object, fields ...string) string {
	s, _, _ := unstructured.NestedString(o, fields...)
	return s
}

func nestedMap(o object, fields ...string) map[string]any {
	cur := o
	for _, f := range fields {
		next, ok := cur[f].(map[string]any)
		if !ok {
			next = map[string]any{}
			cur[f] = next
		}
		cur = next
	}
	return cur
}

func setLabel(o object, key, value string) {
	nestedMap(o, "metadata", "labels")[key] = value
}
