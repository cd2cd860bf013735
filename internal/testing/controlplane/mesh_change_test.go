package controlplane_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/kedge-io/kedge/internal/cluster"
	"github.com/kedge-io/kedge/internal/testing/controlplane"
)

// reasons collects what OnMeshChange reports.
type reasons struct {
	mu   sync.Mutex
	seen []string
}

func (r *reasons) add(reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = append(r.seen, reason)
}

func (r *reasons) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.seen
	r.seen = nil
	return out
}

func (r *reasons) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.seen)
}

// quiet is how long a step waits after its expected reports for any
// unexpected one; resyncs happen every resync period, so it spans several.
const (
	resync = 300 * time.Millisecond
	quiet  = 4 * resync
)

func TestLiveReportsMeshChanges(t *testing.T) {
	cfg := controlplane.ControlPlane(t)
	client := kubernetes.NewForConfigOrDie(cfg)
	ctx := t.Context()

	for _, ns := range []*corev1.Namespace{namespace("istio-system", nil), namespace("shop", map[string]string{"istio.io/rev": "1-24-0"})} {
		_, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	_, err := client.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, injectorWebhookConfiguration("1-24-0"), metav1.CreateOptions{})
	require.NoError(t, err)
	for _, cm := range []*corev1.ConfigMap{
		configMap("istio-system", "istio-sidecar-injector-1-24-0", map[string]string{"istio.io/rev": "1-24-0"}, map[string]string{"values": `{"global":{"tag":"1.24.0"}}`}),
		configMap("istio-system", "istio-ca-root-cert", nil, map[string]string{"root-cert.pem": "a"}),
	} {
		_, err := client.CoreV1().ConfigMaps(cm.Namespace).Create(ctx, cm, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	const pods, updatesPerPod = 20, 50
	for i := range pods {
		createPod(ctx, t, client, injectedPod("shop", fmt.Sprintf("cart-%02d", i), "cart", nil, nativeSidecar, proxyImage124), time.Now())
	}

	got := &reasons{}
	// Named Istio namespaces: the cache then also holds ConfigMaps that are
	// not the injector's, whose changes must not count.
	live := startLive(t, cfg, cluster.LiveOptions{IstioNamespaces: []string{"istio-system"}, Resync: resync})
	live.OnMeshChange(got.add)

	mwcs := client.AdmissionregistrationV1().MutatingWebhookConfigurations()
	namespaces := client.CoreV1().Namespaces()
	configMaps := client.CoreV1().ConfigMaps("istio-system")
	patchNamespace := func(name, body string) {
		t.Helper()
		_, err := namespaces.Patch(ctx, name, types.MergePatchType, []byte(body), metav1.PatchOptions{})
		require.NoError(t, err)
	}
	patchWebhooks := func(name, body string) {
		t.Helper()
		_, err := mwcs.Patch(ctx, name, types.MergePatchType, []byte(body), metav1.PatchOptions{})
		require.NoError(t, err)
	}
	patchConfigMap := func(name, body string) {
		t.Helper()
		_, err := configMaps.Patch(ctx, name, types.MergePatchType, []byte(body), metav1.PatchOptions{})
		require.NoError(t, err)
	}
	// updateWebhooks edits the injector's webhooks in place; a merge patch
	// would replace the whole list.
	updateWebhooks := func(edit func(*admissionregistrationv1.MutatingWebhookConfiguration)) {
		t.Helper()
		mwc, err := mwcs.Get(ctx, "istio-sidecar-injector-1-24-0", metav1.GetOptions{})
		require.NoError(t, err)
		edit(mwc)
		_, err = mwcs.Update(ctx, mwc, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	const injectorChanged = "MutatingWebhookConfiguration istio-sidecar-injector-1-24-0 changed"

	// Steps that must not be reported are followed, in the same step, by
	// one that must, on the same informer: events of one informer arrive in
	// order, so when the later one is seen the earlier one was handled.
	steps := []struct {
		name string
		do   func()
		want []string
	}{
		{
			name: "objects present at start are not reported",
			do:   func() {},
		},
		{
			name: "a namespace relabel is reported",
			do:   func() { patchNamespace("shop", `{"metadata":{"labels":{"istio.io/rev":"1-25-0"}}}`) },
			want: []string{"Namespace shop labels changed"},
		},
		{
			name: "a namespace annotation is not, a label removal is",
			do: func() {
				patchNamespace("shop", `{"metadata":{"annotations":{"owner":"storefront"}}}`)
				patchNamespace("shop", `{"metadata":{"labels":{"istio.io/rev":null}}}`)
			},
			want: []string{"Namespace shop labels changed"},
		},
		{
			name: "an injector selector change is reported",
			do: func() {
				updateWebhooks(func(m *admissionregistrationv1.MutatingWebhookConfiguration) {
					m.Webhooks[0].NamespaceSelector.MatchExpressions[0].Values = []string{"1-24-0", "prod"}
				})
			},
			want: []string{injectorChanged},
		},
		{
			name: "a rotated CA bundle is not",
			do: func() {
				updateWebhooks(func(m *admissionregistrationv1.MutatingWebhookConfiguration) {
					for i := range m.Webhooks {
						m.Webhooks[i].ClientConfig.CABundle = selfSignedCA(t)
					}
				})
				patchWebhooks("istio-sidecar-injector-1-24-0", `{"metadata":{"labels":{"istio.io/rev":"1-24-1"}}}`)
			},
			want: []string{injectorChanged},
		},
		{
			name: "a revision tag added and deleted is reported",
			do: func() {
				tag := &admissionregistrationv1.MutatingWebhookConfiguration{
					ObjectMeta: metav1.ObjectMeta{Name: "istio-revision-tag-prod", Labels: map[string]string{"istio.io/tag": "prod", "istio.io/rev": "1-24-0"}},
					Webhooks:   injectorWebhooks("prod", "istiod-1-24-0"),
				}
				_, err := mwcs.Create(ctx, tag, metav1.CreateOptions{})
				require.NoError(t, err)
				require.NoError(t, mwcs.Delete(ctx, tag.Name, metav1.DeleteOptions{}))
			},
			want: []string{
				"MutatingWebhookConfiguration istio-revision-tag-prod added",
				"MutatingWebhookConfiguration istio-revision-tag-prod deleted",
			},
		},
		{
			name: "another product's webhook configuration is not",
			do: func() {
				_, err := mwcs.Create(ctx, otherWebhookConfiguration("widgets-defaulter"), metav1.CreateOptions{})
				require.NoError(t, err)
				patchWebhooks("widgets-defaulter", `{"metadata":{"labels":{"team":"widgets"}}}`)
				require.NoError(t, mwcs.Delete(ctx, "widgets-defaulter", metav1.DeleteOptions{}))
				patchWebhooks("istio-sidecar-injector-1-24-0", `{"metadata":{"labels":{"istio.io/rev":"1-24-0"}}}`)
			},
			want: []string{injectorChanged},
		},
		{
			name: "an injector ConfigMap change is reported, another ConfigMap's is not",
			do: func() {
				patchConfigMap("istio-ca-root-cert", `{"data":{"root-cert.pem":"b"}}`)
				patchConfigMap("istio-sidecar-injector-1-24-0", `{"data":{"values":"{\"global\":{\"tag\":\"1.24.1\"}}"}}`)
			},
			want: []string{"ConfigMap istio-system/istio-sidecar-injector-1-24-0 changed"},
		},
		{
			name: "an injector ConfigMap added and deleted is reported",
			do: func() {
				cm := configMap("istio-system", "istio-sidecar-injector-canary", map[string]string{"istio.io/rev": "canary"}, map[string]string{"values": "{}"})
				_, err := configMaps.Create(ctx, cm, metav1.CreateOptions{})
				require.NoError(t, err)
				require.NoError(t, configMaps.Delete(ctx, cm.Name, metav1.DeleteOptions{}))
			},
			want: []string{
				"ConfigMap istio-system/istio-sidecar-injector-canary added",
				"ConfigMap istio-system/istio-sidecar-injector-canary deleted",
			},
		},
		{
			name: fmt.Sprintf("%d pod updates are not reported", pods*updatesPerPod),
			do: func() {
				updatePods(ctx, t, client, pods, updatesPerPod)
				// Every update must have reached the cache before the
				// count is taken.
				require.Eventually(t, func() bool {
					set := live.Set()
					for _, p := range set.Pods {
						if p.Labels["round"] != fmt.Sprint(updatesPerPod) {
							return false
						}
					}
					return len(set.Pods) == pods
				}, 30*time.Second, 50*time.Millisecond)
			},
		},
	}
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			step.do()
			if len(step.want) > 0 {
				require.Eventually(t, func() bool { return got.count() >= len(step.want) }, 10*time.Second, 10*time.Millisecond,
					"waiting for %q", step.want)
			}
			time.Sleep(quiet)
			assert.Equal(t, step.want, got.take())
		})
	}
}

// updatePods changes a label on every pod, n times each, from a few
// clients at once as kubelets and controllers would.
func updatePods(ctx context.Context, t *testing.T, client kubernetes.Interface, pods, n int) {
	t.Helper()
	start := time.Now()
	var g errgroup.Group
	g.SetLimit(4)
	for i := range pods {
		g.Go(func() error {
			for round := 1; round <= n; round++ {
				body := fmt.Sprintf(`{"metadata":{"labels":{"round":"%d"}}}`, round)
				if _, err := client.CoreV1().Pods("shop").Patch(ctx, fmt.Sprintf("cart-%02d", i), types.MergePatchType, []byte(body), metav1.PatchOptions{}); err != nil {
					return err
				}
			}
			return nil
		})
	}
	require.NoError(t, g.Wait())
	t.Logf("%d pod updates in %s", pods*n, time.Since(start).Round(time.Millisecond))
}

// selfSignedCA is a PEM certificate as istiod writes into caBundle.
func selfSignedCA(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{Organization: []string{"cluster.local"}},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
