package yamledit

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
)

// goldenSeeds returns before.yaml and the case of every golden case with the given op, in name order.
func goldenSeeds(f *testing.F, op string) ([][]byte, []goldenCase) {
	cases := readGoldenCases(f)
	names := make([]string, 0, len(cases))
	for name, c := range cases {
		if c.Op == op {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	var srcs [][]byte
	var out []goldenCase
	for _, name := range names {
		src, err := os.ReadFile(filepath.Join(goldenRoot, name, "before.yaml"))
		require.NoError(f, err)
		srcs = append(srcs, src)
		out = append(out, cases[name])
	}
	return srcs, out
}

// changedRegion returns how many lines of before and of after lie between their common leading and trailing
// lines.
func changedRegion(before, after []byte) (int, int) {
	a, b := linesWithBreaks(before), linesWithBreaks(after)
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

// strictFuzzEnv, when set, makes a verification refusal fail the fuzz run: verification is the safety net,
// and an input that reaches it shows a layout the planner misreads. Off by default because refusing is
// still correct behaviour.
const strictFuzzEnv = "YAMLEDIT_FUZZ_STRICT"

func requireRefusal(t *testing.T, out []byte, changed bool, err error) {
	var refused *RefusedError
	require.True(t, errors.As(err, &refused), "error %v is not a refusal", err)
	require.NotEmpty(t, refused.Reason)
	if os.Getenv(strictFuzzEnv) != "" && refused.Code == CodeVerification {
		t.Fatalf("the planner produced an edit that verification had to catch: %v", err)
	}
	require.Nil(t, out)
	require.False(t, changed)
}

// FuzzSetPodTemplateAnnotations: the edit never panics, and either refuses without output or returns a file
// that differs from the input in at most one existing line plus inserted lines, keeps the byte order mark,
// reads back with the annotation set and every other annotation as it was, and is left alone by a rerun.
func FuzzSetPodTemplateAnnotations(f *testing.F) {
	srcs, cases := goldenSeeds(f, "")
	for i, src := range srcs {
		keys := make([]string, 0, len(cases[i].Set))
		for k := range cases[i].Set {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			f.Add(src, cases[i].Target.Kind, cases[i].Target.Name, k, cases[i].Set[k])
		}
	}
	f.Fuzz(func(t *testing.T, src []byte, kind, name, key, value string) {
		target := Target{Kind: kind, Name: name, Document: AnyDocument}
		out, changed, err := SetPodTemplateAnnotations(src, target, map[string]string{key: value})
		if err != nil {
			requireRefusal(t, out, changed, err)
			return
		}
		got, err := PodTemplateAnnotations(out, target)
		require.NoError(t, err)
		require.Contains(t, got, key)
		require.Equal(t, value, got[key])
		if !changed {
			require.Equal(t, src, out)
			return
		}
		require.Equal(t, bytes.HasPrefix(src, utf8BOM), bytes.HasPrefix(out, utf8BOM))
		rewritten, _ := changedRegion(src, out)
		require.LessOrEqual(t, rewritten, 1, "more than one existing line rewritten:\n%s\n----\n%s", src, out)
		if was, err := PodTemplateAnnotations(src, target); err == nil {
			delete(got, key)
			delete(was, key)
			if len(was) == 0 {
				was = map[string]string{}
			}
			require.Equal(t, was, got)
		}
		again, changedAgain, err := SetPodTemplateAnnotations(out, target, map[string]string{key: value})
		require.NoError(t, err)
		require.False(t, changedAgain)
		require.Equal(t, out, again)
	})
}

// FuzzAddKustomizationPatch: the same promises for listing a patch file in a kustomization.
func FuzzAddKustomizationPatch(f *testing.F) {
	srcs, cases := goldenSeeds(f, "add-kustomization-patch")
	for i, src := range srcs {
		f.Add(src, cases[i].Path)
	}
	f.Fuzz(func(t *testing.T, src []byte, patchPath string) {
		out, changed, err := AddKustomizationPatch(src, patchPath)
		if err != nil {
			requireRefusal(t, out, changed, err)
			return
		}
		if !changed {
			require.Equal(t, src, out)
			return
		}
		rewritten, _ := changedRegion(src, out)
		require.LessOrEqual(t, rewritten, 1, "more than one existing line rewritten:\n%s\n----\n%s", src, out)
		s, err := load(out)
		require.NoError(t, err)
		_, root, err := s.kustomization()
		require.NoError(t, err)
		require.True(t, listsPatch(root, patchPath))
		again, changedAgain, err := AddKustomizationPatch(out, patchPath)
		require.NoError(t, err)
		require.False(t, changedAgain)
		require.Equal(t, out, again)
	})
}

// FuzzRemoveMetadataLabel: the removal never panics, and either refuses without output or returns a file in
// which at most two existing lines changed and none was added, that keeps the byte order mark, that reads back
// without the label, and that a rerun leaves alone.
func FuzzRemoveMetadataLabel(f *testing.F) {
	srcs, cases := goldenSeeds(f, "remove-metadata-label")
	for i, src := range srcs {
		f.Add(src, cases[i].Target.Name, cases[i].Key)
	}
	f.Fuzz(func(t *testing.T, src []byte, name, key string) {
		target := Target{Kind: "Namespace", Name: name, Document: AnyDocument}
		out, changed, err := RemoveMetadataLabel(src, target, key)
		if err != nil {
			requireRefusal(t, out, changed, err)
			return
		}
		require.Equal(t, !bytes.Equal(src, out), changed)
		if !changed {
			return
		}
		removed, added := changedRegion(src, out)
		require.LessOrEqual(t, removed, 2, "lines removed or rewritten")
		require.LessOrEqual(t, added, 1, "lines added")
		require.Equal(t, bytes.HasPrefix(src, utf8BOM), bytes.HasPrefix(out, utf8BOM))
		s, err := load(out)
		require.NoError(t, err)
		obj, err := s.locate(target)
		require.NoError(t, err)
		labels, err := readStringMap(obj.node, keys("metadata", "labels"))
		require.NoError(t, err)
		require.NotContains(t, labels, key)
		again, changedAgain, err := RemoveMetadataLabel(out, target, key)
		require.NoError(t, err)
		require.False(t, changedAgain)
		require.Equal(t, out, again)
	})
}
