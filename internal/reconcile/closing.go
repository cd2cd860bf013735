package reconcile

import (
	"path"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kedge-io/kedge/internal/dashboard"
	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/gitops/restart"
	"github.com/kedge-io/kedge/internal/migrate"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/prstate"
)

// closing is why kedge closes a namespace's PR unmerged: the comment kind
// and what became of each target the PR was opened for.
type closing struct {
	kind              string
	closed            []dashboard.ClosedTarget
	namespaceOptedOut bool
}

// closingFacts are what a closing is worked out from: the cluster as read
// this cycle, the plan and its refusals, and the drift settings.
type closingFacts struct {
	namespace string
	// repository is the checkout the PR's target edits, as the plan
	// names it ("owner/name@branch").
	repository string
	targets    []prstate.Target
	set        *objects.Set
	plan       drift.Plan
	refused    []restart.Refusal
	opts       drift.Options
}

// explainClosing tells, target by target, why a PR has nothing left to do.
// Reasons that hold for the whole namespace (opted out, no longer selected,
// deleted) come first, so the comment names the cause a person acted on.
func explainClosing(f closingFacts) closing {
	annotations, exists := namespaceAnnotations(f.set, f.namespace)
	c := closing{namespaceOptedOut: exists && annotations[optOutAnnotation(f.opts)] == "true"}
	whole, wholeDetail := f.namespaceFate(exists, c.namespaceOptedOut)
	for _, t := range f.targets {
		fate, detail := whole, wholeDetail
		if fate == "" {
			fate, detail = f.targetFate(t)
		}
		c.closed = append(c.closed, dashboard.ClosedTarget{Target: t, Fate: fate, Detail: detail})
	}
	if len(f.targets) == 0 {
		c.kind = dashboard.ClosingKinds[f.untargetedFate(whole)]
		return c
	}
	c.kind = dashboard.ClosingKinds[c.closed[0].Fate]
	for _, t := range c.closed[1:] {
		if t.Fate != c.closed[0].Fate {
			c.kind = dashboard.CommentClosedMixed
		}
	}
	return c
}

// namespaceFate is the fate every target shares because of its namespace;
// "" when each target decides for itself.
func (f closingFacts) namespaceFate(exists, optedOut bool) (prstate.Fate, string) {
	switch {
	case !exists:
		return prstate.FateDeleted, "namespace " + f.namespace + " no longer exists"
	case optedOut:
		return prstate.FateOptedOut, "annotation " + optOutAnnotation(f.opts) + "=true on the namespace"
	}
	if key := namespaceSetting(f.opts, f.namespace); key != "" {
		return prstate.FateNotSelected, key
	}
	return "", ""
}

// untargetedFate is the fate of a PR whose body no longer says what it
// targeted: the namespace's, else whether anything there still drifts.
func (f closingFacts) untargetedFate(whole prstate.Fate) prstate.Fate {
	if whole != "" {
		return whole
	}
	for _, w := range f.plan.Workloads {
		if w.Namespace == f.namespace {
			return prstate.FateNotEditable
		}
	}
	return prstate.FateResolved
}

func (f closingFacts) targetFate(t prstate.Target) (prstate.Fate, string) {
	if t.Kind == "Namespace" {
		return f.relabelFate()
	}
	if !kindSelected(f.opts, t.Kind) {
		return prstate.FateNotSelected, "workloads.kinds"
	}
	if !workloadExists(f.set, t.Namespace, t.Kind, t.Name) {
		return prstate.FateDeleted, ""
	}
	for _, s := range f.plan.Skipped {
		if s.Namespace != t.Namespace || s.Kind != t.Kind || s.Name != t.Name {
			continue
		}
		if s.Reason == drift.SkipOptedOut {
			return prstate.FateOptedOut, s.Detail
		}
		return prstate.FateNotEditable, skipDetail(s)
	}
	for _, w := range f.plan.Workloads {
		if w.Namespace == t.Namespace && w.Kind == t.Kind && w.Name == t.Name {
			return prstate.FateNotEditable, f.noEditDetail(w)
		}
	}
	return prstate.FateResolved, ""
}

// relabelFate is what became of a migration the PR carried.
func (f closingFacts) relabelFate() (prstate.Fate, string) {
	m, ok := migrate.For(f.plan, f.namespace)
	switch {
	case !ok:
		return prstate.FateResolved, ""
	case !m.Moves():
		return prstate.FateNotEditable, "the migration is blocked: " + string(m.Blocked)
	case !m.Relabels() && m.Manifest.Edit != drift.EditLabelAlreadySet:
		return prstate.FateNotEditable, manifestDetail(m.Manifest)
	}
	return prstate.FateResolved, ""
}

// noEditDetail says why a workload that still drifts has no edit.
func (f closingFacts) noEditDetail(w drift.Workload) string {
	if w.Manifest.Status != drift.ManifestFound {
		return manifestDetail(w.Manifest)
	}
	if w.Manifest.Repository != "" && w.Manifest.Repository != f.repository {
		return "applied from " + w.Manifest.Repository + " now, where kedge proposes its restart"
	}
	for _, r := range f.refused {
		for _, id := range r.Workloads {
			if r.Namespace == w.Namespace && id.Kind == w.Kind && id.Name == w.Name {
				return "kedge would not edit " + r.Path + ": " + r.Reason
			}
		}
	}
	return "the base branch already carries its restart; the rollout has not happened yet"
}

func manifestDetail(m drift.Manifest) string {
	switch {
	case m.Status == drift.ManifestHelm:
		return "rendered by Helm (" + m.Detail + ")"
	case m.Status == drift.ManifestAmbiguous:
		return "several files could define it: " + strings.Join(m.Candidates, ", ")
	case m.Detail != "":
		return m.Detail
	}
	return "manifest " + m.Status
}

func skipDetail(s drift.Skipped) string {
	if s.Detail != "" {
		return string(s.Reason) + ": " + s.Detail
	}
	return string(s.Reason)
}

func optOutAnnotation(o drift.Options) string {
	if o.OptOutAnnotation != "" {
		return o.OptOutAnnotation
	}
	return drift.DefaultOptOutAnnotation
}

// namespaceSetting names the setting that leaves a namespace out, as
// drift.Options applies them (exclude wins); "" when it is selected.
func namespaceSetting(o drift.Options, namespace string) string {
	switch {
	case matchesAny(o.ExcludeNamespaces, namespace):
		return "namespaces.exclude"
	case len(o.IncludeNamespaces) > 0 && !matchesAny(o.IncludeNamespaces, namespace):
		return "namespaces.include"
	}
	return ""
}

func matchesAny(globs []string, s string) bool {
	for _, g := range globs {
		if ok, err := path.Match(g, s); err == nil && ok {
			return true
		}
	}
	return false
}

func kindSelected(o drift.Options, kind string) bool {
	kinds := o.Kinds
	if len(kinds) == 0 {
		kinds = drift.DefaultKinds()
	}
	for _, k := range kinds {
		if strings.EqualFold(k, kind) {
			return true
		}
	}
	return false
}

func namespaceAnnotations(set *objects.Set, name string) (map[string]string, bool) {
	for _, ns := range set.Namespaces {
		if ns.Name == name {
			return ns.Annotations, true
		}
	}
	return nil, false
}

func workloadExists(set *objects.Set, namespace, kind, name string) bool {
	named := func(m metav1.Object) bool { return m.GetNamespace() == namespace && m.GetName() == name }
	switch kind {
	case drift.KindDeployment:
		return slices.ContainsFunc(set.Deployments, func(o *appsv1.Deployment) bool { return named(o) })
	case drift.KindStatefulSet:
		return slices.ContainsFunc(set.StatefulSets, func(o *appsv1.StatefulSet) bool { return named(o) })
	case drift.KindDaemonSet:
		return slices.ContainsFunc(set.DaemonSets, func(o *appsv1.DaemonSet) bool { return named(o) })
	case drift.KindRollout:
		return slices.ContainsFunc(set.Rollouts, func(o *objects.Rollout) bool { return named(o) })
	}
	return false
}
