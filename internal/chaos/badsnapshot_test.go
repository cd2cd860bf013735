package chaos

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kedge-io/kedge/internal/assemble"
	"github.com/kedge-io/kedge/internal/cluster"
	"github.com/kedge-io/kedge/internal/config"
	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/objects"
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

// TestBadSnapshotInput reads the demo snapshot spoiled by each case: a bad
// file fails the read with an error naming the file (a plan from a partial
// cluster would restart the wrong workloads), and what kedge does not read
// changes nothing. Either way the answer comes quickly.
func TestBadSnapshotInput(t *testing.T) {
	cfg, err := config.Load("", nil, nil)
	require.NoError(t, err)
	cfg.Cluster = Cluster
	demo := planOf(t, cfg, DemoCluster)

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

			type read struct {
				set *objects.Set
				err error
			}
			r := within(t, time.Minute, func() read {
				set, err := cluster.ReadSnapshot(snapshot)
				return read{set, err}
			})
			if len(c.Error) > 0 {
				require.Error(t, r.err)
				for _, word := range c.Error {
					assert.Contains(t, r.err.Error(), word)
				}
				return
			}
			require.NoError(t, r.err)
			got := planOf(t, cfg, snapshot)
			switch c.Same {
			case "plan":
				assert.Equal(t, demo.Workloads, got.Workloads)
				assert.Equal(t, demo.Skipped, got.Skipped)
			case "workloads":
				assert.Equal(t, workloadTargets(demo), workloadTargets(got))
			default:
				t.Fatalf("same: %q", c.Same)
			}
		})
	}
}

func planOf(t *testing.T, cfg *config.Config, snapshot string) drift.Plan {
	t.Helper()
	set, err := cluster.ReadSnapshot(snapshot)
	require.NoError(t, err)
	res, err := plan.Build(set, assemble.PlanOptions(cfg, ""))
	require.NoError(t, err)
	return res.Plan
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
