package chaos

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kedge-io/kedge/internal/assemble"
	"github.com/kedge-io/kedge/internal/cluster/snapshot"
	"github.com/kedge-io/kedge/internal/config"
	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/plan"
	"github.com/kedge-io/kedge/internal/testing/treecopy"
)

// snapshotCase is testdata/bad/snapshot/<case>/case.yaml: files/ is laid
// over a copy of the demo cluster snapshot.
type snapshotCase struct {
	About    string      `json:"about"`
	Generate []generated `json:"generate"`
	// Error lists words the read error must contain (the file, the
	// document, the cause); empty means the snapshot must read.
	Error []string `json:"error"`
	// Same says what must equal the demo's: "plan" (workloads, their
	// pods and skips) or "workloads" (which workloads, why, and their
	// targets).
	Same string `json:"same"`
}

// snapshotOutcome is what reading a snapshot (and planning it, when it
// reads) gave, as the bounded child reports it.
type snapshotOutcome struct {
	Err  string
	Plan drift.Plan
}

// readSnapshotCase reads the snapshot dir and plans it without a
// repository (the child side of a snapshot case).
func readSnapshotCase(dir string) snapshotOutcome {
	set, err := snapshot.Read(dir)
	if err != nil {
		return snapshotOutcome{Err: err.Error()}
	}
	cfg, err := config.Load("", nil, nil)
	if err != nil {
		return snapshotOutcome{Err: err.Error()}
	}
	cfg.Cluster = Cluster
	res, err := plan.Build(set, assemble.PlanOptions(cfg, ""))
	if err != nil {
		return snapshotOutcome{Err: "plan: " + err.Error()}
	}
	return snapshotOutcome{Plan: res.Plan}
}

// TestBadSnapshotInput reads the demo snapshot spoiled by each case, each
// in a bounded child process (runBounded): a bad file fails the read with
// an error naming the file (a plan from a partial cluster would restart the
// wrong workloads), and what kedge does not read changes nothing.
func TestBadSnapshotInput(t *testing.T) {
	var demo snapshotOutcome
	runBounded(t, "snapshot", DemoCluster, &demo)
	require.Empty(t, demo.Err)

	for _, name := range caseDirs(t, "snapshot") {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(corpus, "snapshot", name)
			var c snapshotCase
			readCase(t, filepath.Join(dir, "case.yaml"), &c)
			require.NotEmpty(t, c.About, "say what the case is")
			require.True(t, len(c.Error) > 0 || c.Same != "", "a case either fails the read or changes nothing")

			snapshot := filepath.Join(t.TempDir(), "cluster")
			treecopy.Copy(t, DemoCluster, snapshot)
			if _, err := os.Stat(filepath.Join(dir, "files")); err == nil {
				treecopy.Copy(t, filepath.Join(dir, "files"), snapshot)
			}
			generate(t, snapshot, c.Generate)

			var got snapshotOutcome
			runBounded(t, "snapshot", snapshot, &got)
			if len(c.Error) > 0 {
				require.NotEmpty(t, got.Err, "the read must fail")
				for _, word := range c.Error {
					assert.Contains(t, got.Err, word)
				}
				return
			}
			require.Empty(t, got.Err)
			switch c.Same {
			case "plan":
				assert.Equal(t, demo.Plan.Workloads, got.Plan.Workloads)
				assert.Equal(t, demo.Plan.Skipped, got.Plan.Skipped)
			case "workloads":
				assert.Equal(t, workloadTargets(demo.Plan), workloadTargets(got.Plan))
			default:
				t.Fatalf("same: %q", c.Same)
			}
		})
	}
}

// workloadTargets is what a plan asks of each workload, without counts.
func workloadTargets(p drift.Plan) []string {
	var out []string
	for _, w := range p.Workloads {
		reasons := ""
		for _, r := range w.Reasons {
			reasons += string(r) + ","
		}
		out = append(out, w.Namespace+"/"+w.Kind+"/"+w.Name+" "+reasons+" "+w.Desired.Revision+" "+w.Desired.Image)
	}
	return out
}
