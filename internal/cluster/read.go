package cluster

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kedge-io/kedge/internal/cluster/trim"
	"github.com/kedge-io/kedge/internal/mesh"
	"github.com/kedge-io/kedge/internal/objects"
)

// ReadSetup reads, once, what says how the cluster is set up for kedge,
// and nothing else: the mutating webhook configurations, the injector
// ConfigMaps (by their istio.io/rev label cluster-wide, or every ConfigMap
// of istioNamespaces) and Istio's ProxyConfigs, which say what the mesh
// injects, and the Flux Kustomizations and GitRepositories and the Argo CD
// Applications the API server serves, which say which repositories the
// cluster applies from. No pod and no workload is read, so it answers in
// a moment on any cluster. Custom resources whose CRD is not installed
// are left out.
func ReadSetup(ctx context.Context, cfg *rest.Config, istioNamespaces []string) (*objects.Set, error) {
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	set := &objects.Set{}
	webhooks, err := client.AdmissionregistrationV1().MutatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list mutatingwebhookconfigurations: %w", err)
	}
	set.MutatingWebhookConfigurations = webhooks.Items

	var configMaps []corev1.ConfigMap
	if len(istioNamespaces) == 0 {
		list, err := client.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{LabelSelector: mesh.LabelRev})
		if err != nil {
			return nil, fmt.Errorf("list configmaps with label %s: %w", mesh.LabelRev, err)
		}
		configMaps = list.Items
	}
	for _, ns := range slices.Compact(slices.Sorted(slices.Values(istioNamespaces))) {
		list, err := client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("list configmaps in namespace %s: %w", ns, err)
		}
		configMaps = append(configMaps, list.Items...)
	}
	for _, cm := range configMaps {
		if trim.IsInjectorConfigMap(&cm) {
			set.ConfigMaps = append(set.ConfigMaps, cm)
		}
	}

	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	served, err := servedCustomResources(disc)
	if err != nil {
		return nil, fmt.Errorf("discovery: %w", err)
	}
	for _, kind := range []string{kindProxyConfig, "Kustomization", "GitRepository", "Application"} {
		gvr, ok := served[kind]
		if !ok {
			continue
		}
		list, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("list %s.%s: %w", gvr.Resource, gvr.Group, err)
		}
		for i := range list.Items {
			if err := addCustom(set, &list.Items[i]); err != nil {
				return nil, fmt.Errorf("%s %s/%s: %w", kind, list.Items[i].GetNamespace(), list.Items[i].GetName(), err)
			}
		}
	}
	return set, nil
}

// addCustom decodes a custom resource as the live source's cache does and
// adds it to set.
func addCustom(set *objects.Set, u *unstructured.Unstructured) error {
	typed, err := trim.DecodeCustom(u)
	if err != nil {
		return err
	}
	switch o := typed.(type) {
	case *objects.ProxyConfig:
		set.ProxyConfigs = append(set.ProxyConfigs, *o)
	case *objects.Kustomization:
		set.Kustomizations = append(set.Kustomizations, *o)
	case *objects.GitRepository:
		set.GitRepositories = append(set.GitRepositories, *o)
	case *objects.Application:
		set.Applications = append(set.Applications, *o)
	}
	return nil
}
