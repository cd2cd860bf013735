package service

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kedge-io/kedge/internal/testing/controlplane"
)

func TestLeaseNamespace(t *testing.T) {
	cases := []struct {
		name                            string
		configured, podNamespace, mount string
		kubeconfig                      string
		want, wantErr                   string
	}{
		{name: "configured wins", configured: "ops", podNamespace: "kedge", mount: "kedge", kubeconfig: "dev", want: "ops"},
		{name: "the downward API", podNamespace: "kedge", mount: "other", kubeconfig: "dev", want: "kedge"},
		{name: "the service account's namespace in a pod", mount: "kedge\n", kubeconfig: "dev", want: "kedge"},
		{name: "the kubeconfig context outside a pod", kubeconfig: "dev", want: "dev"},
		{name: "none known", wantErr: "set server.leaseNamespace"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("POD_NAMESPACE", tc.podNamespace)
			file := filepath.Join(t.TempDir(), "namespace")
			if tc.mount != "" {
				require.NoError(t, os.WriteFile(file, []byte(tc.mount), 0o600))
			}
			defer func(prev string) { serviceAccountNamespaceFile = prev }(serviceAccountNamespaceFile)
			serviceAccountNamespaceFile = file

			got, err := LeaseNamespace(tc.configured, tc.kubeconfig)
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestMaxFailoverOfTheDefaultTimings(t *testing.T) {
	// 15 s of lease, and twice a 2 s retry stretched by client-go's
	// jitter of 1.2: what deploy/README.md documents.
	assert.Equal(t, 23800*time.Millisecond, Election{}.MaxFailover())
	assert.Equal(t, 3*time.Second+2*550*time.Millisecond, Election{LeaseDuration: 3 * time.Second, RetryPeriod: 250 * time.Millisecond}.MaxFailover())
}

// TestSeizeLease runs against a real API server: a Lease whose holder no
// longer renews it is taken over and released after; one whose holder
// renews it is not, whether or not the caller asked to seize it.
func TestSeizeLease(t *testing.T) {
	cfg := controlplane.ControlPlane(t)
	client, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	ctx := t.Context()
	election := func(name, identity string) Election {
		return Election{Config: cfg, Namespace: "default", Name: name, Identity: identity,
			LeaseDuration: time.Second, RenewDeadline: 800 * time.Millisecond, RetryPeriod: 100 * time.Millisecond}
	}
	holder := func(name string) string {
		lease, err := client.CoordinationV1().Leases("default").Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		return ptr.Deref(lease.Spec.HolderIdentity, "")
	}

	t.Run("a holder that stopped renewing", func(t *testing.T) {
		// What a kedge killed without releasing its Lease leaves behind.
		long := metav1.NewMicroTime(time.Now().Add(-time.Hour))
		_, err := client.CoordinationV1().Leases("default").Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: "gone"},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("killed-replica"), LeaseDurationSeconds: ptr.To[int32](1),
				AcquireTime: &long, RenewTime: &long},
		}, metav1.CreateOptions{})
		require.NoError(t, err)

		err = WithLease(ctx, election("gone", "once"), func(context.Context) error { return errors.New("ran") })
		var held *LeaseHeldError
		require.ErrorAs(t, err, &held, "without seizing, any holder refuses")
		assert.Equal(t, "killed-replica", held.Holder)
		assert.Contains(t, err.Error(), "pass --force to take the Lease over")

		ran := false
		err = SeizeLease(ctx, election("gone", "once"), func(context.Context) error {
			ran = true
			assert.Equal(t, "once", holder("gone"), "held while the cycle runs")
			return nil
		})
		require.NoError(t, err)
		assert.True(t, ran)
		assert.Empty(t, holder("gone"), "released after")
	})

	t.Run("a holder that renews", func(t *testing.T) {
		leading := make(chan struct{})
		done := make(chan error, 1)
		leaderCtx, stop := context.WithCancel(ctx)
		go func() {
			done <- WithLease(leaderCtx, election("alive", "replica-a"), func(ctx context.Context) error {
				close(leading)
				<-ctx.Done()
				return nil
			})
		}()
		<-leading
		ran := false
		err := SeizeLease(ctx, election("alive", "once"), func(context.Context) error { ran = true; return nil })
		var held *LeaseHeldError
		require.ErrorAs(t, err, &held)
		assert.True(t, held.Alive)
		assert.Equal(t, "replica-a", held.Holder)
		assert.Contains(t, err.Error(), "keeps renewing it")
		assert.False(t, ran, "no cycle beside a live holder")
		assert.Equal(t, "replica-a", holder("alive"))
		stop()
		require.NoError(t, <-done)
	})
}
