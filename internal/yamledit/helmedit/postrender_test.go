package helmedit

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	yaml "go.yaml.in/yaml/v3"

	"github.com/kedge-io/kedge/internal/yamledit"
)

var podinfo = yamledit.Target{Kind: "HelmRelease", Name: "podinfo", Document: yamledit.AnyDocument}

func restartOf(kind, name, value string) RestartPatch {
	return RestartPatch{APIVersion: "apps/v1", Kind: kind, Name: name, Annotations: map[string]string{"kedge.io/restartedAt": value}}
}

const releaseHead = "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: podinfo\nspec:\n  interval: 5m\n"

// kedgeEntry is what SetReleaseRestarts writes for one Deployment, its dash at column dash.
func kedgeEntry(dash int, name, value string) string {
	lines := []string{
		"- kustomize:",
		"    patches:",
		"      - target:",
		"          group: apps",
		"          kind: Deployment",
		"          name: " + name,
		"        patch: |",
		"          # kedge: restart",
		"          apiVersion: apps/v1",
		"          kind: Deployment",
		"          metadata:",
		"            name: " + name,
		"          spec:",
		"            template:",
		"              metadata:",
		"                annotations:",
		`                  kedge.io/restartedAt: "` + value + `"`,
	}
	pad := strings.Repeat(" ", dash)
	return pad + strings.Join(lines, "\n"+pad) + "\n"
}

func TestSetReleaseRestarts(t *testing.T) {
	tests := []struct {
		name, src string
		patches   []RestartPatch
		want      string
		changed   bool
	}{
		{
			name:    "no post-renderers: the list is added at the end of spec",
			src:     "# the release\n" + releaseHead + "  values:\n    a: 1 # one\n\n---\nkind: ConfigMap\n",
			patches: []RestartPatch{restartOf("Deployment", "podinfo", "abc")},
			want:    "# the release\n" + releaseHead + "  values:\n    a: 1 # one\n  postRenderers:\n" + kedgeEntry(4, "podinfo", "abc") + "\n---\nkind: ConfigMap\n",
			changed: true,
		},
		{
			name: "the team's entries are kept, kedge's goes after them",
			src: releaseHead + "  postRenderers:\n  # images first\n  - kustomize:\n      images:\n      - name: x\n        newTag: \"2\"\n" +
				"  upgrade: {}\n",
			patches: []RestartPatch{restartOf("Deployment", "podinfo", "abc")},
			want: releaseHead + "  postRenderers:\n  # images first\n  - kustomize:\n      images:\n      - name: x\n        newTag: \"2\"\n" +
				kedgeEntry(2, "podinfo", "abc") + "  upgrade: {}\n",
			changed: true,
		},
		{
			name:    "kedge's entry is updated in place, before the team's",
			src:     releaseHead + "  postRenderers:\n" + kedgeEntry(4, "podinfo", "old") + "    # the team's\n    - kustomize:\n        images: []\n",
			patches: []RestartPatch{restartOf("Deployment", "podinfo", "new")},
			want:    releaseHead + "  postRenderers:\n" + kedgeEntry(4, "podinfo", "new") + "    # the team's\n    - kustomize:\n        images: []\n",
			changed: true,
		},
		{
			name:    "the same restart again changes nothing",
			src:     releaseHead + "  postRenderers:\n" + kedgeEntry(4, "podinfo", "abc"),
			patches: []RestartPatch{restartOf("Deployment", "podinfo", "abc")},
			want:    releaseHead + "  postRenderers:\n" + kedgeEntry(4, "podinfo", "abc"),
		},
		{
			name:    "CRLF line breaks are kept",
			src:     strings.ReplaceAll(releaseHead, "\n", "\r\n"),
			patches: []RestartPatch{restartOf("Deployment", "podinfo", "abc")},
			want:    strings.ReplaceAll(releaseHead+"  postRenderers:\n"+kedgeEntry(4, "podinfo", "abc"), "\n", "\r\n"),
			changed: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, changed, err := SetReleaseRestarts([]byte(tt.src), podinfo, tt.patches)
			require.NoError(t, err)
			assert.Equal(t, tt.want, string(out))
			assert.Equal(t, tt.changed, changed)
		})
	}
}

// TestSetReleaseRestartsKeepsOtherWorkloads: a workload restarted before
// keeps its patch when another one is restarted, since dropping it would
// restart it again.
func TestSetReleaseRestartsKeepsOtherWorkloads(t *testing.T) {
	src := []byte(releaseHead)
	out, _, err := SetReleaseRestarts(src, podinfo, []RestartPatch{restartOf("Deployment", "web", "1"), restartOf("StatefulSet", "db", "1")})
	require.NoError(t, err)
	out, changed, err := SetReleaseRestarts(out, podinfo, []RestartPatch{restartOf("Deployment", "web", "2")})
	require.NoError(t, err)
	assert.True(t, changed)

	var hr struct {
		Spec struct {
			PostRenderers []any `yaml:"postRenderers"`
		} `yaml:"spec"`
	}
	require.NoError(t, yaml.Unmarshal(out, &hr))
	require.Len(t, hr.Spec.PostRenderers, 1, "one entry, never a second one")
	assert.Equal(t, map[string]map[string]string{
		"Deployment/web": {"kedge.io/restartedAt": "2"},
		"StatefulSet/db": {"kedge.io/restartedAt": "1"},
	}, ReleaseRestarts(hr.Spec.PostRenderers))
}

func TestSetReleaseRestartsRefuses(t *testing.T) {
	tests := []struct {
		name, src string
		t         yamledit.Target
		patches   []RestartPatch
		code      yamledit.RefusalCode
	}{
		{"not a HelmRelease", releaseHead, yamledit.Target{Kind: "Deployment", Name: "podinfo", Document: yamledit.AnyDocument}, []RestartPatch{restartOf("Deployment", "p", "1")}, yamledit.CodeInvalidInput},
		{"no such release", releaseHead, yamledit.Target{Kind: "HelmRelease", Name: "other", Document: yamledit.AnyDocument}, []RestartPatch{restartOf("Deployment", "p", "1")}, yamledit.CodeNotFound},
		{"flow list", releaseHead + "  postRenderers: [{kustomize: {images: []}}]\n", podinfo, []RestartPatch{restartOf("Deployment", "p", "1")}, yamledit.CodeUnsupported},
		{"flow spec", "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: podinfo\nspec: {interval: 5m}\n", podinfo, []RestartPatch{restartOf("Deployment", "p", "1")}, yamledit.CodeUnsupported},
		{"anchored spec", "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: podinfo\nspec: &s\n  interval: 5m\n", podinfo, []RestartPatch{restartOf("Deployment", "p", "1")}, yamledit.CodeAnchor},
		{"no pod template", releaseHead, podinfo, []RestartPatch{restartOf("Service", "p", "1")}, yamledit.CodeInvalidInput},
		{"bad value", releaseHead, podinfo, []RestartPatch{restartOf("Deployment", "p", "a\nb")}, yamledit.CodeInvalidInput},
		{"template text", releaseHead + "  values:\n    a: {{ .x }}\n", podinfo, []RestartPatch{restartOf("Deployment", "p", "1")}, yamledit.CodeTemplate},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := SetReleaseRestarts([]byte(tt.src), tt.t, tt.patches)
			var refused *yamledit.RefusedError
			require.ErrorAs(t, err, &refused)
			assert.Equal(t, tt.code, refused.Code, refused.Reason)
		})
	}
}

func TestReleasePatchFileRoundTrip(t *testing.T) {
	for _, addPath := range []string{AppendPostRenderer, CreatePostRenderers} {
		t.Run(addPath, func(t *testing.T) {
			f := ReleasePatchFile{AddPath: addPath}
			data, err := f.Render("# header\n", []RestartPatch{restartOf("Deployment", "web", "1")})
			require.NoError(t, err)
			assert.True(t, strings.HasPrefix(string(data), "# header\n- op: add\n  path: "+addPath+"\n"))
			read, ok := ReadReleasePatchFile(data)
			require.True(t, ok)
			assert.Equal(t, addPath, read.AddPath)
			again, err := read.Render("# header\n", []RestartPatch{restartOf("Deployment", "web", "1")})
			require.NoError(t, err)
			assert.Equal(t, string(data), string(again))
		})
	}
	_, ok := ReadReleasePatchFile([]byte("- op: replace\n  path: /spec/values\n  value: {}\n"))
	assert.False(t, ok, "a patch kedge did not write")
}

// FuzzSetReleaseRestarts: the edit never panics, and either refuses without output or returns a file whose
// HelmRelease carries the restart in kedge's entry, that only inserts lines when the release had no entry of
// kedge's before, keeps the byte order mark, and is left alone by a rerun.
func FuzzSetReleaseRestarts(f *testing.F) {
	seeds := []string{
		releaseHead,
		"# the release\n" + releaseHead + "  values:\n    a: 1 # one\n\n---\nkind: ConfigMap\n",
		releaseHead + "  postRenderers:\n  # images first\n  - kustomize:\n      images:\n      - name: x\n        newTag: \"2\"\n  upgrade: {}\n",
		releaseHead + "  postRenderers:\n" + kedgeEntry(4, "podinfo", "old") + "    # the team's\n    - kustomize:\n        images: []\n",
		strings.ReplaceAll(releaseHead, "\n", "\r\n"),
		releaseHead + "  postRenderers: []\n",
	}
	for _, s := range seeds {
		f.Add([]byte(s), "podinfo", "Deployment", "web", "abc")
	}
	f.Fuzz(func(t *testing.T, src []byte, release, kind, name, value string) {
		target := yamledit.Target{Kind: "HelmRelease", Name: release, Document: yamledit.AnyDocument}
		patches := []RestartPatch{{APIVersion: "apps/v1", Kind: kind, Name: name, Annotations: map[string]string{"kedge.io/restartedAt": value}}}
		out, changed, err := SetReleaseRestarts(src, target, patches)
		if err != nil {
			requireRefusal(t, out, changed, err)
			return
		}
		_, obj, err := yamledit.OpenTarget(out, target)
		require.NoError(t, err)
		var spec struct {
			PostRenderers any `yaml:"postRenderers"`
		}
		require.NoError(t, yamledit.Keys("spec").Find(obj.Node).Decode(&spec))
		require.Equal(t, value, ReleaseRestarts(spec.PostRenderers)[kind+"/"+name]["kedge.io/restartedAt"])
		if !changed {
			require.Equal(t, src, out)
			return
		}
		require.Equal(t, bytes.HasPrefix(src, utf8BOM), bytes.HasPrefix(out, utf8BOM))
		if !bytes.Contains(src, []byte(RestartMarker)) {
			rewritten, _ := changedRegion(src, out)
			require.Zero(t, rewritten, "an existing line rewritten:\n%s\n----\n%s", src, out)
		}
		again, changedAgain, err := SetReleaseRestarts(out, target, patches)
		require.NoError(t, err)
		require.False(t, changedAgain)
		require.Equal(t, out, again)
	})
}

var utf8BOM = []byte("\xEF\xBB\xBF")

// requireRefusal holds a failed edit to the promise of every edit: a refusal that says why, and no output.
func requireRefusal(t *testing.T, out []byte, changed bool, err error) {
	var refused *yamledit.RefusedError
	require.True(t, errors.As(err, &refused), "error %v is not a refusal", err)
	require.NotEmpty(t, refused.Reason)
	if os.Getenv("YAMLEDIT_FUZZ_STRICT") != "" && refused.Code == yamledit.CodeVerification {
		t.Fatalf("the planner produced an edit that verification had to catch: %v", err)
	}
	require.Nil(t, out)
	require.False(t, changed)
}

// changedRegion returns how many lines of before and of after lie between their common leading and trailing
// lines.
func changedRegion(before, after []byte) (int, int) {
	a, b := strings.SplitAfter(string(before), "\n"), strings.SplitAfter(string(after), "\n")
	p := 0
	for p < len(a) && p < len(b) && a[p] == b[p] {
		p++
	}
	s := 0
	for s < len(a)-p && s < len(b)-p && a[len(a)-1-s] == b[len(b)-1-s] {
		s++
	}
	return len(a) - p - s, len(b) - p - s
}
