package reconcile

import (
	"testing"

	"github.com/stretchr/testify/assert"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kedge-io/kedge/internal/dashboard"
	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/gitops/restart"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/prstate"
)

func TestExplainClosing(t *testing.T) {
	namespace := func(name string, annotations map[string]string) corev1.Namespace {
		return corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations}}
	}
	deployment := func(ns, name string) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	}
	set := &objects.Set{
		Namespaces: []corev1.Namespace{
			namespace("shop", nil),
			namespace("quiet", map[string]string{"kedge.io/ignore": "true"}),
			namespace("batch", nil),
		},
		Deployments: []*appsv1.Deployment{
			deployment("shop", "cart"), deployment("shop", "web"), deployment("shop", "api"),
			deployment("shop", "legacy"), deployment("quiet", "app"), deployment("batch", "worker"),
		},
	}
	target := func(ns, name string) prstate.Target {
		return prstate.Target{Namespace: ns, Kind: "Deployment", Name: name, Revision: "1-25-0"}
	}
	drifting := func(name string, m drift.Manifest) drift.Workload {
		return drift.Workload{Namespace: "shop", Kind: "Deployment", Name: name, Manifest: m}
	}
	plan := drift.Plan{
		Workloads: []drift.Workload{
			drifting("web", drift.Manifest{Status: drift.ManifestNotFound, Detail: "Flux Kustomization flux-system/shop applies it from https://github.com/acme/platform, not this repository"}),
			drifting("api", drift.Manifest{Status: drift.ManifestFound, Path: "apps/shop/api.yaml", Edit: drift.EditInPlace}),
		},
		Skipped: []drift.Skipped{
			{Namespace: "shop", Kind: "Deployment", Name: "legacy", Reason: drift.SkipOptedOut, Detail: "annotation kedge.io/ignore=true"},
		},
	}
	refused := []restart.Refusal{{Namespace: "shop", Path: "apps/shop/api.yaml", Reason: "YAML anchors would change", Workloads: []restart.WorkloadID{{Kind: "Deployment", Name: "api"}}}}

	tests := []struct {
		name      string
		namespace string
		targets   []prstate.Target
		opts      drift.Options
		wantKind  string
		wantFates []prstate.Fate
		wantNSOut bool
	}{
		{"the workloads run the desired proxy", "shop", []prstate.Target{target("shop", "cart")}, drift.Options{},
			dashboard.CommentClosed, []prstate.Fate{prstate.FateResolved}, false},
		{"the namespace opted out", "quiet", []prstate.Target{target("quiet", "app")}, drift.Options{},
			dashboard.CommentClosedOptedOut, []prstate.Fate{prstate.FateOptedOut}, true},
		{"an annotation other than the configured one is no opt-out", "quiet", []prstate.Target{target("quiet", "app")}, drift.Options{OptOutAnnotation: "example.com/hands-off"},
			dashboard.CommentClosed, []prstate.Fate{prstate.FateResolved}, false},
		{"every workload opted out", "shop", []prstate.Target{target("shop", "legacy")}, drift.Options{},
			dashboard.CommentClosedOptedOut, []prstate.Fate{prstate.FateOptedOut}, false},
		{"the namespace is excluded", "batch", []prstate.Target{target("batch", "worker")}, drift.Options{ExcludeNamespaces: []string{"bat*"}},
			dashboard.CommentClosedNotSelected, []prstate.Fate{prstate.FateNotSelected}, false},
		{"the namespace is no longer included", "batch", []prstate.Target{target("batch", "worker")}, drift.Options{IncludeNamespaces: []string{"shop"}},
			dashboard.CommentClosedNotSelected, []prstate.Fate{prstate.FateNotSelected}, false},
		{"the kind is no longer selected", "shop", []prstate.Target{target("shop", "cart")}, drift.Options{Kinds: []string{"StatefulSet"}},
			dashboard.CommentClosedNotSelected, []prstate.Fate{prstate.FateNotSelected}, false},
		{"the workload was deleted", "shop", []prstate.Target{target("shop", "gone")}, drift.Options{},
			dashboard.CommentClosedDeleted, []prstate.Fate{prstate.FateDeleted}, false},
		{"the namespace was deleted", "old", []prstate.Target{target("old", "cart")}, drift.Options{},
			dashboard.CommentClosedDeleted, []prstate.Fate{prstate.FateDeleted}, false},
		{"the manifest comes from another repository", "shop", []prstate.Target{target("shop", "web")}, drift.Options{},
			dashboard.CommentClosedNotEditable, []prstate.Fate{prstate.FateNotEditable}, false},
		{"the manifest is refused", "shop", []prstate.Target{target("shop", "api")}, drift.Options{},
			dashboard.CommentClosedNotEditable, []prstate.Fate{prstate.FateNotEditable}, false},
		{"different ends", "shop", []prstate.Target{target("shop", "cart"), target("shop", "gone"), target("shop", "legacy")}, drift.Options{},
			dashboard.CommentClosedMixed, []prstate.Fate{prstate.FateResolved, prstate.FateDeleted, prstate.FateOptedOut}, false},
		{"no recorded targets, drift left that kedge cannot edit", "shop", nil, drift.Options{},
			dashboard.CommentClosedNotEditable, nil, false},
		{"no recorded targets, nothing drifts", "batch", nil, drift.Options{},
			dashboard.CommentClosed, nil, false},
		{"no recorded targets, namespace opted out", "quiet", nil, drift.Options{},
			dashboard.CommentClosedOptedOut, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := explainClosing(closingFacts{namespace: tt.namespace, targets: tt.targets, set: set, plan: plan, refused: refused, opts: tt.opts})
			assert.Equal(t, tt.wantKind, c.kind)
			assert.Equal(t, tt.wantNSOut, c.namespaceOptedOut)
			var fates []prstate.Fate
			for _, ct := range c.closed {
				fates = append(fates, ct.Fate)
			}
			assert.Equal(t, tt.wantFates, fates)
		})
	}
}

func TestExplainClosingSaysWhy(t *testing.T) {
	set := &objects.Set{Namespaces: []corev1.Namespace{{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}},
		Deployments: []*appsv1.Deployment{{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "api"}}}}
	plan := drift.Plan{Workloads: []drift.Workload{{Namespace: "shop", Kind: "Deployment", Name: "api",
		Manifest: drift.Manifest{Status: drift.ManifestFound, Path: "apps/shop/api.yaml", Edit: drift.EditAlreadyBumped}}}}
	refusal := restart.Refusal{Namespace: "shop", Path: "apps/shop/api.yaml", Reason: "YAML anchors would change",
		Workloads: []restart.WorkloadID{{Kind: "Deployment", Name: "api"}}}
	tests := []struct {
		name    string
		refused []restart.Refusal
		opts    drift.Options
		want    string
	}{
		{"refused file", []restart.Refusal{refusal}, drift.Options{}, "kedge would not edit apps/shop/api.yaml: YAML anchors would change"},
		{"restart already on the base branch", nil, drift.Options{}, "the base branch already carries its restart; the rollout has not happened yet"},
		{"excluded namespace", nil, drift.Options{ExcludeNamespaces: []string{"shop"}}, "namespaces.exclude"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := explainClosing(closingFacts{namespace: "shop", set: set, plan: plan, refused: tt.refused, opts: tt.opts,
				targets: []prstate.Target{{Namespace: "shop", Kind: "Deployment", Name: "api"}}})
			if assert.Len(t, c.closed, 1) {
				assert.Equal(t, tt.want, c.closed[0].Detail)
			}
		})
	}
}
