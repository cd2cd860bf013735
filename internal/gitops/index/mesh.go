package index

import (
	"slices"

	"sigs.k8s.io/kustomize/api/resource"

	"github.com/kedge-io/kedge/internal/gitops/document"
	"github.com/kedge-io/kedge/internal/repofs"
)

// MeshObject is an object of a kind Istio's sidecar-to-ambient migration
// guide names (its policies, routes and waypoint Gateways), or a Service,
// as the repository deploys it: its rendered identity and the file and
// document it is written in, so that a refusal can name the file and a
// rewrite can edit it.
type MeshObject struct {
	APIVersion, Kind, Namespace, Name string
	// Root is the kustomize root rendering it; empty for a plain file.
	Root string
	// Source is where it is written; Source.Path is empty when a generator
	// or a remote base produced it.
	Source Source
}

// meshKinds are the kinds MeshObjects lists, by API group.
var meshKinds = map[string][]string{
	"security.istio.io":         {"AuthorizationPolicy", "PeerAuthentication", "RequestAuthentication"},
	"networking.istio.io":       {"EnvoyFilter", "VirtualService"},
	"extensions.istio.io":       {"WasmPlugin"},
	"gateway.networking.k8s.io": {"Gateway", "HTTPRoute"},
	"":                          {"Service"},
}

func isMeshKind(apiVersion, kind string) bool {
	return slices.Contains(meshKinds[document.Group(apiVersion)], kind)
}

// MeshObjects returns every object of those kinds the repository deploys.
func (ix *Index) MeshObjects() []MeshObject { return slices.Clone(ix.mesh) }

// renderedMeshObject places an object a kustomize build rendered in the
// document its origin annotation names.
func renderedMeshObject(fsys *repofs.FS, dir, rootDir, apiVersion, kind, name, namespace string, origin *resource.Origin, originErr error, docs *DocCache) MeshObject {
	m := MeshObject{APIVersion: apiVersion, Kind: kind, Namespace: namespace, Name: name, Root: rootDir}
	if originErr != nil || origin == nil || origin.Repo != "" || origin.Path == "" {
		return m
	}
	if src, err := sourceFor(fsys, dir, origin.Path, &Object{Kind: kind, Name: name, Namespace: namespace}, docs); err == nil {
		m.Source = src
	}
	return m
}

// documentMeshObject is a document of a file the index reads as it is.
func documentMeshObject(d document.Document, namespace, root, rel string) MeshObject {
	return MeshObject{
		APIVersion: d.APIVersion, Kind: d.Kind, Namespace: namespace, Name: d.Name, Root: root,
		Source: Source{Path: rel, Document: d.Index, APIVersion: d.APIVersion, Kind: d.Kind, Name: d.Name, Namespace: d.Namespace},
	}
}
