package yamledit

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	yaml "go.yaml.in/yaml/v3"

	"github.com/kedge-io/kedge/internal/yamlguard"
)

func anyDeployment(name string) Target {
	return Target{Kind: "Deployment", Name: name, Document: AnyDocument}
}

func refusalCode(t *testing.T, err error) RefusalCode {
	t.Helper()
	var refused *RefusedError
	require.True(t, errors.As(err, &refused), "%v is not a refusal", err)
	return refused.Code
}

func TestPodTemplateAnnotations(t *testing.T) {
	tests := []struct {
		name   string
		src    string
		target Target
		want   map[string]string
		code   RefusalCode
	}{
		{
			name:   "absent",
			src:    "kind: Deployment\nmetadata: {name: web}\nspec:\n  template:\n    spec: {}\n",
			target: anyDeployment("web"),
		},
		{
			name:   "null",
			src:    "kind: Deployment\nmetadata: {name: web}\nspec:\n  template:\n    metadata:\n      annotations:\n",
			target: anyDeployment("web"),
		},
		{
			name:   "empty flow mapping",
			src:    "kind: Deployment\nmetadata: {name: web}\nspec: {template: {metadata: {annotations: {}}}}\n",
			target: anyDeployment("web"),
			want:   map[string]string{},
		},
		{
			name:   "quoted and null values",
			src:    "kind: Deployment\nmetadata: {name: web}\nspec:\n  template:\n    metadata:\n      annotations:\n        \"a\": 'x'\n        b:\n        c: |\n          two\n          lines\n",
			target: anyDeployment("web"),
			want:   map[string]string{"a": "x", "b": "", "c": "two\nlines\n"},
		},
		{
			name:   "aliases are followed when reading",
			src:    "x: &ann {a: b}\nkind: Deployment\nmetadata: {name: web}\nspec: {template: {metadata: {annotations: *ann}}}\n",
			target: anyDeployment("web"),
			want:   map[string]string{"a": "b"},
		},
		{
			name:   "second object of a List",
			src:    "kind: List\nitems:\n- kind: Deployment\n  metadata: {name: web}\n- kind: Deployment\n  metadata: {name: web, namespace: b}\n  spec: {template: {metadata: {annotations: {n: b}}}}\n",
			target: Target{Kind: "Deployment", Name: "web", Document: 1},
			want:   map[string]string{"n": "b"},
		},
		{
			name:   "namespace of the target excludes other namespaces",
			src:    "kind: Deployment\nmetadata: {name: web, namespace: a}\n---\nkind: Deployment\nmetadata: {name: web, namespace: b}\nspec: {template: {metadata: {annotations: {n: b}}}}\n",
			target: Target{Kind: "Deployment", Name: "web", Namespace: "b", Document: AnyDocument},
			want:   map[string]string{"n": "b"},
		},
		{
			name:   "merge key",
			src:    "x: &ann {a: b}\nkind: Deployment\nmetadata: {name: web}\nspec: {template: {metadata: {annotations: {<<: *ann}}}}\n",
			target: anyDeployment("web"),
			code:   CodeAnchor,
		},
		{
			name:   "non-string value",
			src:    "kind: Deployment\nmetadata: {name: web}\nspec: {template: {metadata: {annotations: {a: [1]}}}}\n",
			target: anyDeployment("web"),
			code:   CodeUnsupported,
		},
		{
			name:   "missing target",
			src:    "kind: Deployment\nmetadata: {name: web}\n",
			target: anyDeployment("api"),
			code:   CodeNotFound,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := PodTemplateAnnotations([]byte(tt.src), tt.target)
			if tt.code != "" {
				assert.Equal(t, tt.code, refusalCode(t, err))
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestInvalidInputIsRefused(t *testing.T) {
	src := []byte("kind: Deployment\nmetadata:\n  name: web\n")
	tests := []struct {
		name string
		call func() ([]byte, bool, error)
	}{
		{"kind without pod template", func() ([]byte, bool, error) {
			return SetPodTemplateAnnotations(src, Target{Kind: "CronJob", Name: "web", Document: AnyDocument}, map[string]string{"a": "b"})
		}},
		{"annotation key", func() ([]byte, bool, error) {
			return SetPodTemplateAnnotations(src, anyDeployment("web"), map[string]string{"not a key": "b"})
		}},
		{"annotation value not UTF-8", func() ([]byte, bool, error) {
			return SetPodTemplateAnnotations(src, anyDeployment("web"), map[string]string{"a": "\xff"})
		}},
		{"label value", func() ([]byte, bool, error) {
			return SetMetadataLabel(src, anyDeployment("web"), "istio.io/rev", "has space")
		}},
		{"kustomization label key", func() ([]byte, bool, error) {
			return SetKustomizationLabel(src, "-bad", "x")
		}},
		{"patch path", func() ([]byte, bool, error) {
			return AddKustomizationPatch(src, "two\nlines.yaml")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, changed, err := tt.call()
			assert.Equal(t, CodeInvalidInput, refusalCode(t, err))
			assert.Nil(t, out)
			assert.False(t, changed)
		})
	}
}

func TestUnusualLineBreaksAreRefused(t *testing.T) {
	for name, src := range map[string]string{
		"lone carriage return": "kind: Deployment\rmetadata:\n  name: web\n",
		"line separator":       "kind: Deployment\nmetadata:\n  name: web # \u2028\n",
		"UTF-16":               "\xff\xfek\x00",
		"invalid UTF-8":        "kind: Deployment\nmetadata:\n  name: w\xffb\n",
	} {
		t.Run(name, func(t *testing.T) {
			_, _, err := SetPodTemplateAnnotations([]byte(src), anyDeployment("web"), map[string]string{"a": "b"})
			assert.Equal(t, CodeUnparsable, refusalCode(t, err))
		})
	}
}

// TestBadInputOverBudgetIsRefused: every walk of a file follows aliases, so a file whose aliases multiply
// ("billion laughs"), that nests absurdly deep or that is too large is refused before any walk, by every
// entry point.
func TestBadInputOverBudgetIsRefused(t *testing.T) {
	laughs := "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nx0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
	for i := 1; i < 9; i++ {
		laughs += fmt.Sprintf("x%d: &a%d [*a%d, *a%[3]d, *a%[3]d, *a%[3]d, *a%[3]d, *a%[3]d, *a%[3]d, *a%[3]d, *a%[3]d]\n", i, i, i-1)
	}
	deep := "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nx: " +
		strings.Repeat("[", yamlguard.MaxDepth+1) + strings.Repeat("]", yamlguard.MaxDepth+1) + "\n"
	huge := "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n" +
		strings.Repeat("# padding\n", yamlguard.MaxFileBytes/10)
	entries := map[string]func(src []byte) error{
		"SetPodTemplateAnnotations": func(src []byte) error {
			_, _, err := SetPodTemplateAnnotations(src, anyDeployment("web"), map[string]string{"a": "b"})
			return err
		},
		"PodTemplateAnnotations": func(src []byte) error {
			_, err := PodTemplateAnnotations(src, anyDeployment("web"))
			return err
		},
		"AddKustomizationPatch": func(src []byte) error {
			_, _, err := AddKustomizationPatch(src, "patch.yaml")
			return err
		},
	}
	for name, src := range map[string]string{"billion laughs": laughs, "deep nesting": deep, "too large": huge} {
		for entry, call := range entries {
			t.Run(name+"/"+entry, func(t *testing.T) {
				assert.Equal(t, CodeOverBudget, refusalCode(t, call([]byte(src))))
			})
		}
	}
}

// Values round-trip exactly, whatever characters they hold, in every place a value can be written.
func TestValuesRoundTrip(t *testing.T) {
	values := []string{
		"2024-05-01T10:00:00Z", "", " leading space", "trailing space ", `quote " and \ backslash`, "it's",
		"tab\tnew\nline", "bell\a nul\x00", "NEL\u0085 LS\u2028 PS\u2029 BOM\uFEFF", "émoji 🚀", "#not a comment",
		"- dash", "{flow}", "yes", "null", "~", "0x1F", "1e3", ".inf", "key: value",
	}
	layouts := map[string]string{
		"block new key":  "kind: Deployment\nmetadata:\n  name: web\nspec:\n  template:\n    metadata:\n      annotations:\n        other: x\n",
		"block replace":  "kind: Deployment\nmetadata:\n  name: web\nspec:\n  template:\n    metadata:\n      annotations:\n        k: old\n",
		"single quoted":  "kind: Deployment\nmetadata:\n  name: web\nspec:\n  template:\n    metadata:\n      annotations:\n        k: 'old'\n",
		"flow new key":   "kind: Deployment\nmetadata: {name: web}\nspec: {template: {metadata: {annotations: {other: x}}}}\n",
		"flow replace":   "kind: Deployment\nmetadata: {name: web}\nspec: {template: {metadata: {annotations: {k: old}}}}\n",
		"missing parent": "kind: Deployment\nmetadata:\n  name: web\n",
	}
	for layout, src := range layouts {
		for _, v := range values {
			t.Run(layout+"/"+v, func(t *testing.T) {
				out, changed, err := SetPodTemplateAnnotations([]byte(src), anyDeployment("web"), map[string]string{"k": v})
				require.NoError(t, err)
				require.True(t, changed)
				got, err := PodTemplateAnnotations(out, anyDeployment("web"))
				require.NoError(t, err)
				assert.Equal(t, v, got["k"])
			})
		}
	}
}

func TestPlainSafe(t *testing.T) {
	tests := map[string]bool{
		"web": true, "rev-1-24-0": true, "kedge.io/restartedAt": true, "patches/a.yaml": true, "./a.yaml": true,
		"1-24-0": true, "1-25-0-canary": true, "1.24.0": true, "0a1b": true, "12h": true, "2024-05-01T10.00": true,
		"": false, "yes": false, "On": false, "NULL": false, "~": false,
		".5": false, ".inf": false, "a b": false, "a:b": false, "a#b": false, "-a": false, "a,b": false, "é": false,
		// Numbers and dates in YAML 1.1 or 1.2.
		"124": false, "0124": false, "1_000": false, "0b101": false, "0o17": false, "0x1F": false, "1.5": false,
		"1.": false, "1e3": false, "1E-3": false, "1.5e3": false, "2024-05-01": false, "2024-5-1": false,
	}
	for s, want := range tests {
		assert.Equal(t, want, plainSafe(s), "%q", s)
	}
}

func TestDoubleQuoteReadsBack(t *testing.T) {
	for _, s := range []string{"plain", "\"\\", "\x00\x1f\x7f", "\u0085\u00a0\u2028\u2029\ufeff", "\U0001F680", "\u200b"} {
		var got string
		require.NoError(t, yaml.Unmarshal([]byte(doubleQuote(s)), &got))
		assert.Equal(t, s, got)
	}
}

// The checks in commit do not trust the splice: a splice that changes more than intended is refused.
func TestCommitRefusesUnintendedChanges(t *testing.T) {
	src := []byte("a: 1\nb:\n  c: 2\nd: 3\n")
	tests := []struct {
		name string
		sp   splice
	}{
		{"changes a sibling value", splice{from: 2, to: 3, text: "  c: 3\n  k: \"v\"\n"}},
		{"drops a line", splice{from: 2, to: 4, text: "  c: 2\n  k: \"v\"\n"}},
		{"wrong indentation", splice{from: 2, to: 3, text: "  c: 2\n k: \"v\"\n"}},
		{"value of the wrong type", splice{from: 2, to: 3, text: "  c: 2\n  k: 1\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := load(src)
			require.NoError(t, err)
			_, err = s.commit(0, &tt.sp, func(root *cnode) error { return expectSet(root, keys("b"), "k", "v", false) })
			assert.Equal(t, CodeVerification, refusalCode(t, err))
		})
	}
	s, err := load(src)
	require.NoError(t, err)
	out, err := s.commit(0, &splice{from: 2, to: 3, text: "  c: 2\n  k: \"v\"\n"}, func(root *cnode) error { return expectSet(root, keys("b"), "k", "v", false) })
	require.NoError(t, err)
	assert.Equal(t, "a: 1\nb:\n  c: 2\n  k: \"v\"\nd: 3\n", string(out))
}

func TestOnlySplicedSeesChangesOutsideTheSplice(t *testing.T) {
	s, err := load([]byte("a: 1\r\nb: 2\r\nc: 3\r\n"))
	require.NoError(t, err)
	sp := &splice{from: 1, to: 2, text: "b: 5\r\n"}
	require.NoError(t, s.onlySpliced([]byte("a: 1\r\nb: 5\r\nc: 3\r\n"), sp))
	for name, out := range map[string]string{
		"line break before": "a: 1\nb: 5\r\nc: 3\r\n",
		"line after":        "a: 1\r\nb: 5\r\nc: 4\r\n",
		"byte order mark":   "\ufeffa: 1\r\nb: 5\r\nc: 3\r\n",
		"lost line":         "a: 1\r\n",
	} {
		assert.Error(t, s.onlySpliced([]byte(out), sp), name)
	}
}

func TestSetKustomizationLabelEverywhere(t *testing.T) {
	src := "commonLabels:\n  istio.io/rev: old\nlabels:\n- pairs:\n    istio.io/rev: old\n    team: a\n"
	out, changed, err := SetKustomizationLabel([]byte(src), "istio.io/rev", "new")
	require.NoError(t, err)
	assert.True(t, changed)
	assert.Equal(t, "commonLabels:\n  istio.io/rev: new\nlabels:\n- pairs:\n    istio.io/rev: new\n    team: a\n", string(out))
}

func TestEmptyDocumentsDoNotCount(t *testing.T) {
	src := "---\n---\n# nothing\n---\nkind: Deployment\nmetadata:\n  name: web\n"
	out, changed, err := SetMetadataLabel([]byte(src), Target{Kind: "Deployment", Name: "web", Document: 0}, "app", "web")
	require.NoError(t, err)
	assert.True(t, changed)
	assert.Equal(t, src+"  labels:\n    app: \"web\"\n", string(out))
}

// BenchmarkSetPodTemplateAnnotations edits the last of 200 Deployments in one stream (about 4,000 lines).
func BenchmarkSetPodTemplateAnnotations(b *testing.B) {
	var src []byte
	for i := range 200 {
		src = append(src, fmt.Sprintf("---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app-%d\nspec:\n  template:\n    metadata:\n      labels:\n        app: app-%d\n    spec:\n      containers:\n        - name: app\n          image: app:1\n          env:\n            - name: A\n              value: b\n", i, i)...)
	}
	set := map[string]string{"kedge.io/restartedAt": "2024-05-01T10:00:00Z", "kedge.io/target": "1-24-0"}
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		if _, _, err := SetPodTemplateAnnotations(src, anyDeployment("app-199"), set); err != nil {
			b.Fatal(err)
		}
	}
}
