package flux

import (
	"cmp"
	"fmt"
	"path"
	"strings"

	"github.com/kedge-io/kedge/internal/gitops/index"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/route"
)

// A Kustomization's sourceRef may name what is not a Git repository: an
// OCIRepository or a Bucket holds an artifact pushed by a pipeline, which
// no pull request changes; an ExternalArtifact is produced by a Flux 2.7
// ArtifactGenerator (source-watcher,
// https://fluxcd.io/flux/components/source/artifactgenerators/), whose copy
// operations take its files from other sources. When those operations copy
// one Git repository's directories and files in the repository's own layout
// (`@repo/apps/base/**` to `@artifact/base/`, `@repo/apps/staging/**` to
// `@artifact/staging/`), a path of the artifact is a directory of the
// repository (apps/staging) and builds as it does there, so kedge edits it
// there. An operation that reshapes the files (another layout for some of
// them, excludes, a Merge or Extract strategy, a pathPattern) makes an
// artifact kedge does not map, and says so.

// Source is where a Flux Kustomization's path is in Git.
type Source struct {
	// Path is the repo-relative directory the Kustomization builds.
	Path string
	// GitRepository is the source the path is read from.
	GitRepository objects.CrossObjectRef
	// Via says how, for messages: empty for a GitRepository source,
	// the artifact and its generator for an ExternalArtifact.
	Via string
	// NoRepo, when set, says why the path is in no Git repository kedge
	// can write to (an OCIRepository, a Bucket, an artifact kedge does
	// not map).
	NoRepo string
}

// SourceOf reads where the cluster's Kustomization k takes its path from,
// with the repository's ArtifactGenerators for an ExternalArtifact; ix may
// be nil (no ArtifactGenerator is then known).
func SourceOf(ix *index.Index, set *objects.Set, k *objects.Kustomization) Source {
	return sourceOf(ix, set, k, 0)
}

// maxParents bounds the chain of Kustomizations applying Kustomizations
// that tracking labels may name: a cycle among them is a broken snapshot.
const maxParents = 16

func sourceOf(ix *index.Index, set *objects.Set, k *objects.Kustomization, depth int) Source {
	ref := k.Spec.SourceRef
	ns := ref.Namespace
	if ns == "" {
		ns = k.Namespace
	}
	named := fmt.Sprintf("%s %s/%s", ref.Kind, ns, ref.Name)
	via := route.KustomizationVia(k)
	p := route.CleanPath(k.Spec.Path)
	switch ref.Kind {
	case "", "GitRepository":
		return Source{Path: p, GitRepository: objects.CrossObjectRef{Kind: "GitRepository", Name: ref.Name, Namespace: ns}}
	case "OCIRepository", "Bucket":
		return Source{Path: p, NoRepo: fmt.Sprintf("%s applies it from %s, an artifact a pull request cannot change", via, named)}
	case "ExternalArtifact":
		src, err := artifactSource(ix, set, k, ns, ref.Name, p, depth)
		if err != nil {
			return Source{Path: p, NoRepo: fmt.Sprintf("%s applies it from %s: %v", via, named, err)}
		}
		return src
	}
	return Source{Path: p, NoRepo: fmt.Sprintf("%s applies it from %s, a source kind kedge does not read", via, named)}
}

// artifactSource maps the path p of the ExternalArtifact namespace/name,
// which k applies, back to the repository.
func artifactSource(ix *index.Index, set *objects.Set, k *objects.Kustomization, namespace, name, p string, depth int) (Source, error) {
	if ix == nil {
		return Source{}, fmt.Errorf("no ArtifactGenerator of the repository produces it")
	}
	gen, art, err := generatorOf(ix, parentPath(ix, set, k, depth), namespace, name)
	if err != nil {
		return Source{}, err
	}
	where := fmt.Sprintf("ArtifactGenerator %s/%s (%s)", namespace, gen.Name, gen.File)
	if gen.Spec.PathPattern != "" {
		return Source{}, fmt.Errorf("%s discovers its artifacts with pathPattern, which kedge does not map to the repository", where)
	}
	base, git, covered, err := layoutOf(ix, gen, art, p)
	if err != nil {
		return Source{}, fmt.Errorf("%s: %v", where, err)
	}
	if !covered {
		return Source{}, fmt.Errorf("%s copies nothing to %s of artifact %s", where, p, name)
	}
	git.Namespace = cmp.Or(git.Namespace, namespace)
	return Source{
		Path:          route.CleanPath(path.Join(base, p)),
		GitRepository: git,
		Via:           fmt.Sprintf("through ExternalArtifact %s/%s of %s", namespace, name, where),
	}, nil
}

// generatorOf finds the one ArtifactGenerator of the repository producing
// the artifact namespace/name: of that namespace (or none written, a
// kustomization setting it), and, when several clusters of the repository
// write one, the one below the path of the Kustomization applying k.
func generatorOf(ix *index.Index, parent, namespace, name string) (*index.ArtifactGenerator, *index.Artifact, error) {
	type found struct {
		gen *index.ArtifactGenerator
		art *index.Artifact
	}
	var all []found
	list := ix.ArtifactGenerators()
	for i := range list {
		g := &list[i]
		if g.Namespace != "" && g.Namespace != namespace {
			continue
		}
		for j := range g.Spec.Artifacts {
			if g.Spec.Artifacts[j].Name == name {
				all = append(all, found{g, &g.Spec.Artifacts[j]})
			}
		}
	}
	if len(all) > 1 {
		if parent != "" {
			var under []found
			for _, f := range all {
				if index.Under(f.gen.File, parent) {
					under = append(under, f)
				}
			}
			all = under
		}
	}
	switch len(all) {
	case 0:
		return nil, nil, fmt.Errorf("no ArtifactGenerator of the repository produces it")
	case 1:
		return all[0].gen, all[0].art, nil
	}
	files := make([]string, len(all))
	for i, f := range all {
		files[i] = f.gen.File
	}
	return nil, nil, fmt.Errorf("several ArtifactGenerators of the repository produce it (%s) and none is told apart", strings.Join(files, ", "))
}

// parentPath is the repository path of the Kustomization that applies k,
// read from k's tracking labels; "" when they name none of set.
func parentPath(ix *index.Index, set *objects.Set, k *objects.Kustomization, depth int) string {
	name := k.Labels[route.FluxKustomizeNameLabel]
	if set == nil || name == "" || depth >= maxParents {
		return ""
	}
	for i := range set.Kustomizations {
		p := &set.Kustomizations[i]
		if p.Name == name && p.Namespace == k.Labels[route.FluxKustomizeNamespaceLabel] {
			return sourceOf(ix, set, p, depth+1).Path
		}
	}
	return ""
}

// layoutOf reads the artifact's copy operations: each must copy from one
// GitRepository source of the generator, with neither excludes nor a
// strategy other than Overwrite, to the path it has in the repository
// below one common directory, base. covered reports whether the artifact
// holds p.
func layoutOf(ix *index.Index, gen *index.ArtifactGenerator, art *index.Artifact, p string) (base string, git objects.CrossObjectRef, covered bool, err error) {
	baseSet := false
	for i, op := range art.Copy {
		alias, from, ok := strings.Cut(strings.TrimPrefix(op.From, "@"), "/")
		if !strings.HasPrefix(op.From, "@") || !ok && alias == "" {
			return "", git, false, fmt.Errorf("copy %d: %q names no source", i, op.From)
		}
		src := sourceByAlias(gen, alias)
		switch {
		case src == nil:
			return "", git, false, fmt.Errorf("copy %d: no source has the alias %s", i, alias)
		case src.Kind != "GitRepository":
			return "", git, false, fmt.Errorf("copy %d takes files from %s %s, not from a Git repository", i, src.Kind, src.Name)
		case git.Name != "" && (git.Name != src.Name || git.Namespace != src.Namespace):
			return "", git, false, fmt.Errorf("its copies take files from two Git repositories (%s, %s)", git.Name, src.Name)
		case len(op.Exclude) > 0:
			return "", git, false, fmt.Errorf("copy %d excludes files, so the artifact is not the repository's directory", i)
		case op.Strategy != "" && op.Strategy != "Overwrite":
			return "", git, false, fmt.Errorf("copy %d uses the %s strategy, so the artifact's files are not the repository's", i, op.Strategy)
		}
		git = objects.CrossObjectRef{Kind: "GitRepository", Name: src.Name, Namespace: src.Namespace}
		to, okTo := strings.CutPrefix(op.To, "@artifact")
		if !okTo || to != "" && !strings.HasPrefix(to, "/") {
			return "", git, false, fmt.Errorf("copy %d: %q is not in @artifact", i, op.To)
		}
		pairs, err := copyPairs(ix, from, strings.TrimPrefix(to, "/"))
		if err != nil {
			return "", git, false, fmt.Errorf("copy %d: %v", i, err)
		}
		for _, pr := range pairs {
			b, ok := prefixOf(pr.repo, pr.art)
			if !ok || baseSet && b != base {
				return "", git, false, fmt.Errorf("copy %d puts %s at %s of the artifact, out of the repository's layout", i, pr.repo, cmp.Or(pr.art, "its top"))
			}
			base, baseSet = b, true
			if pr.dir && index.Under(cmp.Or(p, "."), cmp.Or(pr.art, ".")) || pr.art == p {
				covered = true
			}
		}
	}
	return base, git, covered, nil
}

// copyPair is one path of the artifact and the repository path it is
// copied from; dir when a whole directory is.
type copyPair struct {
	art, repo string
	dir       bool
}

// copyPairs reads one copy operation the way source-watcher copies, like
// cp: "dir/**" copies the directory's contents into the destination,
// "dir/" (or a directory named without the slash) the directory itself
// into it, a glob the files it matches, a file itself; a destination
// without a trailing slash names the copied file.
func copyPairs(ix *index.Index, from, to string) ([]copyPair, error) {
	intoDir := to == "" || strings.HasSuffix(to, "/")
	to = strings.TrimSuffix(to, "/")
	if dir, ok := strings.CutSuffix(from, "/**"); ok && !strings.ContainsAny(dir, "*?[") {
		return []copyPair{{art: to, repo: path.Clean(cmp.Or(dir, ".")), dir: true}}, nil
	}
	if strings.ContainsAny(from, "*?[") {
		var out []copyPair
		for _, f := range ix.FilesUnder(".") {
			if ok, _ := path.Match(from, f); ok {
				out = append(out, copyPair{art: path.Join(to, path.Base(f)), repo: f})
			}
		}
		if !intoDir && len(out) > 1 {
			return nil, fmt.Errorf("%s matches several files for one destination", from)
		}
		return out, nil
	}
	src := path.Clean(cmp.Or(strings.TrimSuffix(from, "/"), "."))
	if ix.FS().IsDir(src) {
		if src == "." {
			return []copyPair{{art: to, repo: ".", dir: true}}, nil
		}
		return []copyPair{{art: path.Join(to, path.Base(src)), repo: src, dir: true}}, nil
	}
	if intoDir {
		return []copyPair{{art: path.Join(to, path.Base(src)), repo: src}}, nil
	}
	return []copyPair{{art: to, repo: src}}, nil
}

// prefixOf returns the directory base with repo = base/art.
func prefixOf(repo, art string) (string, bool) {
	repo, art = path.Clean(repo), path.Clean(cmp.Or(art, "."))
	switch {
	case art == ".":
		return repo, true
	case repo == art:
		return ".", true
	case strings.HasSuffix(repo, "/"+art):
		return strings.TrimSuffix(repo, "/"+art), true
	}
	return "", false
}

func sourceByAlias(gen *index.ArtifactGenerator, alias string) *index.ArtifactSource {
	for i := range gen.Spec.Sources {
		if gen.Spec.Sources[i].Alias == alias {
			s := gen.Spec.Sources[i]
			if s.Namespace == "" {
				s.Namespace = gen.Namespace
			}
			return &s
		}
	}
	return nil
}
