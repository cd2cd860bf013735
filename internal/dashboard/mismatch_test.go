package dashboard

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestMismatchSentence(t *testing.T) {
	tests := []struct {
		name     string
		mismatch Mismatch
		want     string
	}{
		{"no foreign repository", Mismatch{Configured: "acme/gitops"}, ""},
		{
			"one namespace",
			Mismatch{Configured: "acme/gitops", Foreign: []ForeignRepository{{Repository: "github.com/acme/platform", Namespaces: []string{"search"}}}},
			"the cluster applies namespace search from github.com/acme/platform; kedge is configured for acme/gitops",
		},
		{
			"several namespaces",
			Mismatch{Configured: "acme/gitops", Foreign: []ForeignRepository{{Repository: "github.com/acme/platform", Namespaces: []string{"orders", "search"}}}},
			"the cluster applies namespaces orders, search from github.com/acme/platform; kedge is configured for acme/gitops",
		},
		{
			"several repositories",
			Mismatch{Configured: "acme/gitops", Foreign: []ForeignRepository{
				{Repository: "github.com/acme/platform", Namespaces: []string{"orders", "search"}},
				{Repository: "github.com/acme/legacy", Namespaces: []string{"billing"}},
				{Repository: "gitlab.acme.io/ops/x", Namespaces: []string{"x"}},
			}},
			"the cluster applies namespaces orders, search from github.com/acme/platform, namespace billing from github.com/acme/legacy and namespace x from gitlab.acme.io/ops/x; kedge is configured for acme/gitops",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.mismatch.Sentence())
		})
	}
}
