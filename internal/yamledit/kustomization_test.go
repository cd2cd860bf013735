package yamledit

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAddKustomizationTargetPatch(t *testing.T) {
	target := PatchTarget{Kind: "HelmRelease", Name: "podinfo"}
	out, changed, err := AddKustomizationTargetPatch([]byte("namespace: a\nresources:\n- ../base\n"), "kedge-helm-podinfo.yaml", target)
	require.NoError(t, err)
	assert.True(t, changed)
	assert.Equal(t, "namespace: a\nresources:\n- ../base\npatches:\n- path: kedge-helm-podinfo.yaml\n  target:\n    kind: HelmRelease\n    name: podinfo\n", string(out))

	again, changed, err := AddKustomizationTargetPatch(out, "kedge-helm-podinfo.yaml", target)
	require.NoError(t, err)
	assert.False(t, changed)
	assert.Equal(t, string(out), string(again))

	flow, _, err := AddKustomizationTargetPatch([]byte("patches: [{path: a.yaml}]\n"), "kedge-helm-podinfo.yaml", target)
	require.NoError(t, err)
	assert.Equal(t, "patches: [{path: a.yaml}, {path: kedge-helm-podinfo.yaml, target: {kind: HelmRelease, name: podinfo}}]\n", string(flow))

	_, _, err = AddKustomizationTargetPatch([]byte("resources: []\n"), "p.yaml", PatchTarget{Kind: "HelmRelease", Name: "Bad Name"})
	assert.Error(t, err)
}
