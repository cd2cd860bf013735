package argo

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"sigs.k8s.io/kustomize/api/types"
)

// TestArgoDirectoryReads follows the Argo CD directory documentation
// (https://argo-cd.readthedocs.io/en/stable/user-guide/directory/) and the
// repo server's matching: globs on the path relative to the source path,
// "*" crossing directories, brace lists for several patterns.
func TestArgoDirectoryReads(t *testing.T) {
	tests := []struct {
		name string
		dir  Directory
		file string
		want bool
	}{
		{"top file by default", Directory{Path: "apps/web"}, "apps/web/deploy.yaml", true},
		{"sub-directory needs recurse", Directory{Path: "apps/web"}, "apps/web/old/deploy.yaml", false},
		{"recurse reads sub-directories", Directory{Path: "apps/web", Recurse: true}, "apps/web/old/deploy.yaml", true},
		{"another directory", Directory{Path: "apps/web", Recurse: true}, "apps/webhook/deploy.yaml", false},
		{"the repository root", Directory{Path: "."}, "deploy.yaml", true},
		{"include one file", Directory{Path: "kube", Include: "bookinfo.yaml"}, "kube/bookinfo-psa.yaml", false},
		{"include matches the relative path", Directory{Path: "kube", Include: "bookinfo.yaml"}, "kube/bookinfo.yaml", true},
		{"brace list", Directory{Path: "kube", Include: "{bookinfo.yaml,details-v2.yaml}"}, "kube/details-v2.yaml", true},
		{"brace list of globs", Directory{Path: "kube", Include: "{*.yml,*.yaml}"}, "kube/a.yml", true},
		// Argo CD does not split the field: outside braces a comma is a
		// character of the name.
		{"comma outside braces is literal", Directory{Path: "kube", Include: "a.yaml,b.yaml"}, "kube/a.yaml", false},
		{"star crosses directories", Directory{Path: "apps", Recurse: true, Include: "*.yaml"}, "apps/x/y/deploy.yaml", true},
		{"directory glob", Directory{Path: "apps", Recurse: true, Exclude: "legacy/*"}, "apps/legacy/deploy.yaml", false},
		{"exclude wins over include", Directory{Path: "apps", Include: "*.yaml", Exclude: "{config.yaml,*-old.yaml}"}, "apps/api-old.yaml", false},
		{"exclude leaves the rest", Directory{Path: "apps", Include: "*.yaml", Exclude: "{config.yaml,*-old.yaml}"}, "apps/api.yaml", true},
		{"a pattern that does not compile includes nothing", Directory{Path: "apps", Include: "[a"}, "apps/a.yaml", false},
		{"a pattern that does not compile excludes nothing", Directory{Path: "apps", Exclude: "[a"}, "apps/a.yaml", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.dir.reads(tt.file))
		})
	}
}

// TestParseImageArg reads `kustomize edit set image` arguments as an
// Application's kustomize.images writes them.
func TestParseImageArg(t *testing.T) {
	tests := []struct {
		arg  string
		want types.Image
	}{
		{"nginx:1.27", types.Image{Name: "nginx", NewTag: "1.27"}},
		{"ghcr.io/acme/web@sha256:abc", types.Image{Name: "ghcr.io/acme/web", Digest: "sha256:abc"}},
		{"web=ghcr.io/acme/web:2.0", types.Image{Name: "web", NewName: "ghcr.io/acme/web", NewTag: "2.0"}},
		{"registry:5000/web=registry:5000/web-fips", types.Image{Name: "registry:5000/web", NewName: "registry:5000/web-fips"}},
		{"web=*:3.1", types.Image{Name: "web", NewTag: "3.1"}},
		{"localhost:5000/app", types.Image{Name: "localhost:5000/app"}},
	}
	for _, tt := range tests {
		t.Run(tt.arg, func(t *testing.T) {
			assert.Equal(t, tt.want, parseImageArg(tt.arg))
		})
	}
}
