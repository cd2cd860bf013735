package yamledit

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/kedge-io/kedge/internal/testing/linediff"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	yaml "go.yaml.in/yaml/v3"
)

var update = flag.Bool("update", false, "rewrite after.yaml and error.txt of the golden cases")

const goldenRoot = "../../testdata/edit"

// goldenCase is testdata/edit/<case>/case.yaml: which call to make on before.yaml.
type goldenCase struct {
	Op     string `yaml:"op"`
	Target struct {
		Kind      string `yaml:"kind"`
		Name      string `yaml:"name"`
		Namespace string `yaml:"namespace"`
		Document  *int   `yaml:"document"`
	} `yaml:"target"`
	Set     map[string]string `yaml:"set"`
	Path    string            `yaml:"path"`
	Key     string            `yaml:"key"`
	Value   string            `yaml:"value"`
	Refusal RefusalCode       `yaml:"refusal"`
	Remove  []string          `yaml:"remove"`
}

// shapeOps are the golden cases of edits built on this package, run by the golden tests of the packages
// that make them.
var shapeOps = map[string]bool{"replace-selector-with-targetrefs": true}

func (c goldenCase) target() Target {
	t := Target{Kind: c.Target.Kind, Name: c.Target.Name, Namespace: c.Target.Namespace, Document: AnyDocument}
	if c.Target.Document != nil {
		t.Document = *c.Target.Document
	}
	return t
}

func (c goldenCase) run(src []byte) ([]byte, bool, error) {
	switch c.Op {
	case "", "set-pod-template-annotations":
		return SetPodTemplateAnnotations(src, c.target(), c.Set)
	case "add-kustomization-patch":
		return AddKustomizationPatch(src, c.Path)
	case "set-metadata-label":
		return SetMetadataLabel(src, c.target(), c.Key, c.Value)
	case "set-kustomization-label":
		return SetKustomizationLabel(src, c.Key, c.Value)
	case "remove-metadata-label":
		return RemoveMetadataLabel(src, c.target(), c.Key)
	case "remove-kustomization-label":
		return RemoveKustomizationLabel(src, c.Key)
	case "replace-kustomization-labels":
		return ReplaceKustomizationLabels(src, c.Key, c.Set, c.Remove)
	}
	panic("unknown op " + c.Op)
}

// touched is how many existing lines a call may rewrite: one per key (the replaced value, the line that
// loses an empty value, the line that gains a comma or a final line break), more for label keys set in
// several places.
func (c goldenCase) touched() int {
	if c.Op == "replace-kustomization-labels" {
		// Each removed label's line and its holder's, in each of two places.
		return 2 * (len(c.Remove) + 1)
	}
	if len(c.Set) > 0 {
		return len(c.Set)
	}
	if c.Op == "remove-kustomization-label" {
		// The label's line and its holder's, in each of two places.
		return 4
	}
	return 2
}

func readGoldenCases(t testing.TB) map[string]goldenCase {
	entries, err := os.ReadDir(goldenRoot)
	require.NoError(t, err)
	cases := map[string]goldenCase{}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(goldenRoot, e.Name(), "case.yaml"))
		require.NoError(t, err)
		var c goldenCase
		require.NoError(t, yaml.Unmarshal(raw, &c), e.Name())
		if !shapeOps[c.Op] {
			cases[e.Name()] = c
		}
	}
	require.NotEmpty(t, cases)
	return cases
}

func TestGolden(t *testing.T) {
	cases := readGoldenCases(t)
	names := make([]string, 0, len(cases))
	for name := range cases {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		c := cases[name]
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(goldenRoot, name)
			before, err := os.ReadFile(filepath.Join(dir, "before.yaml"))
			require.NoError(t, err)
			out, changed, err := c.run(before)
			if *update {
				writeGolden(t, dir, out, err)
			}
			if want, readErr := os.ReadFile(filepath.Join(dir, "error.txt")); readErr == nil {
				require.Error(t, err)
				var refused *RefusedError
				require.True(t, errors.As(err, &refused), "%T is not a *RefusedError", err)
				assert.Equal(t, strings.TrimSpace(string(want)), err.Error())
				assert.Equal(t, c.Refusal, refused.Code)
				assert.Nil(t, out)
				assert.False(t, changed)
				return
			}
			require.NoError(t, err)
			require.Empty(t, c.Refusal, "case expects a refusal")
			after, err := os.ReadFile(filepath.Join(dir, "after.yaml"))
			require.NoError(t, err)
			assert.Equal(t, string(after), string(out))
			assert.Equal(t, !bytes.Equal(before, after), changed)
			assert.LessOrEqual(t, len(linediff.Removed(before, out)), c.touched(), "existing lines rewritten")

			again, changedAgain, err := c.run(out)
			require.NoError(t, err, "second run")
			assert.False(t, changedAgain, "second run changed the file")
			assert.Equal(t, string(out), string(again))

			if c.Op == "" {
				got, err := PodTemplateAnnotations(out, c.target())
				require.NoError(t, err)
				for k, v := range c.Set {
					assert.Equal(t, v, got[k], k)
				}
			}
		})
	}
}

func writeGolden(t *testing.T, dir string, out []byte, err error) {
	afterPath, errPath := filepath.Join(dir, "after.yaml"), filepath.Join(dir, "error.txt")
	if err != nil {
		require.NoError(t, os.WriteFile(errPath, []byte(err.Error()+"\n"), 0o644))
		_ = os.Remove(afterPath)
		return
	}
	require.NoError(t, os.WriteFile(afterPath, out, 0o644))
	_ = os.Remove(errPath)
}

func linesWithBreaks(b []byte) []string {
	return strings.SplitAfter(string(b), "\n")
}

// holderLine is a metadata: or annotations: key (YAML or JSON): the lines an annotation edit may add, or
// rewrite when they hold an empty or flow value.
var holderLine = regexp.MustCompile(`^\s*"?(metadata|annotations)"?\s*:`)

// labelHolderLine is a key holding labels, which becomes `key: {}` when its last label is removed.
var labelHolderLine = regexp.MustCompile(`^\s*(-\s+)?"?(labels|commonLabels|pairs)"?\s*:`)

// patchesLine is a kustomization's patches: key, which listing a patch may add or rewrite.
var patchesLine = regexp.MustCompile(`^\s*"?patches"?\s*:`)

// TestGoldenChangesOnlyItsOwnLines holds every golden edit to what a reviewer should see in its diff: lines
// that carry the new value, the metadata:/annotations: (or patches:) keys it needed, and nothing else, not
// even a neighbour's line rewritten to gain a comma or a final line break. Layouts whose only line holds
// the whole collection cannot meet it, and are named here.
func TestGoldenChangesOnlyItsOwnLines(t *testing.T) {
	wholeLine := map[string]bool{
		"json-list": true, // every object of the List is on one line
		// A strategic-merge patch without a template: only kedge's own patch files are edited that way, and
		// their every line is kedge's.
		"missing-template-in-patch": true,
	}
	cases := readGoldenCases(t)
	for name, c := range cases {
		if wholeLine[name] {
			continue
		}
		dir := filepath.Join(goldenRoot, name)
		before, err := os.ReadFile(filepath.Join(dir, "before.yaml"))
		require.NoError(t, err)
		after, err := os.ReadFile(filepath.Join(dir, "after.yaml"))
		if err != nil {
			continue // a refused case
		}
		own := func(l string) bool {
			l = strings.TrimRight(l, "\r\n")
			switch c.Op {
			case "", "set-pod-template-annotations":
				for k := range c.Set {
					if strings.Contains(l, k+`":`) || strings.Contains(l, k+`':`) || strings.Contains(l, k+":") {
						return true
					}
				}
				return holderLine.MatchString(l)
			case "add-kustomization-patch":
				return strings.Contains(l, c.Path) || patchesLine.MatchString(l)
			case "remove-metadata-label", "remove-kustomization-label":
				return strings.Contains(l, c.Key) || labelHolderLine.MatchString(l)
			case "replace-kustomization-labels":
				for _, k := range c.Remove {
					if strings.Contains(l, k) {
						return true
					}
				}
				for k := range c.Set {
					if strings.Contains(l, k) {
						return true
					}
				}
				return labelHolderLine.MatchString(l)
			}
			return true
		}
		for _, l := range linediff.Removed(before, after) {
			assert.True(t, own(l), "%s: rewrites %q", name, l)
		}
		for _, l := range linediff.Removed(after, before) {
			assert.True(t, own(l), "%s: adds %q", name, l)
		}
	}
}
