package index

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"strings"

	"sigs.k8s.io/kustomize/api/resource"
	"sigs.k8s.io/kustomize/api/types"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/kedge-io/kedge/internal/gitops/document"
	"github.com/kedge-io/kedge/internal/repofs"
	"github.com/kedge-io/kedge/internal/yamlguard"
)

// KustomizationFileNames are the names kustomize recognises, in its order.
var KustomizationFileNames = []string{"kustomization.yaml", "kustomization.yml", "Kustomization"}

// errOutsideRepo is returned for any path that resolves outside the checkout.
var errOutsideRepo = repofs.ErrOutside

// kustomizationFile is what kedge reads from a kustomization before building
// it: enough to refuse remote bases (kustomize would shell out to git) and to
// know which files it reaches even when the build fails.
type kustomizationFile struct {
	dir  string // absolute, symlinks resolved
	name string
	kind string
	// dirRefs are resources, bases and components entries, as written.
	refs []string
	// remote are the URLs its file fields name, which kustomize would
	// download.
	remote []string
	// files are other paths it names (patches, generators' sources are not
	// needed: they are never workloads).
	files []string
	// labels are the values commonLabels and labels entries set, by key.
	labels map[string][]string
	// deprecated are kustomize's warnings about fields it still accepts
	// but will drop.
	deprecated []string
	// inlineNamespaces are the Namespace documents of its inline patches.
	inlineNamespaces []document.Document
	// namePrefix and nameSuffix are its own, which a Flux Kustomization's
	// replace.
	namePrefix, nameSuffix string
}

func readKustomizationFile(fsys *repofs.FS, dir, name string) (*kustomizationFile, error) {
	data, err := readRegular(fsys, filepath.Join(dir, name))
	if err == nil {
		err = yamlguard.Check(data, yamlguard.Repository)
	}
	if yamlguard.IsOverBudget(err) {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if err != nil {
		return nil, err
	}
	var k types.Kustomization
	if err := sigsyaml.Unmarshal(data, &k); err != nil {
		return nil, err
	}
	kf := &kustomizationFile{dir: dir, name: name, kind: k.Kind, labels: map[string][]string{}, deprecated: deprecationsOf(&k),
		namePrefix: k.NamePrefix, nameSuffix: k.NameSuffix}
	for key, v := range k.CommonLabels { //nolint:staticcheck // still applied by kustomize
		kf.labels[key] = append(kf.labels[key], v)
	}
	for _, l := range k.Labels {
		for key, v := range l.Pairs {
			kf.labels[key] = append(kf.labels[key], v)
		}
	}
	kf.remote = remoteFiles(&k)
	kf.refs = append(kf.refs, k.Resources...)
	kf.refs = append(kf.refs, k.Bases...) //nolint:staticcheck // old kustomizations still use bases
	kf.refs = append(kf.refs, k.Components...)
	kf.files = append(kf.files, k.Crds...)
	for _, p := range k.Patches {
		if p.Path != "" {
			kf.files = append(kf.files, p.Path)
		}
	}
	for _, p := range k.PatchesJson6902 { //nolint:staticcheck // still accepted by kustomize
		if p.Path != "" {
			kf.files = append(kf.files, p.Path)
		}
	}
	for _, p := range k.Patches {
		kf.inlineNamespaces = append(kf.inlineNamespaces, namespaceDocuments(p.Patch)...)
	}
	for _, p := range k.PatchesStrategicMerge { //nolint:staticcheck // still accepted by kustomize
		if s := string(p); strings.Contains(s, "\n") {
			kf.inlineNamespaces = append(kf.inlineNamespaces, namespaceDocuments(s)...)
		}
	}
	for _, p := range k.PatchesStrategicMerge { //nolint:staticcheck // still accepted by kustomize
		// An inline patch is YAML text, not a path.
		if s := string(p); !strings.Contains(s, "\n") {
			kf.files = append(kf.files, s)
		}
	}
	return kf, nil
}

// deprecationsOf returns the warnings kustomize prints for k, without the
// "# Warning: " it starts them with.
func deprecationsOf(k *types.Kustomization) []string {
	var out []string
	if warnings := k.CheckDeprecatedFields(); warnings != nil {
		for _, w := range *warnings {
			out = append(out, strings.TrimPrefix(w, "# Warning: "))
		}
	}
	return out
}

var (
	// forcedProtocol is a getter prefix such as git:: (in any case), which
	// kustomize's remote parsing strips before reading the URL.
	forcedProtocol = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*::`)
	// urlScheme is any scheme://.
	urlScheme = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*://`)
	// scpLike is git's user@host:path.
	scpLike = regexp.MustCompile(`^[a-zA-Z0-9._~-]+@[a-zA-Z0-9.-]+:`)
)

// isRemoteRef reports whether a resources, bases or components entry names
// something kustomize would fetch rather than a local path: a forced
// protocol (git::, GIT::), any scheme (https://, ssh://, file://), git's
// SCP form, or a bare github.com host, in any case. It is wider than
// kustomize's own parsing on purpose: an entry it takes as remote is
// reported as such and never built, and the render workers cannot fetch
// whatever slips past it.
func isRemoteRef(ref string) bool {
	r := strings.TrimSpace(ref)
	if forcedProtocol.MatchString(r) || urlScheme.MatchString(r) || scpLike.MatchString(r) {
		return true
	}
	lower := strings.ToLower(r)
	return strings.HasPrefix(lower, "github.com/") || strings.HasPrefix(lower, "github.com:")
}

// isRemoteFile reports whether a file field's entry is a URL: kustomize
// downloads http(s) ones (in any case) instead of reading a file.
func isRemoteFile(entry string) bool {
	return urlScheme.MatchString(strings.TrimSpace(entry)) || forcedProtocol.MatchString(strings.TrimSpace(entry))
}

// remoteFiles are the entries of a kustomization's file fields that name
// URLs: patches, JSON 6902 and strategic-merge patches, CRDs, generator
// sources, transformer, generator and validator configurations, field
// configurations, replacements, the OpenAPI schema and Helm charts' values
// files.
func remoteFiles(k *types.Kustomization) []string {
	var fields []string
	fields = append(fields, k.Crds...)
	fields = append(fields, k.Configurations...)
	fields = append(fields, k.Generators...)
	fields = append(fields, k.Transformers...)
	fields = append(fields, k.Validators...)
	for _, p := range k.Patches {
		fields = append(fields, p.Path)
	}
	for _, p := range k.PatchesJson6902 { //nolint:staticcheck // still accepted by kustomize
		fields = append(fields, p.Path)
	}
	for _, p := range k.PatchesStrategicMerge { //nolint:staticcheck // still accepted by kustomize
		fields = append(fields, string(p))
	}
	for _, r := range k.Replacements {
		fields = append(fields, r.Path)
	}
	fields = append(fields, k.OpenAPI["path"])
	sources := func(s types.KvPairSources) {
		for _, f := range s.FileSources {
			if _, p, ok := strings.Cut(f, "="); ok {
				f = p
			}
			fields = append(fields, f)
		}
		fields = append(fields, s.EnvSources...)
		fields = append(fields, s.EnvSource) //nolint:staticcheck // still accepted by kustomize
	}
	for _, g := range k.ConfigMapGenerator {
		sources(g.KvPairSources)
	}
	for _, g := range k.SecretGenerator {
		sources(g.KvPairSources)
	}
	for _, h := range k.HelmCharts {
		fields = append(fields, h.Repo, h.ValuesFile)
		fields = append(fields, h.AdditionalValuesFiles...)
	}
	var out []string
	for _, f := range fields {
		if f != "" && !strings.Contains(f, "\n") && isRemoteFile(f) {
			out = append(out, f)
		}
	}
	return out
}

// withOriginAnnotations returns the kustomization with buildMetadata
// originAnnotations switched on. The kustomize API has no option for it: the
// kustomize build reads it from the top kustomization file only, and passes
// it down to every base.
func withOriginAnnotations(data []byte) ([]byte, error) {
	node, err := kyaml.Parse(string(data))
	if err != nil {
		return nil, err
	}
	meta := node.Field("buildMetadata")
	if meta != nil && meta.Value != nil {
		for _, v := range meta.Value.YNode().Content {
			if v.Value == types.OriginAnnotations {
				return data, nil
			}
		}
		if err := meta.Value.PipeE(kyaml.Append(kyaml.NewScalarRNode(types.OriginAnnotations).YNode())); err != nil {
			return nil, err
		}
	} else if err := node.PipeE(kyaml.SetField("buildMetadata",
		kyaml.NewListRNode(types.OriginAnnotations))); err != nil {
		return nil, err
	}
	out, err := node.String()
	return []byte(out), err
}

// errNotRegular is returned for a path that is a device, socket or named
// pipe: reading one could block forever or never end.
var errNotRegular = repofs.ErrNotRegular

// readRegular reads a file of the checkout by its absolute path: a regular
// file inside it, within the repository's size budget.
func readRegular(fsys *repofs.FS, p string) ([]byte, error) {
	rel, ok := fsys.Rel(p)
	if !ok {
		return nil, fmt.Errorf("%s: %w", p, errOutsideRepo)
	}
	return fsys.ReadFile(rel)
}

// statIn describes the file at an absolute path of the checkout, symbolic
// links followed inside it.
func statIn(fsys *repofs.FS, p string) (fs.FileInfo, error) {
	rel, ok := fsys.Rel(p)
	if !ok {
		return nil, fmt.Errorf("%s: %w", p, errOutsideRepo)
	}
	return fsys.Stat(rel)
}

// resolveIn resolves the symbolic links of an absolute path of the
// checkout, refusing one that leaves it.
func resolveIn(fsys *repofs.FS, p string) (string, error) {
	rel, ok := fsys.Rel(p)
	if !ok {
		return "", fmt.Errorf("%s: %w", p, errOutsideRepo)
	}
	r, err := fsys.Resolve(rel)
	if err != nil {
		return "", err
	}
	return fsys.Abs(r), nil
}

// originAnnotation is where kustomize's buildMetadata originAnnotations
// writes the file an object comes from.
const originAnnotation = "config.kubernetes.io/origin"

// originOf reads an object's origin annotation; nil without one.
func originOf(annotations map[string]string) (*resource.Origin, error) {
	text, ok := annotations[originAnnotation]
	if !ok {
		return nil, nil
	}
	var o resource.Origin
	if err := sigsyaml.Unmarshal([]byte(text), &o); err != nil {
		return nil, err
	}
	return &o, nil
}

// namespaceDocuments are the Namespace documents of an inline patch; a
// patch kedge cannot parse has none it could name.
func namespaceDocuments(patch string) []document.Document {
	if patch == "" {
		return nil
	}
	docs, err := document.Parse([]byte(patch))
	if err != nil {
		return nil
	}
	var out []document.Document
	for _, d := range docs {
		if document.IsNamespace(d.APIVersion, d.Kind) {
			out = append(out, d)
		}
	}
	return out
}
