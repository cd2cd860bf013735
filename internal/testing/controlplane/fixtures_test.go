package controlplane_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/kedge-io/kedge/internal/cluster"
)

const (
	proxyImage124 = "docker.io/istio/proxyv2:1.24.0"
	proxyImage123 = "docker.io/istio/proxyv2:1.23.2"
)

// startLive starts a live source and waits for its caches; it stops with
// the test.
func startLive(t *testing.T, cfg *rest.Config, opts cluster.LiveOptions) *cluster.Live {
	t.Helper()
	opts.Config = cfg
	live, err := cluster.NewLive(opts)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	require.NoError(t, live.Start(ctx))
	syncCtx, syncCancel := context.WithTimeout(ctx, 30*time.Second)
	defer syncCancel()
	require.NoError(t, live.WaitForSync(syncCtx))
	return live
}

func namespace(name string, labels map[string]string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

// injectorWebhooks are the webhooks of Istio's revision injector (and of a
// revision tag), as istiod's chart renders them. failurePolicy is Ignore so
// creating pods does not need a running istiod.
func injectorWebhooks(rev, service string) []admissionregistrationv1.MutatingWebhook {
	hook := func(name string, ns, obj []metav1.LabelSelectorRequirement) admissionregistrationv1.MutatingWebhook {
		return admissionregistrationv1.MutatingWebhook{
			Name:                    name,
			AdmissionReviewVersions: []string{"v1"},
			ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
				Name: service, Namespace: "istio-system", Path: ptr.To("/inject"), Port: ptr.To[int32](443),
			}},
			FailurePolicy:     ptr.To(admissionregistrationv1.Ignore),
			SideEffects:       ptr.To(admissionregistrationv1.SideEffectClassNone),
			TimeoutSeconds:    ptr.To[int32](1),
			NamespaceSelector: &metav1.LabelSelector{MatchExpressions: ns},
			ObjectSelector:    &metav1.LabelSelector{MatchExpressions: obj},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
			}},
		}
	}
	notFalse := metav1.LabelSelectorRequirement{Key: "sidecar.istio.io/inject", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"false"}}
	noInjection := metav1.LabelSelectorRequirement{Key: "istio-injection", Operator: metav1.LabelSelectorOpDoesNotExist}
	return []admissionregistrationv1.MutatingWebhook{
		hook("rev.namespace.sidecar-injector.istio.io",
			[]metav1.LabelSelectorRequirement{{Key: "istio.io/rev", Operator: metav1.LabelSelectorOpIn, Values: []string{rev}}, noInjection},
			[]metav1.LabelSelectorRequirement{notFalse}),
		hook("rev.object.sidecar-injector.istio.io",
			[]metav1.LabelSelectorRequirement{{Key: "istio.io/rev", Operator: metav1.LabelSelectorOpDoesNotExist}, noInjection},
			[]metav1.LabelSelectorRequirement{notFalse, {Key: "istio.io/rev", Operator: metav1.LabelSelectorOpIn, Values: []string{rev}}}),
	}
}

func injectorWebhookConfiguration(rev string) *admissionregistrationv1.MutatingWebhookConfiguration {
	return &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{
			Name:   "istio-sidecar-injector-" + rev,
			Labels: map[string]string{"istio.io/rev": rev, "app": "sidecar-injector"},
		},
		Webhooks: injectorWebhooks(rev, "istiod-"+rev),
	}
}

// otherWebhookConfiguration is a mutating webhook that is not Istio's.
func otherWebhookConfiguration(name string) *admissionregistrationv1.MutatingWebhookConfiguration {
	return &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:                    "defaults.widgets.example.com",
			AdmissionReviewVersions: []string{"v1"},
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://widgets.example.com/mutate")},
			FailurePolicy:           ptr.To(admissionregistrationv1.Ignore),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{"example.com"}, APIVersions: []string{"v1"}, Resources: []string{"widgets"}},
			}},
		}},
	}
}

func configMap(ns, name string, labels, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}, Data: data}
}

func podTemplate(app string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: app, Image: "registry.example.com/" + app + ":1.0.0"}}},
	}
}

func selector(app string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}
}

func ownedBy(apiVersion, kind, name string, uid types.UID) []metav1.OwnerReference {
	return []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: name, UID: uid, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
}

// sidecar is how a pod carries Istio's proxy: as a native sidecar
// (istio-proxy as an init container with restartPolicy Always), as a
// regular container, or not at all.
type sidecar int

const (
	noSidecar sidecar = iota
	nativeSidecar
	classicSidecar
)

// injectedPod is an application pod as it looks after injection.
func injectedPod(ns, name, app string, owners []metav1.OwnerReference, car sidecar, image string) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: name, OwnerReferences: owners,
			Labels: map[string]string{"app": app, "security.istio.io/tlsMode": "istio"},
			Annotations: map[string]string{
				"prometheus.io/scrape":                    "true",
				"checksum/config":                         "5d41402abc4b2a76b9719d911017c592",
				"kedge.io/restartedAt":                    "rev-1-24-0",
				"kubectl.kubernetes.io/default-container": app,
			},
		},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: app, Image: "registry.example.com/" + app + ":1.0.0",
				Env: []corev1.EnvVar{{Name: "MODE", Value: "live"}},
			}},
		},
	}
	proxy := corev1.Container{Name: "istio-proxy", Image: image, Args: []string{"proxy", "sidecar"}}
	switch car {
	case nativeSidecar:
		proxy.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
		pod.Spec.InitContainers = []corev1.Container{{Name: "istio-validation", Image: image}, proxy}
	case classicSidecar:
		pod.Spec.InitContainers = []corev1.Container{{Name: "istio-init", Image: image}}
		pod.Spec.Containers = append(pod.Spec.Containers, proxy)
	}
	if car != noSidecar {
		pod.Annotations["sidecar.istio.io/status"] = `{"initContainers":["istio-validation","istio-proxy"],"containers":null,"volumes":["istio-envoy"],"imagePullSecrets":null,"revision":"1-24-0"}`
		pod.Annotations["istio.io/rev"] = "1-24-0"
	}
	return pod
}

// createPod creates a pod and, as a kubelet would, reports it running.
func createPod(ctx context.Context, t *testing.T, client kubernetes.Interface, pod *corev1.Pod, started time.Time) *corev1.Pod {
	t.Helper()
	created, err := client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	require.NoError(t, err)
	created.Status.Phase = corev1.PodRunning
	created.Status.StartTime = &metav1.Time{Time: started}
	updated, err := client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, created, metav1.UpdateOptions{})
	require.NoError(t, err)
	return updated
}

type seeded struct {
	cartPod, paymentsPod *corev1.Pod
}

// seedCluster creates one object of every kind kedge reads, in the shapes
// Istio and the workload controllers give them.
func seedCluster(ctx context.Context, t *testing.T, client kubernetes.Interface) seeded {
	t.Helper()
	started := time.Date(2026, 5, 4, 9, 12, 33, 0, time.UTC)
	for _, ns := range []*corev1.Namespace{
		namespace("istio-system", nil),
		namespace("istio-canary", nil),
		namespace("shop", map[string]string{"istio.io/rev": "1-24-0"}),
		namespace("billing", map[string]string{"istio-injection": "enabled"}),
		namespace("batch", nil),
	} {
		_, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	for _, mwc := range []*admissionregistrationv1.MutatingWebhookConfiguration{
		injectorWebhookConfiguration("1-24-0"),
		otherWebhookConfiguration("widgets-defaulter"),
	} {
		_, err := client.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, mwc, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	values := `{"global":{"hub":"docker.io/istio","tag":"1.24.0","proxy":{"image":"proxyv2"}},"revision":"1-24-0"}`
	for _, cm := range []*corev1.ConfigMap{
		configMap("istio-system", "istio-sidecar-injector-1-24-0", map[string]string{"istio.io/rev": "1-24-0"}, map[string]string{"values": values, "config": "policy: enabled\n"}),
		// An older install without labels: found only by name, so only
		// where the Istio namespaces are named.
		configMap("istio-system", "istio-sidecar-injector", nil, map[string]string{"values": `{"global":{"hub":"docker.io/istio","tag":"1.23.2"}}`}),
		configMap("istio-system", "istio-ca-root-cert", map[string]string{"istio.io/config": "true"}, map[string]string{"root-cert.pem": "-----BEGIN CERTIFICATE-----\n"}),
		configMap("istio-canary", "istio-sidecar-injector-1-25-0", map[string]string{"istio.io/rev": "1-25-0"}, map[string]string{"values": `{"revision":"1-25-0"}`}),
		configMap("shop", "cart-config", nil, map[string]string{"mode": "live"}),
	} {
		_, err := client.CoreV1().ConfigMaps(cm.Namespace).Create(ctx, cm, metav1.CreateOptions{})
		require.NoError(t, err)
	}

	deployment, err := client.AppsV1().Deployments("shop").Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "cart", Namespace: "shop", Annotations: map[string]string{
			"kubectl.kubernetes.io/last-applied-configuration": `{"apiVersion":"apps/v1","kind":"Deployment"}`,
		}},
		Spec: appsv1.DeploymentSpec{Selector: selector("cart"), Template: podTemplate("cart")},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	rs, err := client.AppsV1().ReplicaSets("shop").Create(ctx, &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Name: "cart-7d9c8b6f5d", Namespace: "shop",
			Labels:          map[string]string{"app": "cart", "pod-template-hash": "7d9c8b6f5d"},
			Annotations:     map[string]string{"deployment.kubernetes.io/revision": "3"},
			OwnerReferences: ownedBy("apps/v1", "Deployment", deployment.Name, deployment.UID),
		},
		Spec: appsv1.ReplicaSetSpec{Selector: selector("cart"), Template: podTemplate("cart")},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	rsOwner := ownedBy("apps/v1", "ReplicaSet", rs.Name, rs.UID)
	cartPod := createPod(ctx, t, client, injectedPod("shop", "cart-7d9c8b6f5d-x2kqp", "cart", rsOwner, nativeSidecar, proxyImage124), started)
	createPod(ctx, t, client, injectedPod("shop", "cart-7d9c8b6f5d-q8w4n", "cart", rsOwner, nativeSidecar, proxyImage124), started)

	sts, err := client.AppsV1().StatefulSets("billing").Create(ctx, &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "payments", Namespace: "billing"},
		Spec:       appsv1.StatefulSetSpec{Selector: selector("payments"), Template: podTemplate("payments")},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	paymentsPod := createPod(ctx, t, client, injectedPod("billing", "payments-0", "payments",
		ownedBy("apps/v1", "StatefulSet", sts.Name, sts.UID), classicSidecar, proxyImage123), started)

	ds, err := client.AppsV1().DaemonSets("batch").Create(ctx, &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "node-agent", Namespace: "batch"},
		Spec:       appsv1.DaemonSetSpec{Selector: selector("node-agent"), Template: podTemplate("node-agent")},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	agent := injectedPod("batch", "node-agent-7rj2k", "node-agent", ownedBy("apps/v1", "DaemonSet", ds.Name, ds.UID), noSidecar, "")
	agent.Spec.HostNetwork = true
	createPod(ctx, t, client, agent, started)

	cron, err := client.BatchV1().CronJobs("batch").Create(ctx, &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "batch"},
		Spec: batchv1.CronJobSpec{Schedule: "0 3 * * *", JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
			Template: withRestartNever(podTemplate("nightly")),
		}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	job, err := client.BatchV1().Jobs("batch").Create(ctx, &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "nightly-29000000", Namespace: "batch", OwnerReferences: ownedBy("batch/v1", "CronJob", cron.Name, cron.UID)},
		Spec:       batchv1.JobSpec{Template: withRestartNever(podTemplate("nightly"))},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	createPod(ctx, t, client, injectedPod("batch", "nightly-29000000-5kq9z", "nightly",
		ownedBy("batch/v1", "Job", job.Name, job.UID), nativeSidecar, proxyImage124), started)

	createPod(ctx, t, client, injectedPod("shop", "debug", "debug", nil, noSidecar, ""), started)
	return seeded{cartPod: cartPod, paymentsPod: paymentsPod}
}

func withRestartNever(tmpl corev1.PodTemplateSpec) corev1.PodTemplateSpec {
	tmpl.Spec.RestartPolicy = corev1.RestartPolicyNever
	return tmpl
}
