// Package flux is the Flux Kustomization source: how kustomize-controller
// builds what a Kustomization applies (its path, with targetNamespace,
// namePrefix, nameSuffix, patches, components and post-build substitution,
// https://fluxcd.io/flux/components/kustomize/kustomizations/), and where a
// restart can be written for it: an entry of the Kustomization's own
// spec.patches, in its copy in the repository.
package flux

import (
	"cmp"
	"regexp"
	"slices"
	"strings"

	"github.com/fluxcd/pkg/envsubst"

	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/gitops/index"
	"github.com/kedge-io/kedge/internal/gitops/restart"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/route"
)

// Kustomization is the Flux Kustomization that applies a workload, with
// the fields that change the identity of what it applies.
type Kustomization struct {
	Namespace, Name string
	// Path is its spec.path as written: a directory of its source.
	Path string
	// Dir is the repo-relative directory it builds: Path, or, for an
	// ExternalArtifact, where the artifact's path is in the repository.
	Dir string
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

// Of reads what Flux does to the identities of what k applies; ix (which
// may be nil) maps an ExternalArtifact's paths to the repository.
func Of(ix *index.Index, set *objects.Set, k objects.Kustomization) *Kustomization {
	f := &Kustomization{
		Namespace: k.Namespace, Name: k.Name, Path: route.CleanPath(k.Spec.Path), Dir: SourceOf(ix, set, &k).Path,
		NamePrefix: k.Spec.NamePrefix, NameSuffix: k.Spec.NameSuffix, PostBuild: k.Spec.PostBuild,
	}
	f.AppliedFrom = parentPath(ix, set, &k, 0)
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

// manifestOf finds the repository's copy of the Flux Kustomization f: same
// name, same namespace (or none written, a kustomization setting it), same
// path.
func manifestOf(ix *index.Index, f *Kustomization) *index.FluxManifest {
	if f == nil {
		return nil
	}
	var found *index.FluxManifest
	list := ix.FluxKustomizations()
	for i := range list {
		m := &list[i]
		if m.Name != f.Name || (m.Namespace != "" && m.Namespace != f.Namespace) || m.Spec.Path != f.Path {
			continue
		}
		if f.AppliedFrom != "" && !index.Under(m.File, f.AppliedFrom) {
			continue
		}
		if found != nil {
			return nil // two copies: which one the cluster runs is unknown
		}
		found = m
	}
	return found
}

// Substitution is what Flux's post-build step does to one Kustomization's
// objects: the variables it knows the value of, and those a Secret defines
// whose value kedge does not read.
type Substitution struct {
	vars    map[string]string
	secrets map[string]bool
}

// SubstitutionOf returns the substitution f runs, nil when it runs none:
// substituteFrom in order, later sources overriding earlier ones, then the
// inline substitute map over them all; nothing happens without a variable
// unless the strategy is Always.
func SubstitutionOf(ix *index.Index, f *Kustomization) *Substitution {
	if f == nil || f.PostBuild == nil {
		return nil
	}
	sub := &Substitution{vars: map[string]string{}, secrets: map[string]bool{}}
	for _, ref := range f.PostBuild.SubstituteFrom {
		switch ref.Kind {
		case "ConfigMap":
			data, ok := f.configMaps[ref.Name]
			if !ok {
				data = ix.FluxConfigMap(f.Namespace + "/" + ref.Name)
			}
			for k, v := range data {
				sub.vars[k] = strings.ReplaceAll(v, "\n", "")
				delete(sub.secrets, k)
			}
		case "Secret":
			for _, k := range ix.FluxSecretKeys(f.Namespace + "/" + ref.Name) {
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

// Matches reports whether s, once substituted, can be want. A variable
// without a value reads as empty (kustomize-controller substitutes without
// strict mode); a Secret's variable may be anything.
func (sub *Substitution) Matches(s, want string) bool {
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

// NameOf is the name Flux gives o before substitution: kustomize-controller
// writes its prefix and suffix into the path's kustomization, in place of
// the kustomization's own.
func NameOf(ix *index.Index, o *index.Object, f *Kustomization) string {
	if f == nil || f.NamePrefix == "" && f.NameSuffix == "" {
		return o.Name
	}
	name := o.Name
	if r := ix.RootAt(o.Root); o.Root != "" && r != nil {
		if f.NamePrefix != "" {
			name = strings.TrimPrefix(name, r.NamePrefix())
		}
		if f.NameSuffix != "" {
			name = strings.TrimSuffix(name, r.NameSuffix())
		}
	}
	return f.NamePrefix + name + f.NameSuffix
}

// Renames reports whether Flux may give what f applies other names than
// the path renders.
func Renames(ix *index.Index, f *Kustomization) bool {
	return f != nil && (f.NamePrefix != "" || f.NameSuffix != "" || SubstitutionOf(ix, f) != nil)
}

// Candidates are the objects that may be w when f renames: those that
// become w's name.
func Candidates(ix *index.Index, w drift.Workload, f *Kustomization, inScope func(o *index.Object, paths []string) bool) []int {
	sub := SubstitutionOf(ix, f)
	var out []int
	consider := func(list []int) {
		for _, i := range list {
			o := ix.Object(i)
			if o.Kind != w.Kind || slices.Contains(out, i) {
				continue
			}
			name := NameOf(ix, o, f)
			if o.SubstituteDisabled {
				if name == w.Name {
					out = append(out, i)
				}
			} else if sub.Matches(name, w.Name) {
				out = append(out, i)
			}
		}
	}
	if f.NamePrefix != "" || f.NameSuffix != "" {
		// The path's own prefix gives way to Flux's: any object of the
		// path may be the one. Few Kustomizations rename, so they scan.
		for i := range ix.Len() {
			if inScope(ix.Object(i), []string{f.Directory()}) {
				consider([]int{i})
			}
		}
	} else {
		consider(ix.ByKindName(w.Kind + "/" + w.Name))
	}
	consider(ix.Substituted())
	slices.Sort(out)
	return out
}

// NamespaceOf is the namespace o has once Flux applied it for a workload in
// namespace want: the one written or rendered, or want when Flux's
// substitution turns it into want.
func NamespaceOf(ix *index.Index, o *index.Object, f *Kustomization, want string) string {
	if o.SubstituteDisabled || !strings.Contains(o.Namespace, "$") {
		return o.Namespace
	}
	if sub := SubstitutionOf(ix, f); sub != nil && sub.Matches(o.Namespace, want) {
		return want
	}
	return o.Namespace
}

// Renamer is how f renames what it applies, for the verifier: targetNamespace
// is the Kustomization's, which sets the namespace of everything.
type Renamer struct {
	F               *Kustomization
	TargetNamespace string
}

// RendersAs reports whether f turns o into the workload id, by its name
// prefix, suffix or substitution.
func (r Renamer) RendersAs(ix *index.Index, o *index.Object, id restart.WorkloadID) bool {
	f := r.F
	if o.Kind != id.Kind || !Renames(ix, f) {
		return false
	}
	sub := SubstitutionOf(ix, f)
	if o.SubstituteDisabled {
		sub = nil
	}
	if !sub.Matches(NameOf(ix, o, f), id.Name) {
		return false
	}
	ns := NamespaceOf(ix, o, f, id.Namespace)
	return r.TargetNamespace != "" || ns == id.Namespace || ns == ""
}

// Directory is the repo-relative directory f builds: Dir, or Path when
// nothing mapped it.
func (f *Kustomization) Directory() string { return cmp.Or(f.Dir, f.Path) }
