package manifest

import (
	"regexp"
	"slices"
	"strings"

	"github.com/fluxcd/pkg/envsubst"
	yaml "go.yaml.in/yaml/v3"

	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/objects"
)

// fluxSubstituteKey, set to "disabled" as a label or annotation, keeps
// kustomize-controller from substituting variables in an object.
const fluxSubstituteKey = "kustomize.toolkit.fluxcd.io/substitute"

// FluxKustomization is the Flux Kustomization that applies a workload, with
// the fields that change the identity of what it applies
// (https://fluxcd.io/flux/components/kustomize/kustomizations/).
type FluxKustomization struct {
	Namespace, Name string
	// Path is the repo-relative directory it applies.
	Path string
	// NamePrefix and NameSuffix replace those of the path's kustomization.
	NamePrefix, NameSuffix string
	// PostBuild is spec.postBuild: variables substituted after the build.
	PostBuild *objects.PostBuild
	// AppliedFrom is the path of the Flux Kustomization that applies this
	// one (its tracking labels name it), when the cluster runs it: its
	// manifest is written below that path. Several clusters of one
	// repository often write Kustomizations of the same name.
	AppliedFrom string
	// configMaps are the cluster's ConfigMaps of the Kustomization's
	// namespace, by name, for substituteFrom.
	configMaps map[string]map[string]string
}

// fluxHint reads what Flux does to the identities of what k applies; nil
// when it does nothing beyond targetNamespace, which Hints carry already.
func fluxHint(set *objects.Set, k objects.Kustomization) *FluxKustomization {
	f := &FluxKustomization{
		Namespace: k.Namespace, Name: k.Name, Path: cleanRepoPath(k.Spec.Path),
		NamePrefix: k.Spec.NamePrefix, NameSuffix: k.Spec.NameSuffix, PostBuild: k.Spec.PostBuild,
	}
	if parent := k.Labels[fluxKustomizeNameLabel]; parent != "" {
		for _, p := range set.Kustomizations {
			if p.Name == parent && p.Namespace == k.Labels[fluxKustomizeNamespaceLabel] {
				f.AppliedFrom = cleanRepoPath(p.Spec.Path)
			}
		}
	}
	if f.PostBuild != nil {
		for _, ref := range f.PostBuild.SubstituteFrom {
			if ref.Kind != "ConfigMap" {
				continue
			}
			for _, cm := range set.ConfigMaps {
				if cm.Namespace == k.Namespace && cm.Name == ref.Name {
					if f.configMaps == nil {
						f.configMaps = map[string]map[string]string{}
					}
					f.configMaps[cm.Name] = cm.Data
				}
			}
		}
	}
	return f
}

// fluxSources are the Flux objects the repository writes: the
// Kustomizations (where kedge may patch), and the ConfigMaps and Secrets
// that postBuild.substituteFrom names. Of a Secret only the keys are kept.
type fluxSources struct {
	kustomizations []fluxManifest
	configMaps     map[string]map[string]string // by "namespace/name"
	secretKeys     map[string][]string
}

// fluxManifest is a Flux Kustomization document of the repository.
type fluxManifest struct {
	File      string // repo-relative
	Document  int
	Namespace string
	Name      string
	Spec      fluxSpec
}

// fluxSpec is the part of a Flux Kustomization's spec that its build reads.
type fluxSpec struct {
	Path            string      `yaml:"path"`
	TargetNamespace string      `yaml:"targetNamespace"`
	NamePrefix      string      `yaml:"namePrefix"`
	NameSuffix      string      `yaml:"nameSuffix"`
	Components      []string    `yaml:"components"`
	Patches         []fluxPatch `yaml:"patches"`
}

type fluxPatch struct {
	Patch  string            `yaml:"patch"`
	Target map[string]string `yaml:"target"`
}

// fluxKinds finds a kind the reader keeps, written in YAML or JSON: most
// manifests name Secrets (secretRef) without being one.
var fluxKinds = regexp.MustCompile(`kind"?\s*:\s*["']?(Kustomization|ConfigMap|Secret)\b`)

func mayHoldFluxSources(data []byte) bool { return fluxKinds.Match(data) }

// add reads the Flux objects of one file; a file that does not parse is
// the index's to report, not this reader's.
func (s *fluxSources) add(rel string, data []byte) {
	eachObjectNode(data, func(index int, n *yaml.Node) { s.addDocument(rel, index, n) })
}

func (s *fluxSources) addDocument(rel string, index int, n *yaml.Node) {
	apiVersion, kind := scalarAt(n, "apiVersion"), scalarAt(n, "kind")
	name, ns := scalarAt(n, "metadata", "name"), scalarAt(n, "metadata", "namespace")
	switch {
	case apiGroup(apiVersion) == "kustomize.toolkit.fluxcd.io" && kind == "Kustomization":
		m := fluxManifest{File: rel, Document: index, Namespace: ns, Name: name}
		if spec := lookup(n, "spec"); spec != nil {
			_ = spec.Decode(&m.Spec)
		}
		m.Spec.Path = cleanRepoPath(m.Spec.Path)
		s.kustomizations = append(s.kustomizations, m)
	case apiVersion == "v1" && kind == "ConfigMap":
		s.configMaps[ns+"/"+name] = stringMapAt(n, "data")
	case apiVersion == "v1" && kind == "Secret":
		// Only which variables a Secret defines is read, never a value.
		var keys []string
		for _, field := range []string{"data", "stringData"} {
			if m := lookup(n, field); m != nil && m.Kind == yaml.MappingNode {
				for i := 0; i+1 < len(m.Content); i += 2 {
					keys = append(keys, m.Content[i].Value)
				}
			}
		}
		s.secretKeys[ns+"/"+name] = keys
	}
}

// manifestOf finds the repository's copy of the Flux Kustomization f: same
// name, same namespace (or none written, a kustomization setting it), same
// path.
func (s *fluxSources) manifestOf(f *FluxKustomization) *fluxManifest {
	if s == nil || f == nil {
		return nil
	}
	var found *fluxManifest
	for i := range s.kustomizations {
		m := &s.kustomizations[i]
		if m.Name != f.Name || (m.Namespace != "" && m.Namespace != f.Namespace) || m.Spec.Path != f.Path {
			continue
		}
		if f.AppliedFrom != "" && !under(m.File, f.AppliedFrom) {
			continue
		}
		if found != nil {
			return nil // two copies: which one the cluster runs is unknown
		}
		found = m
	}
	return found
}

// substitution is what Flux's post-build step does to one Kustomization's
// objects: the variables it knows the value of, and those a Secret defines
// whose value kedge does not read.
type substitution struct {
	vars    map[string]string
	secrets map[string]bool
}

// substitutionFor returns the substitution f runs, nil when it runs none:
// substituteFrom in order, later sources overriding earlier ones, then the
// inline substitute map over them all; nothing happens without a variable
// unless the strategy is Always.
func (ix *Index) substitutionFor(f *FluxKustomization) *substitution {
	if f == nil || f.PostBuild == nil {
		return nil
	}
	sub := &substitution{vars: map[string]string{}, secrets: map[string]bool{}}
	for _, ref := range f.PostBuild.SubstituteFrom {
		switch ref.Kind {
		case "ConfigMap":
			data, ok := f.configMaps[ref.Name]
			if !ok && ix.flux != nil {
				data = ix.flux.configMaps[f.Namespace+"/"+ref.Name]
			}
			for k, v := range data {
				sub.vars[k] = strings.ReplaceAll(v, "\n", "")
				delete(sub.secrets, k)
			}
		case "Secret":
			if ix.flux == nil {
				continue
			}
			for _, k := range ix.flux.secretKeys[f.Namespace+"/"+ref.Name] {
				sub.secrets[k] = true
				delete(sub.vars, k)
			}
		}
	}
	for k, v := range f.PostBuild.Substitute {
		sub.vars[k] = strings.ReplaceAll(v, "\n", "")
		delete(sub.secrets, k)
	}
	if len(sub.vars) == 0 && len(sub.secrets) == 0 && f.PostBuild.SubstituteStrategy != "Always" {
		return nil
	}
	return sub
}

// secretMark stands for a Secret's value while a string is substituted:
// bytes no name holds and no case change alters.
const secretMark = "\x00\x01\x00"

// matches reports whether s, once substituted, can be want. A variable
// without a value reads as empty (kustomize-controller substitutes without
// strict mode); a Secret's variable may be anything.
func (sub *substitution) matches(s, want string) bool {
	if sub == nil || !strings.Contains(s, "$") {
		return s == want
	}
	out, err := envsubst.Eval(s, func(name string) (string, bool) {
		if sub.secrets[name] {
			return secretMark, true
		}
		return sub.vars[name], true
	})
	if err != nil {
		return false
	}
	if !strings.Contains(out, "\x00") {
		return out == want
	}
	parts := strings.Split(out, secretMark)
	for i, p := range parts {
		if strings.Contains(p, "\x00") {
			return false // a function cut a Secret's value apart
		}
		parts[i] = regexp.QuoteMeta(p)
	}
	re, err := regexp.Compile("^" + strings.Join(parts, ".+") + "$")
	return err == nil && re.MatchString(want)
}

// fluxName is the name Flux gives o before substitution: kustomize-controller
// writes its prefix and suffix into the path's kustomization, in place of
// the kustomization's own.
func (ix *Index) fluxName(o *Object, f *FluxKustomization) string {
	if f == nil || f.NamePrefix == "" && f.NameSuffix == "" {
		return o.Name
	}
	name := o.Name
	if r := ix.roots[o.Root]; o.Root != "" && r != nil {
		if f.NamePrefix != "" {
			name = strings.TrimPrefix(name, r.namePrefix)
		}
		if f.NameSuffix != "" {
			name = strings.TrimSuffix(name, r.nameSuffix)
		}
	}
	return f.NamePrefix + name + f.NameSuffix
}

// patchTargetName is the name a patch of the path's kustomization selects
// o by: kustomize applies patches before the kustomization's own prefix and
// suffix.
func (ix *Index) patchTargetName(o *Object) string {
	if r := ix.roots[o.Root]; o.Root != "" && r != nil {
		return strings.TrimSuffix(strings.TrimPrefix(o.Name, r.namePrefix), r.nameSuffix)
	}
	return o.Name
}

// fluxRenames reports whether Flux may give what f applies other names
// than the path renders.
func (ix *Index) fluxRenames(f *FluxKustomization) bool {
	return f != nil && (f.NamePrefix != "" || f.NameSuffix != "" || ix.substitutionFor(f) != nil)
}

// candidates are the objects that may be w: those rendered under its kind
// and name, and, when the Flux Kustomization applying it renames, those
// that become that name.
func (ix *Index) candidates(w drift.Workload, hints Hints) []int {
	f := hints.Flux
	if !ix.fluxRenames(f) {
		if ix.argoRenames(hints) {
			return ix.argoCandidates(w, hints)
		}
		return ix.byKindName[w.Kind+"/"+w.Name]
	}
	sub := ix.substitutionFor(f)
	var out []int
	consider := func(list []int) {
		for _, i := range list {
			o := &ix.objects[i]
			if o.Kind != w.Kind || slices.Contains(out, i) {
				continue
			}
			name := ix.fluxName(o, f)
			if o.SubstituteDisabled {
				if name == w.Name {
					out = append(out, i)
				}
			} else if sub.matches(name, w.Name) {
				out = append(out, i)
			}
		}
	}
	if f.NamePrefix != "" || f.NameSuffix != "" {
		// The path's own prefix gives way to Flux's: any object of the
		// path may be the one. Few Kustomizations rename, so they scan.
		for i := range ix.objects {
			if ix.inScope(&ix.objects[i], []string{f.Path}) {
				consider([]int{i})
			}
		}
	} else {
		consider(ix.byKindName[w.Kind+"/"+w.Name])
	}
	consider(ix.substituted)
	slices.Sort(out)
	return out
}

// namespaceFor is the namespace o has once Flux applied it for w: the one
// written or rendered, or w's when Flux's substitution turns it into w's.
func (ix *Index) namespaceFor(o *Object, w drift.Workload, hints Hints) string {
	if ns, ok := ix.argoNamespaceFor(o, hints); ok {
		return ns
	}
	if o.SubstituteDisabled || !strings.Contains(o.Namespace, "$") {
		return o.Namespace
	}
	if sub := ix.substitutionFor(hints.Flux); sub != nil && sub.matches(o.Namespace, w.Namespace) {
		return w.Namespace
	}
	return o.Namespace
}

// substituteDisabled reports whether an object's labels or annotations opt
// it out of Flux's substitution.
func substituteDisabled(labels, annotations map[string]string) bool {
	return labels[fluxSubstituteKey] == "disabled" || annotations[fluxSubstituteKey] == "disabled"
}

// fluxSite is a Flux Kustomization of the repository that gets kedge's
// restart patch for one workload: the path it applies deploys the workload's
// document there and nowhere else as that workload.
type fluxSite struct {
	manifest *fluxManifest
	// rendered is the workload's identity in the path's build with the
	// Kustomization's fields, before substitution.
	rendered WorkloadID
	// target is the name the patch selects: the document's, as the path's
	// kustomization sees it before its own prefix and Flux's.
	target string
}

// fluxPatchSite returns where a patch in the Flux Kustomization applying w
// restarts w alone, or nil: its copy in the repository must be unique, and
// the path must render w's document once, as w.
func (ix *Index) fluxPatchSite(w drift.Workload, hints Hints, src Source) *fluxSite {
	m := ix.flux.manifestOf(hints.Flux)
	if m == nil {
		return nil
	}
	var renders []*Object
	for _, i := range ix.byPath[src.Path] {
		if o := &ix.objects[i]; o.Source == src && ix.applies(m.Spec.Path, o) {
			renders = append(renders, o)
		}
	}
	if len(renders) != 1 {
		return nil
	}
	o := renders[0]
	ns := o.Namespace
	if t := m.Spec.TargetNamespace; t != "" {
		ns = t
	}
	site := &fluxSite{manifest: m, target: ix.patchTargetName(o), rendered: WorkloadID{Namespace: ns, Kind: o.Kind, Name: ix.fluxName(o, hints.Flux)}}
	sub := ix.substitutionFor(hints.Flux)
	if o.SubstituteDisabled {
		sub = nil
	}
	if !sub.matches(site.rendered.Name, w.Name) || !sub.matches(ns, w.Namespace) {
		return nil
	}
	return site
}

// fluxRendersAs reports whether the Flux Kustomization the intended
// workload was located through turns o into that workload, by its name
// prefix, suffix or substitution.
func (ix *Index) fluxRendersAs(o *Object, in intent) bool {
	f := in.hints.Flux
	if o.Kind != in.id.Kind || !ix.fluxRenames(f) {
		return false
	}
	sub := ix.substitutionFor(f)
	if o.SubstituteDisabled {
		sub = nil
	}
	if !sub.matches(ix.fluxName(o, f), in.id.Name) {
		return false
	}
	w := drift.Workload{Namespace: in.id.Namespace, Kind: in.id.Kind, Name: in.id.Name}
	ns := ix.namespaceFor(o, w, in.hints)
	return in.hints.TargetNamespace != "" || ns == w.Namespace || ns == ""
}
