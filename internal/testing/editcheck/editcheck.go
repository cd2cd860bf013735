// Package editcheck holds the promises every kedge patch must keep, written
// independently of the code that makes the patch so that tests of the
// manifest package and of the command can hold any patch to them: every
// changed line is one the restart needs, and rendering the repository after
// applying the patch changes nothing but the restart annotations of the
// intended workloads.
package editcheck

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// Rules name what a patch may add.
type Rules struct {
	// AnnotationKeys are the pod template annotations kedge writes.
	AnnotationKeys []string
	// PatchFiles are the base names the strategic-merge patch file kedge
	// writes in an overlay may have; any line of it is allowed.
	PatchFiles []string
	// PostRendererMarker is the first line of every patch of kedge's
	// post-renderer entry in a Flux HelmRelease: a block of added lines
	// that is such an entry (or the postRenderers: key holding it) is
	// allowed.
	PostRendererMarker string
	// ReleasePatchPrefix starts the base name of kedge's JSON 6902 patch
	// of a HelmRelease in an overlay; any line of it is allowed, and so is
	// its entry, with its target, in the overlay's kustomization.
	ReleasePatchPrefix string
}

var (
	// holderLine is a metadata: or annotations: key, in YAML or JSON: the
	// mappings the restart annotations live in, added when missing or
	// rewritten when written empty or in flow style.
	holderLine = regexp.MustCompile(`^\s*"?(metadata|annotations)"?\s*:`)
	// patchesLine is the patches: key of a kustomization, added when missing
	// or rewritten when written empty or in flow style.
	patchesLine = regexp.MustCompile(`^\s*"?patches"?\s*:`)
)

// PatchLineViolations returns every added or removed line of a unified diff
// that is neither a restart annotation line, nor a metadata:/annotations:
// line the annotation needed, nor a line of kedge's overlay patch file or of
// its entry in the overlay's kustomization, nor a line of a run of added
// lines that is one restart entry of a Flux Kustomization's spec.patches
// (with the patches: key it may need). A removed line also passes when
// a line added in its place is the same line with only a restart annotation
// (or the patch entry) written into it: a flow mapping on one line cannot
// gain an entry otherwise.
func PatchLineViolations(patch string, rules Rules) []string {
	var out []string
	file := ""
	var removed, added []string
	flush := func() {
		if len(removed) == 0 && (isFluxRestartEntry(added, rules.AnnotationKeys) || isValuesChain(added, rules.AnnotationKeys) || isParameterEntries(added, rules.AnnotationKeys)) || rules.releaseBlock(file, added) {
			added = nil
		}
		for _, r := range removed {
			if allowed(file, r, rules) || extendedBy(file, r, added, rules) {
				continue
			}
			out = append(out, fmt.Sprintf("%s: -%s", file, r))
		}
		for _, a := range added {
			if !allowed(file, a, rules) {
				out = append(out, fmt.Sprintf("%s: +%s", file, a))
			}
		}
		removed, added = nil, nil
	}
	inHunk := false
	for n, l := range strings.Split(patch, "\n") {
		switch {
		case strings.HasPrefix(l, "diff --git "):
			flush()
			fields := strings.Fields(l)
			file = strings.TrimPrefix(fields[len(fields)-1], "b/")
			inHunk = false
			continue
		case strings.HasPrefix(l, "@@ "):
			flush()
			inHunk = true
			continue
		case !inHunk, strings.HasPrefix(l, `\`):
			continue
		case l == "", strings.HasPrefix(l, " "):
			flush()
			continue
		}
		text := strings.TrimSuffix(l[1:], "\r")
		switch l[0] {
		case '-':
			if len(added) > 0 {
				flush()
			}
			removed = append(removed, text)
		case '+':
			added = append(added, text)
		default:
			flush()
			out = append(out, fmt.Sprintf("line %d: not a diff line: %q", n+1, l))
		}
	}
	flush()
	return out
}

// extendedBy reports whether one of the added lines is the removed line with
// only a restart annotation or the patch entry inserted: what differs
// between them is, on the removed side, nothing or an empty value, and on
// the added side text naming an annotation key or the patch file.
func extendedBy(file, removed string, added []string, rules Rules) bool {
	for _, a := range added {
		p := 0
		for p < len(removed) && p < len(a) && removed[p] == a[p] {
			p++
		}
		s := 0
		for s < len(removed)-p && s < len(a)-p && removed[len(removed)-1-s] == a[len(a)-1-s] {
			s++
		}
		gone, inserted := strings.TrimSpace(removed[p:len(removed)-s]), a[p:len(a)-s]
		if gone != "" && gone != "{}" && gone != "~" && gone != "null" {
			continue
		}
		for _, name := range rules.PatchFiles {
			if isKustomization(file) && strings.Contains(inserted, name) {
				return true
			}
		}
		for _, k := range rules.AnnotationKeys {
			if strings.Contains(inserted, k) {
				return true
			}
		}
	}
	return false
}

func allowed(file string, text string, rules Rules) bool {
	base := path.Base(file)
	switch {
	case slices.Contains(rules.PatchFiles, base), isAnnotationLine(text, rules.AnnotationKeys), holderLine.MatchString(text):
		return true
	case rules.ReleasePatchPrefix != "" && strings.HasPrefix(base, rules.ReleasePatchPrefix):
		return true
	case isKustomization(file):
		return patchesLine.MatchString(text) || slices.ContainsFunc(rules.PatchFiles, func(name string) bool { return isPatchEntry(text, name) })
	}
	return false
}

// isPatchEntry reports whether a kustomization line lists the patch file.
func isPatchEntry(text, patchFile string) bool {
	entry := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(text), "-"))
	entry = strings.TrimPrefix(entry, "path:")
	entry = strings.Trim(strings.TrimSpace(entry), `"'`)
	return entry == patchFile || entry == "./"+patchFile
}

// isAnnotationLine reports whether a line holds one of the annotation keys
// as a mapping key, in block, flow or JSON style.
func isAnnotationLine(text string, keys []string) bool {
	for _, k := range keys {
		for _, written := range []string{k + ":", `"` + k + `":`, `"` + k + `" :`, `'` + k + `':`} {
			if strings.Contains(text, written) {
				return true
			}
		}
	}
	return false
}

// releaseBlock reports whether a block of added lines is all kedge's for a
// Helm release: its post-renderer entry, the postRenderers: key holding
// only it, or the kustomization entry of its patch file with the target.
func (rules Rules) releaseBlock(file string, added []string) bool {
	if len(added) == 0 || !oneNode(added) {
		return false
	}
	doc, ok := parseBlock(added)
	switch {
	case !ok:
		return false
	case isKustomization(file):
		return rules.ReleasePatchPrefix != "" && isReleasePatchEntry(unwrap(doc, "patches"), rules.ReleasePatchPrefix)
	case rules.PostRendererMarker == "":
		return false
	}
	list, _ := unwrap(doc, "postRenderers").([]any)
	for _, entry := range list {
		if !isRestartEntry(entry, rules.PostRendererMarker) {
			return false
		}
	}
	return len(list) > 0
}

// isRestartEntry reports whether a post-renderer entry holds only patches
// headed by the marker.
func isRestartEntry(entry any, marker string) bool {
	patches := restartPatches(entry)
	for _, p := range patches {
		text, _ := p.(map[string]any)["patch"].(string)
		if !strings.HasPrefix(text, marker+"\n") {
			return false
		}
	}
	return len(patches) > 0
}

// isReleasePatchEntry reports whether a kustomization block is one patches
// item naming a release patch file and a HelmRelease target.
func isReleasePatchEntry(doc any, prefix string) bool {
	list, _ := doc.([]any)
	if len(list) != 1 {
		return false
	}
	m, _ := list[0].(map[string]any)
	p, _ := m["path"].(string)
	t, _ := m["target"].(map[string]any)
	return len(m) == 2 && strings.HasPrefix(path.Base(p), prefix) && t["kind"] == "HelmRelease" && len(t) == 2
}

// isFluxRestartEntry reports whether a run of added lines is one entry of
// a Flux Kustomization's spec.patches, or of an Argo CD source's
// kustomize.patches (under the keys it may add), whose patch sets nothing
// but restart annotations, on the kind and name its target selects.
func isFluxRestartEntry(lines []string, keys []string) bool {
	doc, _ := parseBlock(lines)
	if k, ok := unwrap(doc, "kustomize").(map[string]any); ok {
		doc = k
	}
	list, _ := unwrap(doc, "patches").([]any)
	if len(list) != 1 {
		return false
	}
	item, _ := list[0].(map[string]any)
	target, _ := item["target"].(map[string]any)
	patch, _ := item["patch"].(string)
	if len(item) != 2 || len(target) != 2 || target["kind"] == nil || target["name"] == nil {
		return false
	}
	var body map[string]any
	if yaml.Unmarshal([]byte(patch), &body) != nil {
		return false
	}
	ann, _, _ := unstructured.NestedStringMap(body, templateAnnotations...)
	for k := range ann {
		if !slices.Contains(keys, k) {
			return false
		}
	}
	return len(ann) > 0 && isRestartPatch(body, target["kind"], target["name"], ann)
}

// mappingKeyOnly is a line that opens a mapping: a key and nothing else.
var mappingKeyOnly = regexp.MustCompile(`^(\s*)[^\s#:'"{}\[\]][^:#]*:\s*$`)

// isValuesChain reports whether a block of added lines is a tree of new
// mappings, each key alone on its line with what it holds below it, whose
// leaves are restart annotations only: what setting an annotation under
// chart values that do not exist yet adds (helm:, valuesObject:, a
// component's key, podAnnotations:), for one value or several.
func isValuesChain(added []string, keys []string) bool {
	if len(added) < 2 || !mappingKeyOnly.MatchString(added[0]) {
		return false
	}
	top := indent(added[0])
	for i, l := range added {
		switch {
		case indent(l) < top:
			return false
		case mappingKeyOnly.MatchString(l):
			if i+1 == len(added) || indent(added[i+1]) <= indent(l) {
				return false
			}
		case !isAnnotationLine(l, keys) || indent(l) <= top:
			return false
		}
	}
	return true
}

// isParameterEntries reports whether a block of added lines is Helm
// parameters of an Argo CD source that set restart annotations alone: items
// {name, value, forceString: true} whose name ends in an escaped annotation
// key (--set-string podAnnotations.kedge\.io/restart=...).
func isParameterEntries(added []string, keys []string) bool {
	var items []map[string]any
	if len(added) == 0 || yaml.Unmarshal([]byte(dedent(added)), &items) != nil || len(items) == 0 {
		return false
	}
	for _, it := range items {
		name, _ := it["name"].(string)
		_, hasValue := it["value"].(string)
		endsInKey := slices.ContainsFunc(keys, func(k string) bool { return strings.HasSuffix(name, "."+strings.ReplaceAll(k, ".", `\.`)) })
		if len(it) != 3 || !hasValue || it["forceString"] != true || !endsInKey {
			return false
		}
	}
	return true
}

// parseBlock reads a block of added lines as one YAML document.
func parseBlock(lines []string) (any, bool) {
	var doc any
	return doc, yaml.Unmarshal([]byte(dedent(lines)), &doc) == nil
}

// unwrap is what a mapping holding key alone holds: the key a block may
// add around the entry it carries.
func unwrap(doc any, key string) any {
	if m, ok := doc.(map[string]any); ok && len(m) == 1 {
		if v, ok := m[key]; ok {
			return v
		}
	}
	return doc
}

func isKustomization(file string) bool { return slices.Contains(kustomizationFiles, path.Base(file)) }

func indent(l string) int { return len(l) - len(strings.TrimLeft(l, " ")) }

// oneNode reports whether lines are one YAML node: every line after the
// first is indented further, or is another item of the list the first line
// starts. (A YAML parser may ignore what follows a node less indented.)
func oneNode(lines []string) bool {
	first := lines[0]
	item := strings.HasPrefix(strings.TrimLeft(first, " "), "- ")
	for _, l := range lines[1:] {
		if strings.TrimSpace(l) == "" || indent(l) > indent(first) {
			continue
		}
		if !item || indent(l) != indent(first) || !strings.HasPrefix(strings.TrimLeft(l, " "), "- ") {
			return false
		}
	}
	return true
}

// dedent joins lines with the indentation they share removed.
func dedent(lines []string) string {
	least := -1
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		if n := indent(l); least < 0 || n < least {
			least = n
		}
	}
	var b strings.Builder
	for _, l := range lines {
		if len(l) >= least && least > 0 {
			l = l[least:]
		}
		b.WriteString(l + "\n")
	}
	return b.String()
}
