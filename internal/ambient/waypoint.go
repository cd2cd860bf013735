package ambient

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kedge-io/kedge/internal/objects"
)

// waypointRef is the waypoint a label names: a Gateway's namespace and
// name.
type waypointRef struct{ namespace, name string }

func (w waypointRef) none() bool { return w.name == "" }

// useWaypoint reads istio.io/use-waypoint (and its namespace label) off
// an object of namespace ns. set is false when the object does not carry
// the label; a label of "none" is set and names no waypoint.
func useWaypoint(l map[string]string, ns string) (w waypointRef, set bool) {
	name, ok := l[LabelUseWaypoint]
	if !ok {
		return waypointRef{}, false
	}
	if name == noWaypoint {
		return waypointRef{}, true
	}
	if other := l[LabelUseWaypointNamespace]; other != "" {
		ns = other
	}
	return waypointRef{namespace: ns, name: name}, true
}

// view is the namespace as it will be after the move: its labels, its
// Services and pods, and the cluster's waypoints.
type view struct {
	cluster   *Cluster
	set       *objects.Set
	namespace string
	labels    map[string]string
	root      string
	services  []*corev1.Service
	pods      []*objects.Pod
}

func (c *Cluster) view(mv Move) *view {
	return &view{cluster: c, set: c.set, namespace: mv.Namespace, labels: mv.Labels, root: mv.RootNamespace,
		services: c.services[mv.Namespace], pods: c.pods[mv.Namespace]}
}

// namespaceWaypoint is the waypoint the namespace's label names after the
// move.
func (v *view) namespaceWaypoint() waypointRef {
	w, _ := useWaypoint(v.labels, v.namespace)
	return w
}

// serviceWaypoint is the waypoint a Service's traffic goes through after
// the move: its own label's, else its namespace's.
func (v *view) serviceWaypoint(s *corev1.Service) waypointRef {
	if w, set := useWaypoint(s.Labels, s.Namespace); set {
		return w
	}
	return v.namespaceWaypoint()
}

// gateway returns the waypoint Gateway a reference names, nil when the
// cluster has none of that name.
func (v *view) gateway(w waypointRef) *objects.Gateway { return v.cluster.gateways[w] }

// waypointProblem says why w cannot carry service traffic, "" when it can:
// a Gateway of class istio-waypoint that is Programmed and handles service
// traffic.
func (v *view) waypointProblem(w waypointRef) string {
	g := v.gateway(w)
	switch {
	case g == nil:
		return "waypoint " + w.namespace + "/" + w.name + " does not exist"
	case g.Spec.GatewayClassName != WaypointClass:
		return "Gateway " + w.namespace + "/" + w.name + " is of class " + quote(g.Spec.GatewayClassName) + ", not " + WaypointClass
	case !programmed(g.Status.Conditions):
		return "waypoint " + w.namespace + "/" + w.name + " is not Programmed"
	}
	switch g.Labels[LabelWaypointFor] {
	case "", "service", "all":
		return ""
	}
	return "waypoint " + w.namespace + "/" + w.name + " handles " + g.Labels[LabelWaypointFor] + " traffic (" + LabelWaypointFor + "), not service traffic"
}

// usable reports whether w names a waypoint that carries service traffic.
func (v *view) usable(w waypointRef) bool { return !w.none() && v.waypointProblem(w) == "" }

// service returns the namespace's Service of that name.
func (v *view) service(name string) *corev1.Service {
	for _, s := range v.services {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// usedBy lists what uses waypoint w after the move: the namespace, or its
// Services by name.
func (v *view) usedBy(w waypointRef) []string {
	var out []string
	if v.namespaceWaypoint() == w {
		out = append(out, "Namespace "+v.namespace)
	}
	for _, s := range v.services {
		if own, set := useWaypoint(s.Labels, s.Namespace); set && own == w {
			out = append(out, "Service "+s.Name)
		}
	}
	return out
}

// selectedPods are the namespace's pods a selector picks; an empty
// selector picks every pod.
func (v *view) selectedPods(match map[string]string) []*objects.Pod {
	sel := labels.SelectorFromSet(match)
	var out []*objects.Pod
	for _, p := range v.pods {
		if sel.Matches(labels.Set(p.Labels)) {
			out = append(out, p)
		}
	}
	return out
}

// servicesReaching are the namespace's Services that send traffic to some
// pod a policy's selector picks: those selecting such a pod now, and those
// whose selector every such pod matches (so also pods not running yet). A
// nil selector is the whole namespace.
func (v *view) servicesReaching(match map[string]string, whole bool) []*corev1.Service {
	if whole {
		return v.services
	}
	pods := v.selectedPods(match)
	var out []*corev1.Service
	for _, s := range v.services {
		if len(s.Spec.Selector) == 0 {
			continue
		}
		sel := labels.SelectorFromSet(s.Spec.Selector)
		reaches := sel.Matches(labels.Set(match))
		for _, p := range pods {
			if reaches {
				break
			}
			reaches = sel.Matches(labels.Set(p.Labels))
		}
		if reaches {
			out = append(out, s)
		}
	}
	return out
}

// waypointInPath is the first waypoint traffic to the pods a selector
// picks goes through after the move: a Service's that reaches them, or a
// pod's own label. none() when there is none.
func (v *view) waypointInPath(match map[string]string, whole bool) waypointRef {
	for _, s := range v.servicesReaching(match, whole) {
		if w := v.serviceWaypoint(s); !w.none() {
			return w
		}
	}
	pods := v.pods
	if !whole {
		pods = v.selectedPods(match)
	}
	for _, p := range pods {
		if w, set := useWaypoint(p.Labels, p.Namespace); set && !w.none() {
			return w
		}
	}
	return waypointRef{}
}

func quote(s string) string { return "\"" + s + "\"" }
