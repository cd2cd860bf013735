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
	"strings"
)

// Rules name what a patch may add.
type Rules struct {
	// AnnotationKeys are the pod template annotations kedge writes.
	AnnotationKeys []string
	// PatchFile is the base name of the strategic-merge patch file kedge
	// writes in an overlay; any line of it is allowed.
	PatchFile string
}

var kustomizationNames = map[string]bool{"kustomization.yaml": true, "kustomization.yml": true, "Kustomization": true}

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
// its entry in the overlay's kustomization.
func PatchLineViolations(patch string, rules Rules) []string {
	var out []string
	file := ""
	inHunk := false
	for n, l := range strings.Split(patch, "\n") {
		switch {
		case strings.HasPrefix(l, "diff --git "):
			fields := strings.Fields(l)
			file = strings.TrimPrefix(fields[len(fields)-1], "b/")
			inHunk = false
			continue
		case strings.HasPrefix(l, "@@ "):
			inHunk = true
			continue
		case !inHunk, l == "", strings.HasPrefix(l, `\`), strings.HasPrefix(l, " "):
			continue
		}
		if l[0] != '+' && l[0] != '-' {
			out = append(out, fmt.Sprintf("line %d: not a diff line: %q", n+1, l))
			continue
		}
		if !allowed(file, strings.TrimSuffix(l[1:], "\r"), rules) {
			out = append(out, fmt.Sprintf("%s: %c%s", file, l[0], l[1:]))
		}
	}
	return out
}

func allowed(file string, text string, rules Rules) bool {
	base := path.Base(file)
	switch {
	case base == rules.PatchFile, isAnnotationLine(text, rules.AnnotationKeys), holderLine.MatchString(text):
		return true
	case kustomizationNames[base]:
		return patchesLine.MatchString(text) || isPatchEntry(text, rules.PatchFile)
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
