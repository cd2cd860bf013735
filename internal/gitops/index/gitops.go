package index

import (
	"regexp"
	"slices"

	yaml "go.yaml.in/yaml/v3"

	"github.com/kedge-io/kedge/internal/gitops/document"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/route"
)

// The repository writes GitOps objects of its own: Flux Kustomizations
// (where kedge may patch), the ConfigMaps and Secrets their post-build
// substitution names, and Argo CD Applications. The index reads them as
// documents; what they build is their sources' to say.

// FluxManifest is a Flux Kustomization document of the repository.
type FluxManifest struct {
	File      string // repo-relative
	Document  int
	Namespace string
	Name      string
	Spec      FluxSpec
}

// FluxSpec is the part of a Flux Kustomization's spec that its build reads.
type FluxSpec struct {
	Path            string      `yaml:"path"`
	TargetNamespace string      `yaml:"targetNamespace"`
	NamePrefix      string      `yaml:"namePrefix"`
	NameSuffix      string      `yaml:"nameSuffix"`
	Components      []string    `yaml:"components"`
	Patches         []FluxPatch `yaml:"patches"`
}

// FluxPatch is one entry of a Flux Kustomization's spec.patches.
type FluxPatch struct {
	Patch  string            `yaml:"patch"`
	Target map[string]string `yaml:"target"`
}

// fluxSources are the Flux objects of the repository. Of a Secret only the
// keys are kept: which variables it defines, never a value.
type fluxSources struct {
	kustomizations []FluxManifest
	configMaps     map[string]map[string]string // by "namespace/name"
	secretKeys     map[string][]string
	generators     []ArtifactGenerator
}

func newFluxSources() *fluxSources {
	return &fluxSources{configMaps: map[string]map[string]string{}, secretKeys: map[string][]string{}}
}

// fluxKinds finds a kind the reader keeps, written in YAML or JSON: most
// manifests name Secrets (secretRef) without being one.
var fluxKinds = regexp.MustCompile(`kind"?\s*:\s*["']?(Kustomization|ConfigMap|Secret|ArtifactGenerator)\b`)

// add reads the Flux objects of one file; a file that does not parse is
// the index's to report, not this reader's.
func (s *fluxSources) add(rel string, data []byte) {
	document.EachObject(data, func(index int, n *yaml.Node) { s.addDocument(rel, index, n) })
}

func (s *fluxSources) addDocument(rel string, index int, n *yaml.Node) {
	apiVersion, kind := document.Scalar(n, "apiVersion"), document.Scalar(n, "kind")
	name, ns := document.Scalar(n, "metadata", "name"), document.Scalar(n, "metadata", "namespace")
	switch {
	case document.IsFluxKustomization(apiVersion, kind):
		m := FluxManifest{File: rel, Document: index, Namespace: ns, Name: name}
		if spec := document.Lookup(n, "spec"); spec != nil {
			_ = spec.Decode(&m.Spec)
		}
		m.Spec.Path = route.CleanPath(m.Spec.Path)
		s.kustomizations = append(s.kustomizations, m)
	case isArtifactGenerator(apiVersion, kind):
		s.addGenerator(rel, index, n)
	case apiVersion == "v1" && kind == "ConfigMap":
		s.configMaps[ns+"/"+name] = document.StringMap(n, "data")
	case apiVersion == "v1" && kind == "Secret":
		var keys []string
		for _, field := range []string{"data", "stringData"} {
			if m := document.Lookup(n, field); m != nil && m.Kind == yaml.MappingNode {
				for i := 0; i+1 < len(m.Content); i += 2 {
					keys = append(keys, m.Content[i].Value)
				}
			}
		}
		s.secretKeys[ns+"/"+name] = keys
	}
}

// FluxKustomizations are the Flux Kustomization documents of the
// repository, in file order.
func (ix *Index) FluxKustomizations() []FluxManifest { return ix.flux.kustomizations }

// FluxConfigMap is the data of the repository's ConfigMap
// "namespace/name", nil when it writes none.
func (ix *Index) FluxConfigMap(key string) map[string]string { return ix.flux.configMaps[key] }

// FluxSecretKeys are the keys of the repository's Secret "namespace/name".
func (ix *Index) FluxSecretKeys(key string) []string { return ix.flux.secretKeys[key] }

// ArgoManifest is an Argo CD Application document of the repository.
type ArgoManifest struct {
	File     string // repo-relative
	Document int
	App      objects.Application
}

// argoKind finds files that may hold an Application.
var argoKind = regexp.MustCompile(`kind"?\s*:\s*["']?Application\b`)

// ArgoManifestsIn reads the Application documents of one file.
func ArgoManifestsIn(rel string, data []byte) []ArgoManifest {
	var out []ArgoManifest
	document.EachObject(data, func(index int, n *yaml.Node) {
		var doc map[string]any
		if document.IsApplication(document.Scalar(n, "apiVersion"), document.Scalar(n, "kind")) && n.Decode(&doc) == nil {
			if app, ok := document.Application(doc); ok {
				out = append(out, ArgoManifest{File: rel, Document: index, App: app})
			}
		}
	})
	return out
}

// ArgoManifests are the Application documents of the repository's plain
// files, in file order.
func (ix *Index) ArgoManifests() []ArgoManifest { return ix.argo }

// Applications returns the Argo CD Applications the repository holds, in
// plain files or rendered by its kustomize roots, one per namespace and
// name (the first root in directory order wins).
func (ix *Index) Applications() []objects.Application {
	seen := map[string]bool{}
	var out []objects.Application
	for _, a := range ix.applications {
		key := a.Namespace + "/" + a.Name
		if !seen[key] {
			seen[key] = true
			out = append(out, a)
		}
	}
	return out
}

// WithRepositoryApplications returns the cluster's objects with the
// repository's Applications standing in for the cluster's when it gives
// none (a snapshot without them, or no permission to read them). A cluster
// that has Applications is returned as it is: the repository may hold other
// clusters' Applications too.
func WithRepositoryApplications(set *objects.Set, ix *Index) *objects.Set {
	if ix == nil || len(ix.applications) == 0 || (set != nil && len(set.Applications) > 0) {
		return set
	}
	out := &objects.Set{}
	if set != nil {
		copied := *set
		out = &copied
	}
	out.Applications = ix.Applications()
	return out
}

// NamespacesIn returns the Namespace documents written in a repo-relative
// file; for a kustomization, those of its inline patches.
func (ix *Index) NamespacesIn(file string) ([]Namespace, error) {
	if slices.Contains(KustomizationFileNames, pathBase(file)) {
		return slices.Clone(ix.inlineNamespaces[file]), nil
	}
	data, err := ix.fs.ReadFile(file)
	if err != nil {
		return nil, err
	}
	docs, err := document.Parse(data)
	if err != nil {
		return nil, fileError(file, err)
	}
	var out []Namespace
	for _, d := range docs {
		if document.IsNamespace(d.APIVersion, d.Kind) {
			out = append(out, renderedNamespace(d.Name, d.Labels, "", file))
		}
	}
	return out, nil
}

// FluxManifestsIn reads the Flux Kustomization documents of one file.
func FluxManifestsIn(rel string, data []byte) []FluxManifest {
	s := newFluxSources()
	s.add(rel, data)
	return s.kustomizations
}
