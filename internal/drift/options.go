package drift

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/kedge-io/kedge/internal/image"
)

// DefaultOptOutAnnotation is the annotation whose value "true" on a
// workload, its pod template or its namespace keeps kedge away.
const DefaultOptOutAnnotation = "kedge.io/ignore"

// Workload kinds kedge can restart through their pod template.
const (
	KindDeployment  = "Deployment"
	KindStatefulSet = "StatefulSet"
	KindDaemonSet   = "DaemonSet"
	KindRollout     = "Rollout"
)

// Kinds that own pods but are reported rather than acted on.
const (
	KindJob     = "Job"
	KindCronJob = "CronJob"
	KindPod     = "Pod"
)

// KindCanary is Flagger's Canary, through which a change of its target's
// template reaches the pods of its primary.
const KindCanary = "Canary"

// DefaultKinds are the workload kinds acted on when Options.Kinds is empty.
func DefaultKinds() []string {
	return []string{KindDeployment, KindStatefulSet, KindDaemonSet, KindRollout}
}

// Options select what Compute looks at.
type Options struct {
	// Cluster names the cluster in the plan.
	Cluster string
	// IncludeNamespaces are path.Match globs; empty includes every namespace.
	IncludeNamespaces []string
	// ExcludeNamespaces are path.Match globs and win over includes.
	ExcludeNamespaces []string
	// Kinds are the workload kinds to act on; empty means DefaultKinds.
	Kinds []string
	// OptOutAnnotation defaults to DefaultOptOutAnnotation.
	OptOutAnnotation string
	// Images says when the proxy image a pod runs is the one its revision
	// injects; the zero value compares registries and knows no mirrors.
	Images image.Identity
}

// Validate reports malformed globs and kinds kedge cannot restart.
func (o Options) Validate() error {
	var errs []error
	for _, field := range []struct {
		name     string
		patterns []string
	}{{"include namespaces", o.IncludeNamespaces}, {"exclude namespaces", o.ExcludeNamespaces}} {
		for _, p := range field.patterns {
			if _, err := path.Match(p, ""); err != nil {
				errs = append(errs, fmt.Errorf("%s: pattern %q: %w", field.name, p, err))
			}
		}
	}
	if err := o.Images.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("image mirrors: %w", err))
	}
	for _, k := range o.Kinds {
		if canonicalKind(k) == "" {
			errs = append(errs, fmt.Errorf("kinds: %q is not one of %s", k, strings.Join(DefaultKinds(), ", ")))
		}
	}
	return errors.Join(errs...)
}

func canonicalKind(kind string) string {
	for _, k := range DefaultKinds() {
		if strings.EqualFold(k, kind) {
			return k
		}
	}
	return ""
}

func (o Options) kindSet() map[string]bool {
	kinds := o.Kinds
	if len(kinds) == 0 {
		kinds = DefaultKinds()
	}
	out := make(map[string]bool, len(kinds))
	for _, k := range kinds {
		if c := canonicalKind(k); c != "" {
			out[c] = true
		}
	}
	return out
}

func (o Options) optOutAnnotation() string {
	if o.OptOutAnnotation == "" {
		return DefaultOptOutAnnotation
	}
	return o.OptOutAnnotation
}

// namespaceFilter memoises the glob decision per namespace; globs that do
// not parse match nothing (Validate reports them).
type namespaceFilter struct {
	include, exclude []string
	seen             map[string]bool
}

func newNamespaceFilter(o Options) *namespaceFilter {
	return &namespaceFilter{include: o.IncludeNamespaces, exclude: o.ExcludeNamespaces, seen: map[string]bool{}}
}

func (f *namespaceFilter) allows(ns string) bool {
	if v, ok := f.seen[ns]; ok {
		return v
	}
	v := (len(f.include) == 0 || matchAny(f.include, ns)) && !matchAny(f.exclude, ns)
	f.seen[ns] = v
	return v
}

func matchAny(patterns []string, s string) bool {
	for _, p := range patterns {
		if ok, err := path.Match(p, s); err == nil && ok {
			return true
		}
	}
	return false
}
