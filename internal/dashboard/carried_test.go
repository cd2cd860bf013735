package dashboard

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/kedge-io/kedge/internal/ambient"
	"github.com/kedge-io/kedge/internal/objects"
)

func TestCarriedPolicies(t *testing.T) {
	got := CarriedPolicies([]ambient.Finding{
		{Object: ambient.Ref{Kind: "AuthorizationPolicy", Namespace: "web", Name: "get-only"}, Path: "apps/web/policies.yaml", Rewrite: &ambient.Rewrite{
			Selector:   map[string]string{"tier": "api", "app": "frontend"},
			TargetRefs: []objects.PolicyTargetReference{{Kind: "Service", Name: "frontend"}, {Kind: "Service", Name: "frontend-admin"}},
			Waypoints:  []string{"web/waypoint"},
		}},
		{Object: ambient.Ref{Kind: "AuthorizationPolicy", Namespace: "web", Name: "refused"}},
	})
	assert.Equal(t, []CarriedPolicy{{Object: "AuthorizationPolicy web/get-only", Path: "apps/web/policies.yaml", Selector: "app=frontend,tier=api",
		Services: []string{"frontend", "frontend-admin"}, Waypoints: []string{"web/waypoint"}}}, got)
}
