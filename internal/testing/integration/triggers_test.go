package integration

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/kedge-io/kedge/internal/service"
)

const (
	// debounce is short so the test is quick, long enough to tell a
	// debounced cycle from an immediate one.
	debounce = 500 * time.Millisecond
	// informerResync replays every cached object this often; replays must
	// never look like changes.
	informerResync = 250 * time.Millisecond
	// quiet is how long a step waits after its cycle for any other one.
	quiet = 3 * debounce
)

// meshChange is something done to the cluster; it returns when the last
// write was sent.
type meshChange func(ctx context.Context, t *testing.T, admin kubernetes.Interface) (lastWrite time.Time)

func relabelNamespace(ns, key, value string) meshChange {
	return func(ctx context.Context, t *testing.T, admin kubernetes.Interface) time.Time {
		t.Helper()
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, key, value)
		sent := time.Now()
		_, err := admin.CoreV1().Namespaces().Patch(ctx, ns, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		require.NoError(t, err)
		return sent
	}
}

// moveTag points a revision tag at another revision, as `istioctl tag set
// --overwrite` does: the MWC's istio.io/rev label and its webhooks'
// service.
func moveTag(tag, revision string) meshChange {
	return func(ctx context.Context, t *testing.T, admin kubernetes.Interface) time.Time {
		t.Helper()
		mwcs := admin.AdmissionregistrationV1().MutatingWebhookConfigurations()
		mwc, err := mwcs.Get(ctx, "istio-revision-tag-"+tag, metav1.GetOptions{})
		require.NoError(t, err)
		mwc.Labels["istio.io/rev"] = revision
		service := "istiod"
		if revision != "default" {
			service += "-" + revision
		}
		for i := range mwc.Webhooks {
			if s := mwc.Webhooks[i].ClientConfig.Service; s != nil {
				s.Name = service
			}
		}
		sent := time.Now()
		_, err = mwcs.Update(ctx, mwc, metav1.UpdateOptions{})
		require.NoError(t, err)
		return sent
	}
}

func all(changes ...meshChange) meshChange {
	return func(ctx context.Context, t *testing.T, admin kubernetes.Interface) time.Time {
		var last time.Time
		for _, c := range changes {
			last = c(ctx, t, admin)
			time.Sleep(debounce / 10)
		}
		return last
	}
}

// churnPods updates pods n times (labels and annotations, as controllers
// and kubelets do all day), spread over every pod, from several writers.
func churnPods(n int) meshChange {
	return func(ctx context.Context, t *testing.T, admin kubernetes.Interface) time.Time {
		t.Helper()
		pods, err := admin.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		require.NotEmpty(t, pods.Items)
		const writers = 8
		var wg sync.WaitGroup
		errs := make(chan error, writers)
		for w := range writers {
			wg.Go(func() {
				for i := w; i < n; i += writers {
					p := pods.Items[i%len(pods.Items)]
					patch := fmt.Sprintf(`{"metadata":{"labels":{"churn":"%d"},"annotations":{"kedge.test/churn":"%d"}}}`, i, i)
					if _, err := admin.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
						errs <- err
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		return time.Now()
	}
}

func TestMeshChangesTriggerOneDebouncedCycle(t *testing.T) {
	steps := []struct {
		name       string
		change     meshChange
		wantCycles int
	}{
		{name: "namespace relabel", change: relabelNamespace("search", "istio.io/rev", "stable"), wantCycles: 1},
		{name: "revision tag move", change: moveTag("stable", "default"), wantCycles: 1},
		{
			name: "a burst of relabels and a tag move",
			change: all(
				relabelNamespace("search", "istio.io/rev", "1-25-0"),
				relabelNamespace("catalog", "istio-injection", "disabled"),
				relabelNamespace("catalog", "istio-injection", "enabled"),
				moveTag("stable", "1-25-0"),
			),
			wantCycles: 1,
		},
		{name: "1,000 pod updates", change: churnPods(1000), wantCycles: 0},
		{name: "a non-injection namespace label", change: relabelNamespace("shop", "team", "storefront"), wantCycles: 1},
	}
	for _, id := range identities {
		t.Run(id.name, func(t *testing.T) {
			admin := controlPlane(t)
			adminClient, err := kubernetes.NewForConfig(admin)
			require.NoError(t, err)
			w := newWorld(t)
			r := w.startReplica(t, "kedge", replicaOptions{
				kube:           id.restConfigFor(admin),
				informerResync: informerResync,
				scheduler:      service.SchedulerOptions{Debounce: debounce},
			})
			eventually(t, 30*time.Second, func() bool { return r.recorder.finished() == 1 }, "the start cycle")
			require.True(t, r.isReady())
			start := r.recorder.all()[0]
			require.NoError(t, start.err)
			require.NotEmpty(t, start.report.Plan.Workloads)

			for _, st := range steps {
				t.Run(st.name, func(t *testing.T) {
					before := r.recorder.count()
					sent := st.change(t.Context(), t, adminClient)
					if st.wantCycles == 0 {
						time.Sleep(quiet)
						assert.Equal(t, before, r.recorder.count(), "no cycle")
						return
					}
					eventually(t, debounce+10*time.Second, func() bool { return r.recorder.count() > before }, "a cycle after the change")
					runs := r.recorder.all()
					c := runs[before]
					latency := c.start.Sub(sent)
					assert.GreaterOrEqual(t, latency, debounce, "the cycle waited for the debounce")
					assert.Less(t, latency, debounce+2*time.Second, "and not much longer")
					t.Logf("%s: change → cycle start %s (debounce %s)", st.name, latency.Round(time.Millisecond), debounce)

					eventually(t, time.Minute, func() bool { return r.recorder.finished() == before+st.wantCycles }, "the cycle ends")
					time.Sleep(quiet)
					assert.Equal(t, before+st.wantCycles, r.recorder.count(), "exactly %d cycle(s)", st.wantCycles)
					assert.NoError(t, r.recorder.all()[before].err)
				})
			}
			assert.NotContains(t, r.logs.String(), token, "the token never reaches the log")
		})
	}
}

// Without a debounce a cycle starts as soon as the informer sees the
// change: this is what the cluster adds to the configured debounce.
func TestMeshChangeToCycleLatencyWithoutDebounce(t *testing.T) {
	admin := controlPlane(t)
	adminClient, err := kubernetes.NewForConfig(admin)
	require.NoError(t, err)
	w := newWorld(t)
	r := w.startReplica(t, "kedge", replicaOptions{kube: admin})
	eventually(t, 30*time.Second, func() bool { return r.recorder.finished() == 1 }, "the start cycle")

	var latencies []time.Duration
	for i := range 5 {
		before := r.recorder.count()
		sent := relabelNamespace("search", "kedge.test/step", fmt.Sprint(i))(t.Context(), t, adminClient)
		eventually(t, 10*time.Second, func() bool { return r.recorder.count() > before }, "a cycle")
		latencies = append(latencies, r.recorder.all()[before].start.Sub(sent))
		eventually(t, time.Minute, func() bool { return r.recorder.finished() == before+1 }, "the cycle ends")
	}
	for _, l := range latencies {
		assert.Less(t, l, time.Second)
	}
	t.Logf("change → cycle start without debounce: %v", latencies)
}
