// Package cluster reads the objects kedge needs from a live cluster. Live
// keeps them in client-go informer caches, trimmed to what kedge reads
// (internal/cluster/trim), hands out a Set of them on demand, says when the
// mesh (not a pod) changed so a plan is due, and says which caches cannot
// refresh and why. ReadSetup reads once what says how the cluster is set up
// for kedge, and the permission checks ask the API server what the
// credentials lack before an informer retries a forbidden list forever.
package cluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	admissioninformers "k8s.io/client-go/informers/admissionregistration/v1"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	batchinformers "k8s.io/client-go/informers/batch/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/kedge-io/kedge/internal/ambient"
	"github.com/kedge-io/kedge/internal/cluster/trim"
	"github.com/kedge-io/kedge/internal/mesh"
	"github.com/kedge-io/kedge/internal/objects"
)

// LiveOptions configures the live cluster source.
type LiveOptions struct {
	// Config reaches the API server (kubeconfig or in-cluster).
	Config *rest.Config
	// IstioNamespaces are where Istio's ConfigMaps live: the injector's,
	// the mesh config and istio-cni's istio-cni-config (which istio-cni's
	// chart installs in the namespace it is released to, istio-system or
	// kube-system as often as not). Empty means every namespace: the
	// ConfigMaps labelled istio.io/rev, which Istio's charts put on each of
	// them, and istio-cni-config by name wherever it is, labelled or not.
	IstioNamespaces []string
	// Resync replays every cached object to the handlers at this period;
	// 0 disables it. Replays never count as mesh changes.
	Resync time.Duration
	// OptOutAnnotation is workloads.optOutAnnotation; setting, changing
	// or removing it on a namespace or workload is reported like a mesh
	// change. Empty means drift's default.
	OptOutAnnotation string
}

// Live keeps the objects kedge reads in informer caches, trimmed to what
// kedge needs, and tells its user when the mesh (not a pod) changed.
type Live struct {
	opts      LiveOptions
	discovery discovery.DiscoveryInterface
	dynamic   dynamic.Interface
	trim      *trim.Trimmer

	core       informers.SharedInformerFactory
	configMaps []informers.SharedInformerFactory
	custom     dynamicinformer.DynamicSharedInformerFactory

	namespaces, pods, replicaSets, deployments, statefulSets, daemonSets cache.SharedIndexInformer
	nodes, services                                                      cache.SharedIndexInformer
	jobs, cronJobs, webhooks                                             cache.SharedIndexInformer
	configMapInformers                                                   []cache.SharedIndexInformer
	customInformers                                                      map[string]cache.SharedIndexInformer // by kind

	mu        sync.Mutex
	started   bool
	listeners []func(reason string)
	// failures holds the caches whose lists or watches fail, with the
	// last error, so a cache that never syncs or no longer refreshes
	// (RBAC, a missing API) says why; healthListeners hear when one
	// begins to fail or refreshes again.
	failures        map[cachedResource]failure
	healthListeners []func()
	// changes counts the events that changed what the caches hold;
	// informerChanges counts them per informer.
	changes         atomic.Uint64
	informerChanges map[cache.SharedIndexInformer]*atomic.Uint64

	// copies holds each informer's last copy into a Set, which the next
	// Set shares while that informer has not changed: a change in one
	// namespace's labels does not copy a hundred thousand pods.
	copyMu sync.Mutex
	copies map[cache.SharedIndexInformer]informerCopy
}

// informerCopy is an informer's objects as a Set holds them, with the
// number of changes the informer had counted when they were copied.
type informerCopy struct {
	changes uint64
	items   any
}

// customResource is a GitOps, rollout or Istio kind kedge reads when its
// CRD is served.
type customResource struct {
	group, resource, kind string
}

var customResources = []customResource{
	{group: "argoproj.io", resource: "rollouts", kind: "Rollout"},
	{group: "argoproj.io", resource: "applications", kind: "Application"},
	{group: "kustomize.toolkit.fluxcd.io", resource: "kustomizations", kind: "Kustomization"},
	{group: "source.toolkit.fluxcd.io", resource: "gitrepositories", kind: "GitRepository"},
	{group: "source.toolkit.fluxcd.io", resource: "helmrepositories", kind: "HelmRepository"},
	// OCIRepositories and AppProjects name the hosts charts may be pulled
	// from (internal/chartpull).
	{group: "source.toolkit.fluxcd.io", resource: "ocirepositories", kind: kindOCIRepository},
	{group: "argoproj.io", resource: "appprojects", kind: kindAppProject},
	{group: "networking.istio.io", resource: "proxyconfigs", kind: kindProxyConfig},
	{group: "security.istio.io", resource: "authorizationpolicies", kind: kindAuthorizationPolicy},
	{group: "gateway.networking.k8s.io", resource: "gateways", kind: kindGateway},
	// A Canary says which workload's template Flagger promotes to the
	// primary whose pods it runs.
	{group: "flagger.app", resource: "canaries", kind: kindCanary},
	{group: "security.istio.io", resource: "peerauthentications", kind: kindPeerAuthentication},
	{group: "security.istio.io", resource: "requestauthentications", kind: kindRequestAuthentication},
	{group: "networking.istio.io", resource: "envoyfilters", kind: kindEnvoyFilter},
	{group: "extensions.istio.io", resource: "wasmplugins", kind: kindWasmPlugin},
	{group: "networking.istio.io", resource: "virtualservices", kind: kindVirtualService},
	{group: "gateway.networking.k8s.io", resource: "httproutes", kind: kindHTTPRoute},
}

// Kinds read to tell whether a namespace can move to ambient mode: every
// object Istio's migration guide names.
const (
	kindAuthorizationPolicy   = "AuthorizationPolicy"
	kindGateway               = "Gateway"
	kindPeerAuthentication    = "PeerAuthentication"
	kindRequestAuthentication = "RequestAuthentication"
	kindEnvoyFilter           = "EnvoyFilter"
	kindWasmPlugin            = "WasmPlugin"
	kindVirtualService        = "VirtualService"
	kindHTTPRoute             = "HTTPRoute"
)

// kindCanary is Flagger's Canary.
const kindCanary = "Canary"

// Kinds read to tell which hosts charts may be pulled from.
const (
	kindOCIRepository = "OCIRepository"
	kindAppProject    = "AppProject"
)

// kindProxyConfig is Istio's ProxyConfig, the one custom kind that changes
// what the mesh injects.
const kindProxyConfig = "ProxyConfig"

// NewLive prepares the informers; nothing is contacted until Start.
func NewLive(opts LiveOptions) (*Live, error) {
	if opts.Config == nil {
		return nil, errors.New("live cluster source: no API server configuration")
	}
	if opts.Resync < 0 {
		return nil, fmt.Errorf("live cluster source: negative resync period %s", opts.Resync)
	}

	l := &Live{
		opts:            opts,
		trim:            trim.New(),
		customInformers: map[string]cache.SharedIndexInformer{},
		failures:        map[cachedResource]failure{},
		informerChanges: map[cache.SharedIndexInformer]*atomic.Uint64{},
		copies:          map[cache.SharedIndexInformer]informerCopy{},
	}
	typedConfig := rest.CopyConfig(opts.Config)
	typedConfig.Wrap(l.observeAnswers)
	typedConfig.UserAgent = cmp.Or(typedConfig.UserAgent, "kedge")
	// Protobuf halves decode time and garbage for the bulk of the objects
	// (pods); the dynamic client below cannot use it.
	typedConfig.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	typedConfig.ContentType = "application/vnd.kubernetes.protobuf"
	client, err := kubernetes.NewForConfig(typedConfig)
	if err != nil {
		return nil, fmt.Errorf("live cluster source: %w", err)
	}
	dynamicConfig := rest.CopyConfig(opts.Config)
	dynamicConfig.Wrap(l.observeAnswers)
	dynamicConfig.UserAgent = typedConfig.UserAgent
	dyn, err := dynamic.NewForConfig(dynamicConfig)
	if err != nil {
		return nil, fmt.Errorf("live cluster source: %w", err)
	}

	l.discovery, l.dynamic = client.Discovery(), dyn
	l.core = informers.NewSharedInformerFactoryWithOptions(client, opts.Resync, informers.WithTransform(l.trim.Transform))
	// The informers are built without client-go's namespace index: kedge
	// lists whole caches and never looks objects up by namespace, and at
	// 100k pods the index holds every key once more.
	namespaced := func(obj runtime.Object, build func(kubernetes.Interface, string, time.Duration, cache.Indexers) cache.SharedIndexInformer) cache.SharedIndexInformer {
		return l.core.InformerFor(obj, func(c kubernetes.Interface, r time.Duration) cache.SharedIndexInformer {
			return build(c, metav1.NamespaceAll, r, cache.Indexers{})
		})
	}
	clusterScoped := func(obj runtime.Object, build func(kubernetes.Interface, time.Duration, cache.Indexers) cache.SharedIndexInformer) cache.SharedIndexInformer {
		return l.core.InformerFor(obj, func(c kubernetes.Interface, r time.Duration) cache.SharedIndexInformer {
			return build(c, r, cache.Indexers{})
		})
	}
	l.namespaces = clusterScoped(&corev1.Namespace{}, coreinformers.NewNamespaceInformer)
	l.pods = namespaced(&corev1.Pod{}, coreinformers.NewPodInformer)
	l.replicaSets = namespaced(&appsv1.ReplicaSet{}, appsinformers.NewReplicaSetInformer)
	l.deployments = namespaced(&appsv1.Deployment{}, appsinformers.NewDeploymentInformer)
	l.statefulSets = namespaced(&appsv1.StatefulSet{}, appsinformers.NewStatefulSetInformer)
	l.daemonSets = namespaced(&appsv1.DaemonSet{}, appsinformers.NewDaemonSetInformer)
	l.nodes = clusterScoped(&corev1.Node{}, coreinformers.NewNodeInformer)
	l.services = namespaced(&corev1.Service{}, coreinformers.NewServiceInformer)
	l.jobs = namespaced(&batchv1.Job{}, batchinformers.NewJobInformer)
	l.cronJobs = namespaced(&batchv1.CronJob{}, batchinformers.NewCronJobInformer)
	l.webhooks = clusterScoped(&admissionregistrationv1.MutatingWebhookConfiguration{}, admissioninformers.NewMutatingWebhookConfigurationInformer)

	var configMapResources []cachedResource
	if len(opts.IstioNamespaces) == 0 {
		f := informers.NewSharedInformerFactoryWithOptions(client, opts.Resync,
			informers.WithTransform(l.trim.Transform),
			informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = mesh.LabelRev }))
		l.configMaps = append(l.configMaps, f)
		cni := informers.NewSharedInformerFactoryWithOptions(client, opts.Resync,
			informers.WithTransform(l.trim.Transform),
			informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = "metadata.name=" + ambient.CNIConfigMap }))
		l.configMaps = append(l.configMaps, cni)
		configMapResources = append(configMapResources, cachedResource{resource: "configmaps"},
			cachedResource{resource: "configmaps", name: ambient.CNIConfigMap})
	} else {
		for _, ns := range slices.Compact(slices.Sorted(slices.Values(opts.IstioNamespaces))) {
			f := informers.NewSharedInformerFactoryWithOptions(client, opts.Resync,
				informers.WithTransform(l.trim.Transform), informers.WithNamespace(ns))
			l.configMaps = append(l.configMaps, f)
			configMapResources = append(configMapResources, cachedResource{resource: "configmaps", namespace: ns})
		}
	}
	for _, f := range l.configMaps {
		l.configMapInformers = append(l.configMapInformers, f.Core().V1().ConfigMaps().Informer())
	}

	named := map[cachedResource]cache.SharedIndexInformer{
		{resource: "namespaces"}: l.namespaces, {resource: "pods"}: l.pods, {resource: "nodes"}: l.nodes,
		{group: "apps", resource: "replicasets"}: l.replicaSets, {group: "apps", resource: "deployments"}: l.deployments,
		{group: "apps", resource: "statefulsets"}: l.statefulSets, {group: "apps", resource: "daemonsets"}: l.daemonSets,
		{group: "batch", resource: "jobs"}: l.jobs, {group: "batch", resource: "cronjobs"}: l.cronJobs,
		{group: "admissionregistration.k8s.io", resource: "mutatingwebhookconfigurations"}: l.webhooks,
		{resource: "services"}: l.services,
	}
	for i, inf := range l.configMapInformers {
		named[configMapResources[i]] = inf
	}
	for resource, inf := range named {
		if err := l.watchErrors(resource, inf); err != nil {
			return nil, err
		}
		if err := l.countChanges(inf); err != nil {
			return nil, err
		}
	}
	if err := l.addMeshHandlers(); err != nil {
		return nil, err
	}
	return l, nil
}

// OnMeshChange registers fn to be called when an injector webhook
// configuration, injector ConfigMap, Istio ProxyConfig, AuthorizationPolicy
// or waypoint Gateway is added, changed or deleted, a namespace's labels
// change, or the opt-out annotation of a namespace or workload does. Pod events never call it, nor do the objects
// listed when the caches first fill. fn runs on an informer goroutine and
// must not block.
func (l *Live) OnMeshChange(fn func(reason string)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.listeners = append(l.listeners, fn)
}

// Start discovers which custom resources are served and starts every
// informer. It returns at once; the informers stop when ctx ends.
func (l *Live) Start(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.started {
		return errors.New("live cluster source: already started")
	}
	served, err := servedCustomResources(l.discovery)
	if err != nil {
		return fmt.Errorf("live cluster source: discovery: %w", err)
	}
	if len(served) > 0 {
		l.custom = dynamicinformer.NewDynamicSharedInformerFactory(l.dynamic, l.opts.Resync)
		for kind, gvr := range served {
			inf := l.custom.ForResource(gvr).Informer()
			if err := inf.SetTransform(l.trim.Transform); err != nil {
				return fmt.Errorf("live cluster source: %s: %w", gvr.Resource, err)
			}
			if err := l.watchErrors(cachedResource{group: gvr.Group, resource: gvr.Resource}, inf); err != nil {
				return err
			}
			if err := l.countChanges(inf); err != nil {
				return err
			}
			if err := l.addCustomMeshHandler(kind, inf); err != nil {
				return fmt.Errorf("live cluster source: %s: %w", gvr.Resource, err)
			}
			if kind == "Rollout" {
				if err := l.addOptOutHandler(inf); err != nil {
					return fmt.Errorf("live cluster source: %s: %w", gvr.Resource, err)
				}
			}
			l.customInformers[kind] = inf
		}
	}
	l.started = true

	l.core.Start(ctx.Done())
	for _, f := range l.configMaps {
		f.Start(ctx.Done())
	}
	if l.custom != nil {
		l.custom.Start(ctx.Done())
	}
	go func() {
		<-ctx.Done()
		l.core.Shutdown()
		for _, f := range l.configMaps {
			f.Shutdown()
		}
		if l.custom != nil {
			l.custom.Shutdown()
		}
	}()
	return nil
}

// WaitForSync blocks until every cache holds a full list, or ctx ends.
func (l *Live) WaitForSync(ctx context.Context) error {
	l.mu.Lock()
	if !l.started {
		l.mu.Unlock()
		return errors.New("live cluster source: not started")
	}
	synced := []cache.InformerSynced{
		l.namespaces.HasSynced, l.pods.HasSynced, l.replicaSets.HasSynced, l.deployments.HasSynced,
		l.statefulSets.HasSynced, l.daemonSets.HasSynced, l.jobs.HasSynced, l.cronJobs.HasSynced,
		l.webhooks.HasSynced, l.nodes.HasSynced, l.services.HasSynced,
	}
	for _, inf := range l.configMapInformers {
		synced = append(synced, inf.HasSynced)
	}
	for _, inf := range l.customInformers {
		synced = append(synced, inf.HasSynced)
	}
	l.mu.Unlock()

	if cache.WaitForCacheSync(ctx.Done(), synced...) {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var causes []error
	resources := slices.SortedFunc(maps.Keys(l.failures), func(a, b cachedResource) int { return strings.Compare(a.String(), b.String()) })
	for _, r := range resources {
		causes = append(causes, fmt.Errorf("%s: %w", r, l.failures[r].err))
	}
	if len(causes) > 0 {
		return fmt.Errorf("live cluster source: caches not synced: %w: %w", ctx.Err(), errors.Join(causes...))
	}
	return fmt.Errorf("live cluster source: caches not synced: %w", ctx.Err())
}

// Set lists the cached objects into a new Set, sorted by namespace and
// name. The objects of an informer that has not changed since the last Set
// are that Set's slice, shared. Pods and workloads are the cache's own
// values (their labels, annotations and owners shared by the replicas of a
// workload): a copy of each would double the largest part of what kedge
// holds. The other kinds are shallow copies. Like every value of a Set,
// none of these is ever written.
func (l *Live) Set() *objects.Set {
	l.mu.Lock()
	custom := maps.Clone(l.customInformers)
	l.mu.Unlock()

	set := &objects.Set{
		Namespaces:                    copied(l, l.namespaces, copyTyped[corev1.Namespace](l.namespaces, "v1", "Namespace")),
		ReplicaSets:                   copied(l, l.replicaSets, l.cachedReplicaSets),
		Deployments:                   copied(l, l.deployments, cachedTyped[appsv1.Deployment](l.deployments)),
		StatefulSets:                  copied(l, l.statefulSets, cachedTyped[appsv1.StatefulSet](l.statefulSets)),
		DaemonSets:                    copied(l, l.daemonSets, cachedTyped[appsv1.DaemonSet](l.daemonSets)),
		Nodes:                         copied(l, l.nodes, copyTyped[corev1.Node](l.nodes, "v1", "Node")),
		Services:                      copied(l, l.services, copyTyped[corev1.Service](l.services, "v1", "Service")),
		Jobs:                          copied(l, l.jobs, cachedTyped[batchv1.Job](l.jobs)),
		CronJobs:                      copied(l, l.cronJobs, cachedTyped[batchv1.CronJob](l.cronJobs)),
		MutatingWebhookConfigurations: copied(l, l.webhooks, copyTyped[admissionregistrationv1.MutatingWebhookConfiguration](l.webhooks, "admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration")),
		Pods:                          copied(l, l.pods, l.copyPods),
	}
	for _, inf := range l.configMapInformers {
		set.ConfigMaps = append(set.ConfigMaps, copied(l, inf, func() []corev1.ConfigMap {
			return slices.DeleteFunc(copyTyped[corev1.ConfigMap](inf, "v1", "ConfigMap")(), func(cm corev1.ConfigMap) bool { return !trim.IsIstioConfigMap(&cm) })
		})...)
	}
	sortByKey(set.ConfigMaps, func(c *corev1.ConfigMap) *metav1.ObjectMeta { return &c.ObjectMeta })
	// A labelled istio-cni-config is in two caches.
	set.ConfigMaps = slices.CompactFunc(set.ConfigMaps, func(a, b corev1.ConfigMap) bool {
		return a.Namespace == b.Namespace && a.Name == b.Name
	})
	set.Rollouts = copied(l, custom["Rollout"], cachedCustom[objects.Rollout](custom["Rollout"]))
	set.Applications = copied(l, custom["Application"], copyCustom[objects.Application](custom["Application"]))
	set.Kustomizations = copied(l, custom["Kustomization"], copyCustom[objects.Kustomization](custom["Kustomization"]))
	set.GitRepositories = copied(l, custom["GitRepository"], copyCustom[objects.GitRepository](custom["GitRepository"]))
	set.HelmRepositories = copied(l, custom["HelmRepository"], copyCustom[objects.HelmRepository](custom["HelmRepository"]))
	set.OCIRepositories = copied(l, custom[kindOCIRepository], copyCustom[objects.OCIRepository](custom[kindOCIRepository]))
	set.AppProjects = copied(l, custom[kindAppProject], copyCustom[objects.AppProject](custom[kindAppProject]))
	set.ProxyConfigs = copied(l, custom[kindProxyConfig], copyCustom[objects.ProxyConfig](custom[kindProxyConfig]))
	set.AuthorizationPolicies = copied(l, custom[kindAuthorizationPolicy], copyCustom[objects.AuthorizationPolicy](custom[kindAuthorizationPolicy]))
	set.Gateways = copied(l, custom[kindGateway], copyCustom[objects.Gateway](custom[kindGateway]))
	set.Canaries = copied(l, custom[kindCanary], copyCustom[objects.Canary](custom[kindCanary]))
	set.PeerAuthentications = copied(l, custom[kindPeerAuthentication], copyCustom[objects.PeerAuthentication](custom[kindPeerAuthentication]))
	set.RequestAuthentications = copied(l, custom[kindRequestAuthentication], copyCustom[objects.RequestAuthentication](custom[kindRequestAuthentication]))
	set.EnvoyFilters = copied(l, custom[kindEnvoyFilter], copyCustom[objects.EnvoyFilter](custom[kindEnvoyFilter]))
	set.WasmPlugins = copied(l, custom[kindWasmPlugin], copyCustom[objects.WasmPlugin](custom[kindWasmPlugin]))
	set.VirtualServices = copied(l, custom[kindVirtualService], copyCustom[objects.VirtualService](custom[kindVirtualService]))
	set.HTTPRoutes = copied(l, custom[kindHTTPRoute], copyCustom[objects.HTTPRoute](custom[kindHTTPRoute]))
	return set
}

// copyPods lists the cached pods, sorted by namespace and name. An update
// replaces a cached pod rather than changing it, so a Set's pods stay as
// they were listed.
func (l *Live) copyPods() []*objects.Pod {
	pods := listed(l.pods, func(p *trim.CachedPod) *objects.Pod { return &p.Pod })
	slices.SortFunc(pods, func(a, b *objects.Pod) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return pods
}

// servedCustomResources maps each kind of customResources the API server
// serves to the resource in its preferred version.
func servedCustomResources(d discovery.DiscoveryInterface) (map[string]schema.GroupVersionResource, error) {
	groups, err := d.ServerGroups()
	if err != nil {
		return nil, err
	}
	served := map[string]schema.GroupVersionResource{}
	for _, cr := range customResources {
		i := slices.IndexFunc(groups.Groups, func(g metav1.APIGroup) bool { return g.Name == cr.group })
		if i < 0 {
			continue
		}
		group := groups.Groups[i]
		// The preferred version first; a CRD may serve the resource only
		// in an older one.
		versions := []string{group.PreferredVersion.GroupVersion}
		for _, v := range group.Versions {
			if v.GroupVersion != group.PreferredVersion.GroupVersion {
				versions = append(versions, v.GroupVersion)
			}
		}
		for _, gv := range versions {
			list, err := d.ServerResourcesForGroupVersion(gv)
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				return nil, err
			}
			if slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == cr.resource }) {
				parsed, err := schema.ParseGroupVersion(gv)
				if err != nil {
					return nil, err
				}
				served[cr.kind] = parsed.WithResource(cr.resource)
				break
			}
		}
	}
	return served, nil
}

// Version counts the changes the caches have seen: while it stays the
// same, Set copies the same objects. Read it before Set: a change that
// lands during the copy then shows as a new version next time.
func (l *Live) Version() uint64 { return l.changes.Load() }

// countChanges counts every object an informer adds or deletes, and every
// update that brings a new resourceVersion, unless it is a pod whose trimmed
// form is the same: the informers' periodic resync delivers the objects they
// hold as updates, and the kubelet rewrites a pod's status for much kedge
// never reads, so neither changes what a Set holds.
func (l *Live) countChanges(inf cache.SharedIndexInformer) error {
	own := &atomic.Uint64{}
	l.informerChanges[inf] = own
	changed := func() {
		own.Add(1)
		l.changes.Add(1)
	}
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { changed() },
		DeleteFunc: func(any) { changed() },
		UpdateFunc: func(oldObj, newObj any) {
			if !sameVersion(oldObj, newObj) && !trim.SamePod(oldObj, newObj) {
				changed()
			}
		},
	})
	return err
}

// copied is build's copy of inf's objects, or the last one while inf has
// counted no change since. The count is read before copying: a change that
// lands during the copy makes the next Set copy again. The copy is clipped,
// so that appending to it can never write into a later Set's array.
func copied[T any](l *Live, inf cache.SharedIndexInformer, build func() []T) []T {
	if inf == nil {
		return nil
	}
	l.mu.Lock()
	counter := l.informerChanges[inf]
	l.mu.Unlock()
	if counter == nil {
		return slices.Clip(build())
	}
	at := counter.Load()
	l.copyMu.Lock()
	last, ok := l.copies[inf]
	l.copyMu.Unlock()
	if ok && last.changes == at {
		return last.items.([]T)
	}
	items := slices.Clip(build())
	l.copyMu.Lock()
	l.copies[inf] = informerCopy{changes: at, items: items}
	l.copyMu.Unlock()
	return items
}

func sameVersion(a, b any) bool {
	x, err1 := meta.Accessor(a)
	y, err2 := meta.Accessor(b)
	return err1 == nil && err2 == nil && x.GetResourceVersion() != "" && x.GetResourceVersion() == y.GetResourceVersion() && x.GetUID() == y.GetUID()
}

// watchErrors records each failed list or watch of an informer's
// resource, for WaitForSync and Stale to say why its cache does not fill
// or refresh.
func (l *Live) watchErrors(resource cachedResource, inf cache.SharedIndexInformer) error {
	return inf.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
		l.failed(resource, err)
		cache.DefaultWatchErrorHandler(ctx, r, err)
	})
}

// typedObject is every typed API object.
type typedObject[T any] interface {
	*T
	SetGroupVersionKind(schema.GroupVersionKind)
	GetNamespace() string
	GetName() string
}

// copyTyped returns a copier of an informer's objects, with apiVersion and kind set as a
// snapshot file has them (typed clients strip them). The copies are
// shallow: their maps and slices are the cache's, which a Set never writes
// and an informer replaces rather than changes.
func copyTyped[T any, P typedObject[T]](inf cache.SharedIndexInformer, apiVersion, kind string) func() []T {
	gvk := schema.FromAPIVersionAndKind(apiVersion, kind)
	return func() []T {
		out := listed(inf, func(typed P) T {
			c := *typed
			P(&c).SetGroupVersionKind(gvk)
			return c
		})
		slices.SortFunc(out, func(a, b T) int {
			pa, pb := P(&a), P(&b)
			return cmp.Or(cmp.Compare(pa.GetNamespace(), pb.GetNamespace()), cmp.Compare(pa.GetName(), pb.GetName()))
		})
		return out
	}
}

// cachedTyped lists an informer's objects as the cache holds them, sorted
// by namespace and name; the transform gave them their apiVersion and kind
// (withKind).
func cachedTyped[T any, P typedObject[T]](inf cache.SharedIndexInformer) func() []P {
	return func() []P {
		out := listed(inf, func(p P) P { return p })
		sortByName(out)
		return out
	}
}

// cachedReplicaSets lists the cached ReplicaSets, sorted by namespace and
// name.
func (l *Live) cachedReplicaSets() []*objects.ReplicaSet {
	out := listed(l.replicaSets, func(rs *trim.CachedReplicaSet) *objects.ReplicaSet { return &rs.ReplicaSet })
	sortByName(out)
	return out
}

// listed is what value makes of each cached object of type C, nil when
// there is none. The slice is sized once: a Set keeps it until the
// informer changes, and one grown by appending would hold up to a quarter
// more.
func listed[C any, T any](inf cache.SharedIndexInformer, value func(C) T) []T {
	cached := inf.GetStore().List()
	var out []T
	for _, obj := range cached {
		if c, ok := obj.(C); ok {
			if out == nil {
				out = make([]T, 0, len(cached))
			}
			out = append(out, value(c))
		}
	}
	return out
}

func sortByKey[T any](items []T, meta func(*T) *metav1.ObjectMeta) {
	slices.SortFunc(items, func(a, b T) int {
		ma, mb := meta(&a), meta(&b)
		return cmp.Or(cmp.Compare(ma.Namespace, mb.Namespace), cmp.Compare(ma.Name, mb.Name))
	})
}
