package index

import (
	"path"
	"slices"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/kedge-io/kedge/internal/gitops/document"
)

// Flux 2.7's source-watcher composes ExternalArtifacts out of other sources
// with ArtifactGenerators written in the repository
// (https://fluxcd.io/flux/components/source/artifactgenerators/): a
// Kustomization whose sourceRef is such an artifact builds a path of the
// artifact, whose files the generator's copy operations take from the
// repository. The index keeps the generators; internal/gitops/flux maps an
// artifact's paths back to the repository.

// ArtifactGenerator is an ArtifactGenerator document of the repository.
type ArtifactGenerator struct {
	File      string // repo-relative
	Document  int
	Namespace string
	Name      string
	Spec      ArtifactGeneratorSpec
}

// ArtifactGeneratorSpec is what a generator says about its artifacts.
type ArtifactGeneratorSpec struct {
	Sources     []ArtifactSource `yaml:"sources"`
	Artifacts   []Artifact       `yaml:"artifacts"`
	PathPattern string           `yaml:"pathPattern"`
}

// ArtifactSource is one input of a generator, named by its alias.
type ArtifactSource struct {
	Alias     string `yaml:"alias"`
	Kind      string `yaml:"kind"`
	Name      string `yaml:"name"`
	Namespace string `yaml:"namespace"`
}

// Artifact is one ExternalArtifact a generator produces.
type Artifact struct {
	Name string         `yaml:"name"`
	Copy []ArtifactCopy `yaml:"copy"`
}

// ArtifactCopy is one copy operation: from "@alias/pattern" to
// "@artifact/path".
type ArtifactCopy struct {
	From     string   `yaml:"from"`
	To       string   `yaml:"to"`
	Exclude  []string `yaml:"exclude"`
	Strategy string   `yaml:"strategy"`
}

// isArtifactGenerator reports whether a document is a source-watcher
// ArtifactGenerator.
func isArtifactGenerator(apiVersion, kind string) bool {
	return kind == "ArtifactGenerator" && document.Group(apiVersion) == "source.extensions.fluxcd.io"
}

func (s *fluxSources) addGenerator(rel string, index int, n *yaml.Node) {
	g := ArtifactGenerator{File: rel, Document: index, Namespace: document.Scalar(n, "metadata", "namespace"), Name: document.Scalar(n, "metadata", "name")}
	if spec := document.Lookup(n, "spec"); spec != nil {
		_ = spec.Decode(&g.Spec)
	}
	s.generators = append(s.generators, g)
}

// ArtifactGenerators are the ArtifactGenerator documents of the repository,
// in file order.
func (ix *Index) ArtifactGenerators() []ArtifactGenerator { return ix.flux.generators }

// FilesUnder lists the repo-relative manifest and kustomization files the
// index walked below dir ("." for all), sorted.
func (ix *Index) FilesUnder(dir string) []string {
	var out []string
	if ix.cache == nil || ix.cache.scan == nil {
		return nil
	}
	for _, f := range ix.cache.scan.yamlFiles {
		if rel := ix.rel(f); Under(rel, dir) {
			out = append(out, rel)
		}
	}
	for d, name := range ix.cache.scan.kustomizations {
		if rel := path.Join(ix.rel(d), name); Under(rel, dir) {
			out = append(out, rel)
		}
	}
	slices.SortFunc(out, strings.Compare)
	return out
}
