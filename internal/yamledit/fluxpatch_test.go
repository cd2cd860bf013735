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
