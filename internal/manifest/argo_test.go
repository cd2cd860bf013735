package manifest

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestArgoDirectoryReads follows the Argo CD directory documentation
// (https://argo-cd.readthedocs.io/en/stable/user-guide/directory/) and the
// repo server's matching: globs on the path relative to the source path,
// "*" crossing directories, brace lists for several patterns.
func TestArgoDirectoryReads(t *testing.T) {
	tests := []struct {
		name string
		dir  ArgoDirectory
		file string
		want bool
	}{
		{"top file by default", ArgoDirectory{Path: "apps/web"}, "apps/web/deploy.yaml", true},
		{"sub-directory needs recurse", ArgoDirectory{Path: "apps/web"}, "apps/web/old/deploy.yaml", false},
		{"recurse reads sub-directories", ArgoDirectory{Path: "apps/web", Recurse: true}, "apps/web/old/deploy.yaml", true},
		{"another directory", ArgoDirectory{Path: "apps/web", Recurse: true}, "apps/webhook/deploy.yaml", false},
		{"the repository root", ArgoDirectory{Path: "."}, "deploy.yaml", true},
		{"include one file", ArgoDirectory{Path: "kube", Include: "bookinfo.yaml"}, "kube/bookinfo-psa.yaml", false},
		{"include matches the relative path", ArgoDirectory{Path: "kube", Include: "bookinfo.yaml"}, "kube/bookinfo.yaml", true},
		{"brace list", ArgoDirectory{Path: "kube", Include: "{bookinfo.yaml,details-v2.yaml}"}, "kube/details-v2.yaml", true},
		{"brace list of globs", ArgoDirectory{Path: "kube", Include: "{*.yml,*.yaml}"}, "kube/a.yml", true},
		// Argo CD does not split the field: outside braces a comma is a
		// character of the name.
		{"comma outside braces is literal", ArgoDirectory{Path: "kube", Include: "a.yaml,b.yaml"}, "kube/a.yaml", false},
		{"star crosses directories", ArgoDirectory{Path: "apps", Recurse: true, Include: "*.yaml"}, "apps/x/y/deploy.yaml", true},
		{"directory glob", ArgoDirectory{Path: "apps", Recurse: true, Exclude: "legacy/*"}, "apps/legacy/deploy.yaml", false},
		{"exclude wins over include", ArgoDirectory{Path: "apps", Include: "*.yaml", Exclude: "{config.yaml,*-old.yaml}"}, "apps/api-old.yaml", false},
		{"exclude leaves the rest", ArgoDirectory{Path: "apps", Include: "*.yaml", Exclude: "{config.yaml,*-old.yaml}"}, "apps/api.yaml", true},
		{"a pattern that does not compile includes nothing", ArgoDirectory{Path: "apps", Include: "[a"}, "apps/a.yaml", false},
		{"a pattern that does not compile excludes nothing", ArgoDirectory{Path: "apps", Exclude: "[a"}, "apps/a.yaml", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.dir.reads(tt.file))
		})
	}
}
