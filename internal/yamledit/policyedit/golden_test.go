package policyedit

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

	"github.com/kedge-io/kedge/internal/yamledit"
)

var update = flag.Bool("update", false, "rewrite after.yaml and error.txt of the golden cases")

const goldenRoot = "../../../testdata/edit"

// goldenOp is the op of testdata/edit/<case>/case.yaml this package makes; yamledit's golden test runs the
// others.
const goldenOp = "replace-selector-with-targetrefs"

// goldenCase is the part of case.yaml this op reads: the policy, its selector's matchLabels (set) and the
// Services it attaches to.
type goldenCase struct {
	Op     string `yaml:"op"`
	Target struct {
		Kind      string `yaml:"kind"`
		Name      string `yaml:"name"`
		Namespace string `yaml:"namespace"`
	} `yaml:"target"`
	Set        map[string]string    `yaml:"set"`
	Refusal    yamledit.RefusalCode `yaml:"refusal"`
	TargetRefs []string             `yaml:"targetRefs"`
}

func (c goldenCase) run(src []byte) ([]byte, bool, error) {
	refs := make([]TargetRef, len(c.TargetRefs))
	for i, name := range c.TargetRefs {
		refs[i] = TargetRef{Kind: "Service", Name: name}
	}
	t := yamledit.Target{Kind: c.Target.Kind, Name: c.Target.Name, Namespace: c.Target.Namespace, Document: yamledit.AnyDocument}
	return ReplaceSelectorWithTargetRefs(src, t, c.Set, refs)
}

// policyAttachmentLine is a line of a policy's selector or of the targetRefs that replace it.
var policyAttachmentLine = regexp.MustCompile(`^\s*(-\s+)?(selector|matchLabels|targetRefs|kind: Service|group: ""|name: [a-z0-9-]+)\s*:?\s*$`)

// own tells the lines a reviewer should see in the diff: the selector's, and the targetRefs' that replace it.
func (c goldenCase) own(l string) bool {
	l = strings.TrimRight(l, "\r\n")
	for k := range c.Set {
		if strings.Contains(l, k+":") {
			return true
		}
	}
	return policyAttachmentLine.MatchString(l)
}

func TestGolden(t *testing.T) {
	entries, err := os.ReadDir(goldenRoot)
	require.NoError(t, err)
	var names []string
	cases := map[string]goldenCase{}
	for _, e := range entries {
		raw, err := os.ReadFile(filepath.Join(goldenRoot, e.Name(), "case.yaml"))
		require.NoError(t, err)
		var c goldenCase
		require.NoError(t, yaml.Unmarshal(raw, &c), e.Name())
		if c.Op == goldenOp {
			names, cases[e.Name()] = append(names, e.Name()), c
		}
	}
	require.NotEmpty(t, names)
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
				var refused *yamledit.RefusedError
				require.True(t, errors.As(err, &refused), "%v is not a *RefusedError", err)
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
			removed := linediff.Removed(before, out)
			// selector:, matchLabels: and a line per label.
			assert.LessOrEqual(t, len(removed), 2+len(c.Set), "existing lines rewritten")
			for _, l := range removed {
				assert.True(t, c.own(l), "rewrites %q", l)
			}
			for _, l := range linediff.Removed(out, before) {
				assert.True(t, c.own(l), "adds %q", l)
			}

			again, changedAgain, err := c.run(out)
			require.NoError(t, err, "second run")
			assert.False(t, changedAgain, "second run changed the file")
			assert.Equal(t, string(out), string(again))
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
