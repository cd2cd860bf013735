package doctor

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/testing/meshtest"
)

func TestIstioResult(t *testing.T) {
	const image = "docker.io/istio/proxyv2:1.25.0"
	cases := []struct {
		name    string
		install meshtest.Install
		status  Status
		detail  string
	}{
		{name: "no Istio", status: Fail,
			detail: "no sidecar injector found: no MutatingWebhookConfiguration has a *.sidecar-injector.istio.io webhook and no injector ConfigMap has the istio.io/rev label"},
		{name: "a revision and a tag", install: meshtest.Merge(meshtest.IstiodRevision("1-25-0", image), meshtest.RevisionTag("stable", "1-25-0")), status: Pass,
			detail: "revisions 1-25-0 (docker.io/istio/proxyv2:1.25.0, ConfigMap istio-system/istio-sidecar-injector-1-25-0); tags stable → 1-25-0"},
		{name: "an injector without its ConfigMap", install: meshtest.IstiodRevision("1-25-0", image, meshtest.WithoutConfigMap()), status: Fail,
			detail: "revisions 1-25-0 (no injector ConfigMap); kedge cannot model: revision 1-25-0: its injector webhooks answer, but no readable injector ConfigMap says which proxy it injects"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			set := &objects.Set{}
			tc.install.AddTo(set)
			r := istioResult(set)
			assert.Equal(t, tc.status, r.Status, r.Detail)
			assert.Equal(t, tc.detail, r.Detail)
			if tc.status == Fail {
				assert.NotEmpty(t, r.Fix)
			}
		})
	}
}
