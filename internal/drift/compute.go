// Package drift compares what every pod runs with what Istio would inject
// into it now, and groups the differences by the workload a template
// annotation can restart.
package drift

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/kedge-io/kedge/internal/image"
	"github.com/kedge-io/kedge/internal/mesh"
	"github.com/kedge-io/kedge/internal/objects"
)

// Compute builds the plan for one cluster. It reads nothing but its
// arguments.
func Compute(set *objects.Set, m *mesh.Model, opts Options) Plan {
	c := &computation{
		model:      m,
		index:      newIndex(set),
		filter:     newNamespaceFilter(opts),
		kinds:      opts.kindSet(),
		optOut:     opts.optOutAnnotation(),
		images:     opts.Images,
		sameImage:  map[imagePair]bool{},
		namespaces: map[string]*namespaceInfo{},
		groups:     map[groupKey]*group{},
		statuses:   map[string]string{},
	}
	for _, p := range set.Pods {
		c.addPod(p)
	}
	return c.plan(opts.Cluster)
}

type computation struct {
	model  *mesh.Model
	index  *index
	filter *namespaceFilter
	kinds  map[string]bool
	optOut string
	images image.Identity
	// sameImage memoises images.Runs: a cluster runs a handful of proxy
	// images, each compared with a handful of injected ones.
	sameImage  map[imagePair]bool
	namespaces map[string]*namespaceInfo
	groups     map[groupKey]*group
	// statuses memoises the revision parsed from identical status
	// annotations, which most pods of a revision share.
	statuses map[string]string
}

type imagePair struct{ running, injected string }

type namespaceInfo struct {
	labels   map[string]string
	optedOut bool
}

type groupKey struct {
	namespace, kind, name string
}

// reasonBits keeps a workload's reasons in sorted order for free.
type reasonBits uint8

var reasonOrder = []Reason{ReasonMissingSidecar, ReasonProxyImage, ReasonRevision, ReasonUnwantedSidecar}

func bitOf(r Reason) reasonBits {
	for i, v := range reasonOrder {
		if v == r {
			return 1 << i
		}
	}
	return 0
}

type group struct {
	owner    *owner
	total    int
	drifted  int
	reasons  reasonBits
	conflict []string
	// conflictFrom is the pod the conflict was read from; the smallest
	// name wins so the detail does not depend on pod order.
	conflictFrom string
	optedOut     bool
	// via is the controller that runs the pods of a workload edited
	// through another (a Canary's target, a Rollout's workloadRef).
	via *Via
	// operates names, for an operator's resource, the workloads it owns
	// whose pods drift, sorted when read.
	operates []string

	revisions []string
	images    []string
	// desired comes from the drifted pod with the smallest name, so owners
	// decided pod by pod still get a stable answer.
	desired     Desired
	desiredFrom string
	oldest      time.Time
}

func (c *computation) namespace(name string) *namespaceInfo {
	if info, ok := c.namespaces[name]; ok {
		return info
	}
	info := &namespaceInfo{}
	if ns, ok := c.index.namespaces[name]; ok {
		info.labels = ns.Labels
		info.optedOut = ns.Annotations[c.optOut] == "true"
	}
	c.namespaces[name] = info
	return info
}

func isRestartableKind(kind string) bool {
	return canonicalKind(kind) == kind
}

func (c *computation) addPod(p *objects.Pod) {
	if !p.Live() {
		return
	}
	if !c.filter.allows(p.Namespace) {
		return
	}
	// istiod renders and rolls these gateways itself.
	if _, ok := p.Labels[mesh.LabelGatewayManaged]; ok {
		return
	}
	o := c.index.ownerOf(p)
	// Kinds kedge could restart but was told to leave alone stay out of the
	// plan; pods of every other owner are reported, even when nothing can
	// be done for them, so none vanishes silently.
	if kind := o.filterKind(); isRestartableKind(kind) && !c.kinds[kind] {
		return
	}

	ns := c.namespace(p.Namespace)
	key := groupKey{o.namespace, o.kind, o.name}
	g, ok := c.groups[key]
	if !ok {
		g = &group{owner: o}
		c.groups[key] = g
	}
	g.total++
	if o.via != nil && g.via == nil {
		g.via = o.via
	}
	if o.operates != nil {
		g.operates = addDistinct(g.operates, o.operates.kind+" "+o.operates.name)
	}
	if ns.optedOut || o.annotations[c.optOut] == "true" {
		g.optedOut = true
	}

	var d mesh.Decision
	if o.template != nil {
		if o.template.Annotations[c.optOut] == "true" {
			g.optedOut = true
		}
		d = c.decideOwner(o, ns)
	} else {
		if p.Annotations[c.optOut] == "true" {
			g.optedOut = true
		}
		d = c.model.Decide(p.Namespace, ns.labels, mesh.TemplateOfPod(p))
	}
	if len(d.Conflict) > 0 {
		if g.conflict == nil || p.Name < g.conflictFrom {
			g.conflict, g.conflictFrom = d.Conflict, p.Name
		}
		return
	}

	sc := c.sidecarOf(p)
	reasons := c.compare(sc, d)
	if reasons == 0 {
		return
	}
	g.drifted++
	g.reasons |= reasons
	if sc.present {
		g.revisions = addDistinct(g.revisions, sc.revision)
		g.images = addDistinct(g.images, sc.image)
	}
	if g.desiredFrom == "" || p.Name < g.desiredFrom {
		g.desiredFrom = p.Name
		g.desired = Desired{Revision: d.Revision, Image: d.Image}
	}
	if start := startOf(p); !start.IsZero() && (g.oldest.IsZero() || start.Before(g.oldest)) {
		g.oldest = start
	}
}

// decideOwner evaluates a workload's template once; all its pods share it.
func (c *computation) decideOwner(o *owner, ns *namespaceInfo) mesh.Decision {
	if !o.decided {
		o.decision = c.model.Decide(o.namespace, ns.labels, mesh.TemplateOf(o.template))
		o.decided = true
	}
	return o.decision
}

type sidecar struct {
	present  bool
	revision string
	image    string
}

func (c *computation) sidecarOf(p *objects.Pod) sidecar {
	image, ok := mesh.RunningProxy(p)
	if !ok {
		return sidecar{}
	}
	return sidecar{present: true, image: image, revision: c.injectedRevision(p.Annotations)}
}

// injectedRevision reads the real revision the injector recorded; a status
// without one predates named revisions and means the default revision.
func (c *computation) injectedRevision(annotations map[string]string) string {
	if status, ok := annotations[mesh.AnnotationStatus]; ok {
		rev, seen := c.statuses[status]
		if !seen {
			rev = parseStatusRevision(status)
			c.statuses[status] = rev
		}
		if rev != "" {
			return rev
		}
	}
	return annotations[mesh.AnnotationRev]
}

// parseStatusRevision returns "" when the status is unreadable.
func parseStatusRevision(status string) string {
	var s struct {
		Revision string `json:"revision"`
	}
	if err := json.Unmarshal([]byte(status), &s); err != nil {
		return ""
	}
	if s.Revision == "" {
		return mesh.DefaultRevision
	}
	return s.Revision
}

func (c *computation) compare(sc sidecar, d mesh.Decision) reasonBits {
	switch {
	case sc.present && d.Inject:
		current := sc.revision
		if !c.model.HasRevision(current) {
			if rev, ok := c.model.ResolveTag(current); ok {
				current = rev
			}
		}
		if current != "" && current != d.Revision {
			return bitOf(ReasonRevision)
		}
		if d.Image != "" && !c.runs(sc.image, d.Image) {
			return bitOf(ReasonProxyImage)
		}
		return 0
	case !sc.present && d.Inject:
		return bitOf(ReasonMissingSidecar)
	case sc.present && !d.Inject:
		return bitOf(ReasonUnwantedSidecar)
	}
	return 0
}

// runs tells whether a pod running the image running runs the injected one.
func (c *computation) runs(running, injected string) bool {
	if running == injected {
		return true
	}
	key := imagePair{running, injected}
	same, seen := c.sameImage[key]
	if !seen {
		same = c.images.Runs(running, injected)
		c.sameImage[key] = same
	}
	return same
}

func startOf(p *objects.Pod) time.Time {
	if !p.StartTime.IsZero() {
		return p.StartTime.Time
	}
	return p.CreationTimestamp.Time
}

func addDistinct(list []string, v string) []string {
	if v == "" {
		return list
	}
	for _, s := range list {
		if s == v {
			return list
		}
	}
	return append(list, v)
}

func (c *computation) plan(cluster string) Plan {
	p := Plan{Cluster: cluster, Workloads: make([]Workload, 0, len(c.groups)), Skipped: []Skipped{}}
	for key, g := range c.groups {
		if g.drifted == 0 && g.conflict == nil {
			continue
		}
		skip := Skipped{Namespace: key.namespace, Kind: key.kind, Name: key.name}
		switch {
		case g.optedOut:
			skip.Reason = SkipOptedOut
			skip.Detail = "annotation " + c.optOut + "=true"
		case g.conflict != nil:
			skip.Reason = SkipConflict
			skip.Detail = "several revisions would inject: " + strings.Join(g.conflict, ", ")
		case key.kind == KindPod:
			skip.Reason = SkipNoOwner
		case !isRestartableKind(key.kind):
			skip.Reason = SkipNotRestartable
			skip.Detail = notRestartableDetail(g)
		case g.owner.onDelete:
			skip.Reason = SkipOnDelete
			skip.Detail = onDeleteDetail(key)
		}
		if skip.Reason != "" {
			p.Skipped = append(p.Skipped, skip)
			continue
		}
		p.Workloads = append(p.Workloads, g.workload(key))
	}
	sort.Slice(p.Workloads, func(i, j int) bool {
		a, b := p.Workloads[i], p.Workloads[j]
		return less(a.Namespace, a.Kind, a.Name, b.Namespace, b.Kind, b.Name)
	})
	sort.Slice(p.Skipped, func(i, j int) bool {
		a, b := p.Skipped[i], p.Skipped[j]
		return less(a.Namespace, a.Kind, a.Name, b.Namespace, b.Kind, b.Name)
	})
	return p
}

// notRestartableDetail says why a template change would not help. Jobs and
// CronJobs need no words: their next run picks up the mesh.
func notRestartableDetail(g *group) string {
	o := g.owner
	switch {
	case o.kind == KindJob || o.kind == KindCronJob:
		return ""
	case o.kind == kindReplicaSet && groupOf(o.apiVersion) == "apps":
		return "a ReplicaSet with no Deployment or Rollout above it: a template change restarts none of its pods"
	case o.operates != nil:
		return operatedDetail(o, g.operates)
	}
	return fmt.Sprintf("owned by %s (%s), which kedge cannot restart through a pod template", o.kind, o.apiVersion)
}

// operatedDetail names the workloads an operator's resource owns and every
// owner reference of the first: the operator writes their pod templates,
// and kedge knows no mapping from them to what Git holds.
func operatedDetail(o *owner, workloads []string) string {
	sorted := append([]string(nil), workloads...)
	sort.Strings(sorted)
	if o.operates.unmapped != "" {
		return fmt.Sprintf("%s is controlled by Flagger Canary %s (%s), %s: "+
			"Flagger promotes the template of the Canary's target to its primary, and that template is where the restart belongs",
			strings.Join(sorted, ", "), o.name, o.apiVersion, o.operates.unmapped)
	}
	refs := make([]string, 0, len(o.operates.refs))
	for _, ref := range o.operates.refs {
		how := "owner reference without controller: true"
		if ref.Controller != nil && *ref.Controller {
			how = "controller"
		}
		refs = append(refs, fmt.Sprintf("%s %s (%s, %s)", ref.Kind, ref.Name, ref.APIVersion, how))
	}
	return fmt.Sprintf("%s owned by %s: the operator behind %s %s writes the pod template, which kedge cannot restart through Git",
		strings.Join(sorted, ", "), strings.Join(refs, " and "), o.kind, o.name)
}

// onDeleteDetail says what restarting an OnDelete workload takes.
func onDeleteDetail(key groupKey) string {
	return fmt.Sprintf("updateStrategy OnDelete: a new pod template reaches a pod only when the pod is deleted; delete the pods of %s %s to restart them", key.kind, key.name)
}

func less(ans, akind, aname, bns, bkind, bname string) bool {
	if ans != bns {
		return ans < bns
	}
	if akind != bkind {
		return akind < bkind
	}
	return aname < bname
}

func (g *group) workload(key groupKey) Workload {
	reasons := make([]Reason, 0, len(reasonOrder))
	for i, r := range reasonOrder {
		if g.reasons&(1<<i) != 0 {
			reasons = append(reasons, r)
		}
	}
	var oldest *time.Time
	if !g.oldest.IsZero() {
		t := g.oldest
		oldest = &t
	}
	revisions := append([]string{}, g.revisions...)
	images := append([]string{}, g.images...)
	sort.Strings(revisions)
	sort.Strings(images)
	return Workload{
		Namespace:             key.namespace,
		Kind:                  key.kind,
		Name:                  key.name,
		Reasons:               reasons,
		Pods:                  PodCount{Total: g.total, Drifted: g.drifted},
		Current:               Current{Revisions: revisions, Images: images},
		Desired:               g.desired,
		Manifest:              Manifest{Status: ManifestNoRepo},
		OldestDriftedPodStart: oldest,
		Labels:                g.owner.labels,
		Annotations:           g.owner.annotations,
		APIVersion:            g.owner.apiVersion,
		Via:                   g.via,
	}
}
