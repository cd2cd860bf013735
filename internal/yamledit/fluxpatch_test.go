package yamledit

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSetFluxKustomizationPatch(t *testing.T) {
	entry := PatchEntry{Patch: "kind: Deployment\nmetadata:\n  name: web\n", Kind: "Deployment", Name: "web"}
	owns := func(patch string, target map[string]string) bool {
		return target["name"] == "web" && strings.Contains(patch, "kind: Deployment")
	}
	head := "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: web\nspec:\n  path: ./apps/web\n"
	tests := []struct {
		name, src, want string
		doc             int
		code            RefusalCode
	}{
		{
			name: "patches added at the end of spec",
			src:  head + "status: {}\n",
			want: head + "  patches:\n  - patch: |\n      kind: Deployment\n      metadata:\n        name: web\n    target:\n      kind: Deployment\n      name: web\nstatus: {}\n",
		},
		{
			name: "appended after the items, written like them",
			src:  head + "  patches:\n      - patch: |\n          - op: remove\n            path: /spec/replicas\n        target:\n          kind: Deployment\n  # trailing comment\n",
			want: head + "  patches:\n      - patch: |\n          - op: remove\n            path: /spec/replicas\n        target:\n          kind: Deployment\n" +
				"      - patch: |\n          kind: Deployment\n          metadata:\n            name: web\n        target:\n          kind: Deployment\n          name: web\n  # trailing comment\n",
		},
		{
			name: "the owned item is rewritten in place",
			src:  head + "  patches:\n  - patch: |\n      kind: Deployment\n      metadata:\n        name: old\n    target:\n      kind: Deployment\n      name: web\n  wait: true\n",
			want: head + "  patches:\n  - patch: |\n      kind: Deployment\n      metadata:\n        name: web\n    target:\n      kind: Deployment\n      name: web\n  wait: true\n",
		},
		{
			name: "already there: nothing changes",
			src:  head + "  patches:\n  - patch: |\n      kind: Deployment\n      metadata:\n        name: web\n    target:\n      kind: Deployment\n      name: web\n",
			want: head + "  patches:\n  - patch: |\n      kind: Deployment\n      metadata:\n        name: web\n    target:\n      kind: Deployment\n      name: web\n",
		},
		{
			name: "line breaks follow the file",
			src:  strings.ReplaceAll(head, "\n", "\r\n"),
			want: strings.ReplaceAll(head+"  patches:\n  - patch: |\n      kind: Deployment\n      metadata:\n        name: web\n    target:\n      kind: Deployment\n      name: web\n", "\n", "\r\n"),
		},
		{
			name: "second document",
			src:  "kind: Other\n---\n" + head,
			doc:  1,
			want: "kind: Other\n---\n" + head + "  patches:\n  - patch: |\n      kind: Deployment\n      metadata:\n        name: web\n    target:\n      kind: Deployment\n      name: web\n",
		},
		{
			name: "objects count as Target.Document counts them",
			src:  "---\n---\nkind: List\nitems: [{kind: A}, {kind: B}]\n---\n" + head,
			doc:  2,
			want: "---\n---\nkind: List\nitems: [{kind: A}, {kind: B}]\n---\n" + head + "  patches:\n  - patch: |\n      kind: Deployment\n      metadata:\n        name: web\n    target:\n      kind: Deployment\n      name: web\n",
		},
		{name: "not a Kustomization", src: "kind: Other\n---\n" + head, doc: 0, code: CodeNotFound},
		{name: "flow list", src: head + "  patches: []\n", code: CodeUnsupported},
		{name: "no line break at the end", src: strings.TrimSuffix(head, "\n"), code: CodeUnsupported},
		{name: "anchored spec", src: strings.Replace(head, "spec:", "spec: &s", 1), code: CodeAnchor},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, changed, err := SetFluxKustomizationPatch([]byte(tt.src), tt.doc, entry, owns)
			if tt.code != "" {
				var refused *RefusedError
				require.ErrorAs(t, err, &refused)
				assert.Equal(t, tt.code, refused.Code, refused.Reason)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, string(out))
			assert.Equal(t, tt.src != tt.want, changed)
		})
	}
}

func TestSetFluxKustomizationPatchRefusesPatchesABlockScalarCannotHold(t *testing.T) {
	src := []byte("kind: Kustomization\nspec:\n  path: ./a\n")
	for _, patch := range []string{"a: 1\n\nb: 2\n", "a: 1 \n", "  a: 1\n", "a:\t1\n", "a: {{ x }}\n"} {
		_, _, err := SetFluxKustomizationPatch(src, 0, PatchEntry{Patch: patch, Kind: "Deployment", Name: "web"}, func(string, map[string]string) bool { return false })
		var refused *RefusedError
		require.ErrorAs(t, err, &refused, "%q", patch)
		assert.Equal(t, CodeInvalidInput, refused.Code)
	}
}

// TestSetPatchEntryInApplicationSources writes the entry into an Argo CD
// Application's source, creating the kustomize mapping a source without
// one lacks, and into the right item of spec.sources.
func TestSetPatchEntryInApplicationSources(t *testing.T) {
	entry := PatchEntry{Patch: "kind: Deployment\nmetadata:\n  name: web\n", Kind: "Deployment", Name: "web"}
	owns := func(_ string, target map[string]string) bool { return target["name"] == "web" }
	lines := func(indent string) string {
		return indent + "- patch: |\n" + indent + "    kind: Deployment\n" + indent + "    metadata:\n" + indent + "      name: web\n" +
			indent + "  target:\n" + indent + "    kind: Deployment\n" + indent + "    name: web\n"
	}
	head := "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: web\nspec:\n"
	single := head + "  source:\n    repoURL: https://example.com/r.git\n    path: apps/web # shared\n  destination:\n    namespace: a\n"
	multi := head + "  sources:\n    - repoURL: https://example.com/r.git\n      path: apps/api\n    - repoURL: https://example.com/r.git\n      path: apps/web\n      kustomize:\n        namePrefix: a-\n\n  destination:\n    namespace: a\n"
	tests := []struct {
		name, at, src, want string
		code                RefusalCode
	}{
		{
			name: "a source without kustomize gets one",
			at:   "spec.source.kustomize", src: single,
			want: head + "  source:\n    repoURL: https://example.com/r.git\n    path: apps/web # shared\n    kustomize:\n      patches:\n" + lines("      ") + "  destination:\n    namespace: a\n",
		},
		{
			name: "the second source's kustomize gets patches",
			at:   "spec.sources[1].kustomize", src: multi,
			want: head + "  sources:\n    - repoURL: https://example.com/r.git\n      path: apps/api\n    - repoURL: https://example.com/r.git\n      path: apps/web\n      kustomize:\n        namePrefix: a-\n        patches:\n" + lines("        ") + "\n  destination:\n    namespace: a\n",
		},
		{name: "no such source", at: "spec.sources[2].kustomize", src: multi, code: CodeNotFound},
		{name: "a list is missing on the way", at: "spec.sources[0].kustomize", src: single, code: CodeNotFound},
		{name: "kustomize written in flow style", at: "spec.source.kustomize", src: strings.Replace(single, "    path: apps/web # shared\n", "    path: apps/web\n    kustomize: {namePrefix: a-}\n", 1), code: CodeUnsupported},
		{name: "bad path", at: "spec.sources[x]", src: multi, code: CodeInvalidInput},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, changed, err := SetPatchEntry([]byte(tt.src), 0, PatchList{Kind: "Application", At: tt.at}, entry, owns)
			if tt.code != "" {
				var refused *RefusedError
				require.ErrorAs(t, err, &refused)
				assert.Equal(t, tt.code, refused.Code, refused.Reason)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, string(out))
			assert.True(t, changed)
			again, changed, err := SetPatchEntry(out, 0, PatchList{Kind: "Application", At: tt.at}, entry, owns)
			require.NoError(t, err)
			assert.False(t, changed)
			assert.Equal(t, string(out), string(again))
		})
	}
}
