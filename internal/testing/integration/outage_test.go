package integration

import (
	"bufio"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/klog/v2"

	"github.com/kedge-io/kedge/internal/service"
)

// clientGoLines reads the JSON lines client-go logged.
func clientGoLines(t *testing.T, logs *syncBuffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(logs.String()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var line map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &line))
		out = append(out, line)
	}
	return out
}

// While the API server is away, every informer and the leader elector
// retry and fail; routed as `kedge run` routes client-go's logs, the
// outage is one warning when it starts and one, with its length, when it
// ends, and no ERROR line.
func TestAPIServerOutageIsTwoWarnings(t *testing.T) {
	const quiet = 10 * time.Second
	plane := restartableControlPlane(t)
	sa := identity{asServiceAccount: true}.restConfigFor(plane.Config)
	clientGo := &syncBuffer{}
	klog.SetSlogLogger(slog.New(service.QuietAPIErrors(slog.NewJSONHandler(io.MultiWriter(clientGo, t.Output()), nil), quiet, nil)))
	t.Cleanup(klog.ClearLogger)

	w := newWorld(t)
	r := w.startReplica(t, "kedge", replicaOptions{
		kube: sa,
		election: &service.Election{
			Config: sa, Namespace: kedgeNamespace, Name: "kedge", Identity: "kedge",
			LeaseDuration: leaseDuration, RenewDeadline: renewDeadline, RetryPeriod: retryPeriod,
		},
	})
	eventually(t, time.Minute, func() bool { return r.recorder.finished() == 1 }, "the start cycle")
	before := len(clientGoLines(t, clientGo))

	plane.RestartAPIServer(t, 5*time.Second)
	eventually(t, 2*time.Minute, func() bool { return strings.Contains(clientGo.String(), "Kubernetes API errors stopped") }, "the outage summarised once errors stop")

	var warnings, errorLines int
	var summary map[string]any
	for _, line := range clientGoLines(t, clientGo)[before:] {
		switch line["level"] {
		case "ERROR":
			errorLines++
		case "WARN":
			warnings++
			if line["msg"] == "Kubernetes API errors stopped" {
				summary = line
			}
		}
	}
	require.NotNil(t, summary)
	t.Logf("outage of 5 s: %v client-go errors over %v, logged as %d warnings", summary["errors"], summary["lasted"], warnings)
	assert.Zero(t, errorLines, "no ERROR line during the outage")
	assert.Equal(t, 2, warnings, "one warning as the errors start, one as they stop")
	assert.Greater(t, summary["errors"], float64(1), "several errors were counted, not logged")
	assert.NotContains(t, clientGo.String(), token)
}
