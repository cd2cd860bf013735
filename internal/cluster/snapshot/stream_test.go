package snapshot

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const podItem = `- apiVersion: v1
  kind: Pod
  metadata:
    name: %s
    namespace: shop
    annotations:
      sidecar.istio.io/status: '{"containers":["istio-proxy"],"revision":"1-24-0"}'
    ownerReferences:
    - {apiVersion: apps/v1, kind: ReplicaSet, name: cart-5d8f, uid: u1, controller: true}
  spec:
    containers:
    - name: istio-proxy
      image: docker.io/istio/proxyv2:1.24.0
  status: {phase: Running}
`

func pods(names ...string) string {
	var b strings.Builder
	for _, n := range names {
		b.WriteString(strings.ReplaceAll(podItem, "%s", n))
	}
	return b.String()
}

// configMapItem has a comment inside the item and a blank line inside a
// block scalar.
const configMapItem = `- apiVersion: v1
  kind: ConfigMap
  metadata: {name: istio-sidecar-injector, namespace: istio-system, labels: {istio.io/rev: default}}
  # the injector's values
  data:
    values: |
      {"global": {"hub": "docker.io/istio",

        "tag": "1.24.0"}}
`

// TestStreamingDecodesLikeTheWholeFile holds the streaming decoder to the
// whole-file decoder: on every input both give the same objects (or the
// stream declines and the whole-file decoder reads it), and Read
// returns the same objects or the same error either way.
func TestStreamingDecodesLikeTheWholeFile(t *testing.T) {
	cases := []struct {
		name       string
		file       string
		content    string
		streamable bool
	}{
		{"list as kedge snapshot writes it", "pods.yaml",
			"apiVersion: v1\nkind: List\nitems:\n" + pods("a", "b", "c"), true},
		{"list as kubectl prints it", "pods.yaml",
			"apiVersion: v1\nitems:\n" + pods("a", "b") + "kind: List\nmetadata:\n  resourceVersion: \"\"\n", true},
		{"typed list kind", "pods.yaml", "apiVersion: v1\nkind: PodList\nitems:\n" + pods("a"), true},
		{"documents around a list", "mixed.yaml",
			"# header\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: shop}\n--- # comment\n\n---\n" +
				"apiVersion: v1\nkind: List\nitems:\n" + pods("a") + configMapItem + "---\n" +
				"apiVersion: v1\nkind: Pod\nmetadata: {name: z, namespace: shop}\n", true},
		{"blank lines between items", "pods.yaml",
			"apiVersion: v1\nkind: List\nitems:\n" + pods("a") + "\n  \n\n" + pods("b"), true},
		{"comments at column 0 between items", "pods.yaml",
			"apiVersion: v1\nkind: List\nitems:\n# first\n" + pods("a") + "# second\n" + pods("b"), false},
		{"a line less indented than its item", "pods.yaml",
			"apiVersion: v1\nkind: List\nitems:\n-  kind: 0A\n 00\n", false},
		{"a quoted scalar running back to the left", "pods.yaml",
			"apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata: {name: \"a\n b\"}\n", false},
		{"CRLF line ends", "pods.yaml",
			strings.ReplaceAll("apiVersion: v1\nkind: List\nitems:\n"+pods("a", "b"), "\n", "\r\n"), true},
		{"byte order mark", "pods.yaml", "\xef\xbb\xbfapiVersion: v1\nkind: List\nitems:\n" + pods("a"), true},
		{"no final newline", "pods.yaml",
			"apiVersion: v1\nkind: List\nitems:\n" + strings.TrimSuffix(pods("a"), "\n"), true},
		{"item content on the next line", "pods.yaml",
			"apiVersion: v1\nkind: List\nitems:\n-\n  apiVersion: v1\n  kind: Pod\n  metadata: {name: a, namespace: shop}\n", true},
		{"flow items", "pods.yaml", "apiVersion: v1\nkind: List\nitems: [{apiVersion: v1, kind: Pod, metadata: {name: a}}]\n", true},
		{"empty list", "pods.yaml", "apiVersion: v1\nkind: List\nitems: []\n", true},
		{"an alias across items", "pods.yaml",
			"apiVersion: v1\nkind: List\nitems:\n- &pod {apiVersion: v1, kind: Pod, metadata: {name: a}}\n- *pod\n", false},
		{"indented items", "pods.yaml", "apiVersion: v1\nkind: List\nitems:\n  - {apiVersion: v1, kind: Pod, metadata: {name: a}}\n", false},
		{"an items key on an object that is no list", "pod.yaml",
			"apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nitems:\n- 1\n", false},
		{"items twice", "pods.yaml", "apiVersion: v1\nkind: List\nitems:\n" + pods("a") + "metadata: {}\nitems:\n" + pods("b"), false},
		{"a malformed item", "pods.yaml", "apiVersion: v1\nkind: List\nitems:\n" + pods("a") + "- {apiVersion: v1, kind: Pod, spec: 5}\n", false},
		{"broken YAML in an item", "pods.yaml", "apiVersion: v1\nkind: List\nitems:\n" + pods("a") + "- apiVersion: v1\n  kind: [\n", false},
		{"a list without a kind", "pods.yaml", "apiVersion: v1\nitems:\n" + pods("a"), false},
		{"a bad separator", "pods.yaml", "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---x\n", false},
		{"a separator that is plain text opens the file", "pods.yaml", "---#\napiVersion: v1\nkind: List\nitems:\n" + pods("a"), false},
		{"a separator with a form feed opens the file", "pods.yaml", "---\f\napiVersion: v1\nkind: List\nitems:\n" + pods("a"), false},
		{"a separator with a comment opens the file", "pods.yaml", "--- # pods\napiVersion: v1\nkind: List\nitems:\n" + pods("a"), true},
		{"a quoted scalar open across the items", "pods.yaml",
			"apiVersion: v1\nkind: List\nnote: \"x\nitems:\n" + pods("a") + "after: y\"\n", false},
		{"a flow sequence open across the items", "pods.yaml",
			"apiVersion: v1\nkind: List\nnote: [x,\nitems:\n" + pods("a") + "after: y]\n", false},
		{"items again under a key that folds alike", "pods.yaml",
			"apiVersion: v1\nkind: List\nitems:\n" + pods("a") + "itemſ: null\n", false},
		{"an alias after the items", "pods.yaml",
			"apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: &k Pod\n  metadata: {name: a}\nnote: *k\n", false},
		{"a document end marker before the items", "pods.yaml", "apiVersion: v1\nkind: List\n...\nitems:\n" + pods("a"), false},
		{"a document end marker after the items", "pods.yaml", "apiVersion: v1\nkind: List\nitems:\n" + pods("a") + "...\n", false},
		{"a NEL line break inside an item", "pods.yaml",
			"apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata: {name: a}\u0085- apiVersion: v1\n  kind: Pod\n  metadata: {name: b}\n", false},
		{"a lone CR inside an item", "pods.yaml",
			"apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Pod\r- apiVersion: v1\n  kind: Pod\n", false},
		{"an item nested to the decoders' limit", "pods.yaml",
			"apiVersion: v1\nkind: List\nitems:\n" + pods("a") + "  x: " + strings.Repeat("[", 9999) + strings.Repeat("]", 9999) + "\n", false},
		{"JSON list", "pods.json",
			`{"apiVersion":"v1","kind":"List","metadata":{"resourceVersion":""},"items":[` +
				`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a","namespace":"shop"},"spec":{"containers":[{"name":"istio-proxy","image":"x"}]}},` +
				`{"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"name":"r","namespace":"shop","labels":{"app":"x"}},"spec":{"replicas":2}}]}`, true},
		{"JSON lists one after another", "pods.json",
			`{"kind":"PodList","apiVersion":"v1","items":[{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"}}]}` + "\n" +
				`{"kind":"List","apiVersion":"v1","items":[{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"n"}}]}`, true},
		{"JSON byte order mark", "pods.json", "\xef\xbb\xbf" + `{"kind":"List","apiVersion":"v1","items":[{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"}}]}`, true},
		{"JSON items written again under a key that folds alike", "pods.json",
			`{"kind":"List","items":[{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"}}],"Items":null}`, false},
		{"JSON kind written again under a key that folds alike", "pods.json",
			`{"kind":"List","items":[{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"}}],"KIND":"Pod"}`, false},
		{"JSON item nested to the decoder's limit", "pods.json",
			`{"kind":"List","items":[{"apiVersion":"v1","kind":"Pod","x":` + strings.Repeat("[", 9999) + strings.Repeat("]", 9999) + `}]}`, false},
		{"JSON object that is no list", "pod.json", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"}}`, false},
		{"JSON items spelled otherwise", "pods.json", `{"kind":"List","apiVersion":"v1","Items":[{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"}}]}`, false},
		{"JSON malformed item", "pods.json", `{"kind":"List","apiVersion":"v1","items":[{"apiVersion":"v1","kind":"Pod","spec":7}]}`, false},
		{"JSON cut short", "pods.json", `{"kind":"List","apiVersion":"v1","items":[{"apiVersion":"v1","kind":"Pod"`, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			isJSON := strings.HasSuffix(tc.file, ".json")
			whole, wholeErr := decodeSnapshot([]byte(tc.content), isJSON, tc.file)

			var streamed any
			var err error
			if isJSON {
				streamed, err = streamJSON(strings.NewReader(tc.content), int64(len(tc.content)))
			} else {
				streamed, err = streamYAML(strings.NewReader(tc.content), int64(len(tc.content)))
			}
			if tc.streamable {
				require.NoError(t, err)
				require.NoError(t, wholeErr)
				assert.Equal(t, whole, streamed)
			} else {
				assert.ErrorIs(t, err, errNotStreamable)
			}

			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, tc.file), []byte(tc.content), 0o644))
			old := streamThreshold
			streamThreshold = 0
			defer func() { streamThreshold = old }()
			read, readErr := Read(dir)
			if wholeErr != nil {
				require.Error(t, readErr)
				assert.Equal(t, wholeErr.Error(), readErr.Error())
				return
			}
			require.NoError(t, readErr)
			assert.Equal(t, whole, read)
		})
	}
}

// FuzzStreamingDecode: whatever the streaming decoder accepts, the
// whole-file decoder reads to the same objects.
func FuzzStreamingDecode(f *testing.F) {
	f.Add([]byte("apiVersion: v1\nkind: List\nitems:\n"+pods("a", "b")+configMapItem), false)
	f.Add([]byte("apiVersion: v1\nitems:\n"+pods("a")+"kind: PodList\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: n}\n"), false)
	f.Add([]byte(`{"kind":"List","apiVersion":"v1","items":[{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"}}]}`), true)
	// Brackets and quotes inside strings must not end an item early.
	f.Add([]byte(`{"items":[{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a}\"]["}} , {"kind":"Namespace","apiVersion":"v1"}],"kind":"List"} {"kind":"PodList","items":[]}`), true)
	// Pieces that parse alone but not in their place: a quoted scalar open
	// across the items, items and kind written again under folded keys.
	f.Add([]byte("kind: List\nnote: 'x\nitems:\n"+pods("a")+"after: y'\nitemſ: ~\n"), false)
	f.Add([]byte(`{"kind":"List","items":[{"apiVersion":"v1","kind":"Pod"}],"KIND":"Pod","Items":null}`), true)
	f.Fuzz(func(t *testing.T, data []byte, isJSON bool) {
		var streamed any
		var err error
		if isJSON {
			streamed, err = streamJSON(strings.NewReader(string(data)), int64(len(data)))
		} else {
			streamed, err = streamYAML(strings.NewReader(string(data)), int64(len(data)))
		}
		if err != nil {
			return
		}
		whole, wholeErr := decodeSnapshot(data, isJSON, "fuzz")
		if wholeErr != nil {
			t.Fatalf("the stream read what the whole-file decoder refuses (%v)", wholeErr)
		}
		assert.Equal(t, whole, streamed)
	})
}
