package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// ReadRBAC is the deploy/ rule that lets kedge read the cluster.
const ReadRBAC = "ClusterRole kedge in deploy/rbac.yaml"

// Permission is one verb on one kind of object that kedge needs.
type Permission struct {
	Verb, Group, Resource string
	// Namespace is empty for a cluster-wide grant; Name is empty for every
	// object of the kind.
	Namespace, Name string
	// GrantedBy names the deploy/ RBAC that grants it.
	GrantedBy string
}

func (p Permission) String() string {
	resource := p.Resource
	if p.Group != "" {
		resource += "." + p.Group
	}
	if p.Name != "" {
		resource += " " + p.Name
	}
	where := "cluster-wide"
	if p.Namespace != "" {
		where = "in namespace " + p.Namespace
	}
	return fmt.Sprintf("%s %s %s (granted by %s)", p.Verb, resource, where, p.GrantedBy)
}

// MissingPermissionsError lists what the credentials may not do.
type MissingPermissionsError struct{ Missing []Permission }

func (e *MissingPermissionsError) Error() string {
	lines := make([]string, len(e.Missing))
	for i, p := range e.Missing {
		lines[i] = "  " + p.String()
	}
	return "the cluster credentials lack permissions kedge needs:\n" + strings.Join(lines, "\n")
}

// CheckPermissions asks the API server, with one SelfSubjectAccessReview
// each, which of perms the credentials of cfg lack. It reads nothing else,
// so it answers in a moment even where a list would be forbidden.
func CheckPermissions(ctx context.Context, cfg *rest.Config, perms []Permission) ([]Permission, error) {
	c := rest.CopyConfig(cfg)
	// A few dozen small reviews: the default client rate limit would
	// stretch them over seconds.
	c.QPS, c.Burst = 100, 100
	client, err := kubernetes.NewForConfig(c)
	if err != nil {
		return nil, fmt.Errorf("permission check: %w", err)
	}
	reviews := client.AuthorizationV1().SelfSubjectAccessReviews()
	var missing []Permission
	for _, p := range perms {
		review, err := reviews.Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: p.Verb, Group: p.Group, Resource: p.Resource, Namespace: p.Namespace, Name: p.Name,
			}},
		}, metav1.CreateOptions{})
		if err != nil {
			return nil, fmt.Errorf("permission check: %s %s: %w", p.Verb, p.Resource, err)
		}
		if !review.Status.Allowed {
			missing = append(missing, p)
		}
	}
	return missing, nil
}

// Permissions lists what the informers will list and watch: the core kinds,
// the injector ConfigMaps where they are read, and the custom resources the
// API server serves.
func (l *Live) Permissions() ([]Permission, error) {
	served, err := servedCustomResources(l.discovery)
	if err != nil {
		return nil, fmt.Errorf("live cluster source: discovery: %w", err)
	}
	type resource struct{ group, name, namespace string }
	resources := []resource{
		{"", "namespaces", ""}, {"", "pods", ""}, {"", "nodes", ""}, {"", "services", ""},
		{"apps", "replicasets", ""}, {"apps", "deployments", ""}, {"apps", "statefulsets", ""}, {"apps", "daemonsets", ""},
		{"batch", "jobs", ""}, {"batch", "cronjobs", ""},
		{"admissionregistration.k8s.io", "mutatingwebhookconfigurations", ""},
	}
	if len(l.opts.IstioNamespaces) == 0 {
		resources = append(resources, resource{"", "configmaps", ""})
	}
	for _, ns := range slices.Compact(slices.Sorted(slices.Values(l.opts.IstioNamespaces))) {
		resources = append(resources, resource{"", "configmaps", ns})
	}
	for _, cr := range customResources {
		if gvr, ok := served[cr.kind]; ok {
			resources = append(resources, resource{gvr.Group, gvr.Resource, ""})
		}
	}
	var out []Permission
	for _, r := range resources {
		for _, verb := range []string{"list", "watch"} {
			out = append(out, Permission{Verb: verb, Group: r.group, Resource: r.name, Namespace: r.namespace, GrantedBy: ReadRBAC})
		}
	}
	return out, nil
}

// MissingPermissions is what the live source needs and may not do; nil
// when the informers can fill their caches.
func (l *Live) MissingPermissions(ctx context.Context) ([]Permission, error) {
	perms, err := l.Permissions()
	if err != nil {
		return nil, err
	}
	return CheckPermissions(ctx, l.opts.Config, perms)
}

// Preflight fails with a MissingPermissionsError when the credentials may
// not read everything the live source reads, instead of informers that
// retry a forbidden list forever.
func (l *Live) Preflight(ctx context.Context) error {
	missing, err := l.MissingPermissions(ctx)
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		return &MissingPermissionsError{Missing: missing}
	}
	return nil
}

// IsMissingPermissions reports whether err says which permissions lack.
func IsMissingPermissions(err error) bool {
	var missing *MissingPermissionsError
	return errors.As(err, &missing)
}
