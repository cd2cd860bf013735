package integration

import (
	"fmt"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kedge-io/kedge/internal/service"
)

// TestFailoverAfterKill measures what deploy/README.md documents: two
// `kedge run` processes as deploy/ runs them (its ServiceAccount, the
// default Lease timings), the leader killed with SIGKILL, so it releases
// nothing; the time until the other holds the Lease. It must stay within
// service.Election.MaxFailover. KEDGE_FAILOVER_KILLS kills more than once,
// a fresh standby started each time, to measure a spread.
func TestFailoverAfterKill(t *testing.T) {
	bin := buildKedge(t)
	admin := controlPlane(t)
	adminClient, err := kubernetes.NewForConfig(admin)
	require.NoError(t, err)
	w := newWorld(t)
	kubeconfig := writeKubeconfigAs(t, admin, serviceAccountUser(kedgeNamespace, kedgeServiceAccount),
		[]string{"system:serviceaccounts", "system:serviceaccounts:" + kedgeNamespace, "system:authenticated"})
	kills := 1
	if n, err := strconv.Atoi(os.Getenv("KEDGE_FAILOVER_KILLS")); err == nil && n > 0 {
		kills = n
	}

	type replica struct {
		pod  string
		addr string
		p    *started
	}
	start := func(pod string) *replica {
		addr := freeAddress(t)
		cfgPath := writeRunConfig(t, w, map[string]any{
			"source": map[string]any{"kubeconfig": kubeconfig},
			"server": map[string]any{"address": addr, "leaseNamespace": kedgeNamespace},
		})
		r := &replica{pod: pod, addr: addr, p: startKedge(t, bin, []string{"KEDGE_GITHUB_TOKEN=" + token, "POD_NAME=" + pod}, "run", "--config", cfgPath)}
		eventually(t, time.Minute, func() bool {
			code, _ := scrape("http://" + addr + "/readyz")
			return code == http.StatusOK
		}, "%s ready", pod)
		return r
	}
	holder := func() string {
		lease, err := adminClient.CoordinationV1().Leases(kedgeNamespace).Get(t.Context(), "kedge", metav1.GetOptions{})
		if err != nil || lease.Spec.HolderIdentity == nil {
			return ""
		}
		pod, _, _ := strings.Cut(*lease.Spec.HolderIdentity, "_")
		return pod
	}

	replicas := map[string]*replica{}
	for _, pod := range []string{"kedge-0", "kedge-1"} {
		replicas[pod] = start(pod)
	}
	eventually(t, time.Minute, func() bool { return replicas[holder()] != nil }, "one replica leads")

	bound := service.Election{}.MaxFailover()
	var took []time.Duration
	for i := range kills {
		leader := replicas[holder()]
		require.NotNil(t, leader)
		killed := time.Now()
		require.NoError(t, leader.p.cmd.Process.Signal(syscall.SIGKILL))
		<-leader.p.exited
		delete(replicas, leader.pod)
		eventually(t, bound+10*time.Second, func() bool { h := holder(); return h != "" && h != leader.pod }, "another replica takes the Lease")
		failover := time.Since(killed)
		took = append(took, failover)
		assert.LessOrEqual(t, failover, bound+time.Second, "within the documented bound (1 s for polling the Lease)")
		for _, r := range replicas {
			_, body := scrape("http://" + r.addr + "/metrics")
			assert.Contains(t, body, "kedge_leader 1", "%s says it leads", r.pod)
		}
		replicas[fmt.Sprintf("kedge-%d", i+2)] = start(fmt.Sprintf("kedge-%d", i+2))
	}
	sorted := append([]time.Duration(nil), took...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	t.Logf("failover after SIGKILL, %d kills: min %s, median %s, max %s (bound %s); all: %v",
		len(took), sorted[0].Round(100*time.Millisecond), sorted[len(sorted)/2].Round(100*time.Millisecond),
		sorted[len(sorted)-1].Round(100*time.Millisecond), bound, took)
}
