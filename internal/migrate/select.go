package migrate

import (
	"path"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/kedge-io/kedge/internal/ambient"
	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/mesh"
	"github.com/kedge-io/kedge/internal/objects"
)

// Scope is the part of kedge's own namespace filtering a migration obeys:
// a namespace kedge does not look at is never moved.
type Scope struct {
	IncludeNamespaces []string
	ExcludeNamespaces []string
	// OptOutAnnotation with the value "true" on a namespace keeps kedge
	// away from it altogether.
	OptOutAnnotation string
}

// ScopeOf reads the scope from the drift options.
func ScopeOf(o drift.Options) Scope {
	return Scope{IncludeNamespaces: o.IncludeNamespaces, ExcludeNamespaces: o.ExcludeNamespaces, OptOutAnnotation: o.OptOutAnnotation}
}

func (s Scope) allows(ns *corev1.Namespace) bool {
	optOut := s.OptOutAnnotation
	if optOut == "" {
		optOut = drift.DefaultOptOutAnnotation
	}
	if ns.Annotations[optOut] == "true" {
		return false
	}
	return (len(s.IncludeNamespaces) == 0 || matchAny(s.IncludeNamespaces, ns.Name)) && !matchAny(s.ExcludeNamespaces, ns.Name)
}

func matchAny(patterns []string, s string) bool {
	for _, p := range patterns {
		if ok, err := path.Match(p, s); err == nil && ok {
			return true
		}
	}
	return false
}

// Select lists, sorted by namespace, every namespace a policy selects, with
// the target revision and, when it cannot move now, why. The first policy
// selecting a namespace wins. Git is not consulted: see Checkout.
func Select(set *objects.Set, model *mesh.Model, policies []Policy, scope Scope) []drift.Migration {
	if len(policies) == 0 {
		return nil
	}
	var out []drift.Migration
	// Indexed once, on the first namespace moving into or out of ambient
	// mode: a fleet has thousands of namespaces and a hundred thousand pods.
	var cluster *ambient.Cluster
	ambientCluster := func() *ambient.Cluster {
		if cluster == nil {
			cluster = ambient.NewCluster(set)
		}
		return cluster
	}
	for i := range set.Namespaces {
		ns := &set.Namespaces[i]
		if !scope.allows(ns) {
			continue
		}
		for _, p := range policies {
			p = p.normalized()
			if !selects(p, ns) {
				continue
			}
			switch {
			case p.To == drift.Ambient:
				out = append(out, decideAmbient(ambientCluster(), model, p, ns))
			case p.From == drift.Ambient:
				out = append(out, decideBack(ambientCluster(), model, p, ns))
			default:
				out = append(out, decide(model, p, ns))
			}
			break
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Namespace < out[j].Namespace })
	return out
}

// selects reports whether the policy applies to the namespace: it matches
// the selector and sits on From.
func selects(p Policy, ns *corev1.Namespace) bool {
	for k, v := range p.NamespaceSelector {
		got, ok := ns.Labels[k]
		if !ok && k == mesh.LabelNamespaceName {
			got, ok = ns.Name, true
		}
		if !ok || got != v {
			return false
		}
	}
	if p.From == drift.Ambient {
		return ns.Labels[ambient.LabelDataplaneMode] == ambient.ModeAmbient
	}
	if ns.Labels[mesh.LabelRev] == p.From {
		return true
	}
	// The default revision also injects namespaces through the older
	// label; they belong to a policy moving away from it, if only to be
	// reported as blocked.
	return p.From == mesh.DefaultRevision && ns.Labels[mesh.LabelInjection] == "enabled"
}

func decide(model *mesh.Model, p Policy, ns *corev1.Namespace) drift.Migration {
	m := drift.Migration{Namespace: ns.Name, From: p.From, To: p.To, Workloads: []drift.MigrationWorkload{}}
	target, _ := TargetRevision(model, p.To)
	m.Revision = target
	if p.OptOutLabel != "" {
		if v, ok := ns.Labels[p.OptOutLabel]; ok && v != "false" {
			return blocked(m, drift.BlockOptedOut, "label "+p.OptOutLabel+"="+v)
		}
	}
	rev, ok := model.Revision(target)
	switch {
	case !ok || !rev.HasWebhooks:
		return blocked(m, drift.BlockTargetNotReady, "revision "+target+" has no injector webhook configuration")
	case rev.ConfigMap == "":
		return blocked(m, drift.BlockTargetNotReady, "revision "+target+" has no injector ConfigMap")
	}

	// Ask the webhooks, as the API server would, who answers a pod without
	// labels of its own once the namespace carries the new value.
	d := model.Decide(ns.Name, relabelled(ns.Labels, p.To, nil), mesh.Template{})
	if answers(d, target) {
		return m
	}
	outcome := whoAnswers(d)
	v, injected := ns.Labels[mesh.LabelInjection]
	if !injected {
		return blocked(m, drift.BlockNotInjected, "with "+mesh.LabelRev+"="+p.To+" "+outcome)
	}
	// istio-injection=enabled only asks the default revision to inject;
	// taking it off in the same change hands the namespace to the target,
	// as Istio's revision upgrade guide does.
	if v == "enabled" {
		without := []string{mesh.LabelInjection}
		d = model.Decide(ns.Name, relabelled(ns.Labels, p.To, without), mesh.Template{})
		if answers(d, target) {
			m.RemoveLabels = without
			return m
		}
		return blocked(m, drift.BlockIstioInjection, "without "+mesh.LabelInjection+" and with "+mesh.LabelRev+"="+p.To+" "+whoAnswers(d))
	}
	return blocked(m, drift.BlockIstioInjection,
		mesh.LabelInjection+"="+v+" wins over "+mesh.LabelRev+": with "+mesh.LabelRev+"="+p.To+" "+outcome+
			"; remove "+mesh.LabelInjection+" from the namespace in Git to move it")
}

func answers(d mesh.Decision, target string) bool {
	return len(d.Conflict) == 0 && d.Matched == target
}

func whoAnswers(d mesh.Decision) string {
	switch {
	case len(d.Conflict) > 0:
		return "the webhooks of several revisions would select the namespace (" + strings.Join(d.Conflict, ", ") + ")"
	case d.Matched != "":
		return "revision " + d.Matched + " would still inject it"
	}
	return "no injector webhook would select the namespace"
}

func blocked(m drift.Migration, why drift.MigrationBlock, detail string) drift.Migration {
	m.Blocked, m.Detail = why, detail
	return m
}

// movedLabels is the namespace's labels once the migration moved it.
func movedLabels(labels map[string]string, m drift.Migration) map[string]string {
	if !m.ToAmbient() {
		return relabelled(labels, m.To, m.RemoveLabels)
	}
	out := make(map[string]string, len(labels)+len(m.SetLabels))
	for k, v := range labels {
		out[k] = v
	}
	for _, k := range m.RemoveLabels {
		delete(out, k)
	}
	for k, v := range m.SetLabels {
		out[k] = v
	}
	return out
}

// relabelled is the namespace's labels once moved: istio.io/rev set to
// value, and the labels in remove gone.
func relabelled(labels map[string]string, value string, remove []string) map[string]string {
	out := make(map[string]string, len(labels)+1)
	for k, v := range labels {
		out[k] = v
	}
	for _, k := range remove {
		delete(out, k)
	}
	out[mesh.LabelRev] = value
	return out
}

// Relabel returns the cluster as it will be once every moving namespace
// carries its new label: the plan computed from it restarts workloads onto
// the target revision. set itself is not changed.
func Relabel(set *objects.Set, migrations []drift.Migration) *objects.Set {
	to := map[string]drift.Migration{}
	for _, m := range migrations {
		if m.Moves() {
			to[m.Namespace] = m
		}
	}
	if len(to) == 0 {
		return set
	}
	out := *set
	out.Namespaces = make([]corev1.Namespace, len(set.Namespaces))
	for i := range set.Namespaces {
		ns := set.Namespaces[i]
		if m, ok := to[ns.Name]; ok {
			ns.Labels = movedLabels(ns.Labels, m)
		}
		out.Namespaces[i] = ns
	}
	return &out
}
