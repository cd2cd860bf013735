package objects

import (
	"encoding/json"

	"k8s.io/apimachinery/pkg/runtime"
)

// The custom resource types are runtime.Objects, so that the live source's
// informers hold them as they are rather than as unstructured maps, which
// cost several times their size.

func (r *Rollout) DeepCopyObject() runtime.Object               { return deepCopy(r) }
func (a *Application) DeepCopyObject() runtime.Object           { return deepCopy(a) }
func (k *Kustomization) DeepCopyObject() runtime.Object         { return deepCopy(k) }
func (g *GitRepository) DeepCopyObject() runtime.Object         { return deepCopy(g) }
func (h *HelmRepository) DeepCopyObject() runtime.Object        { return deepCopy(h) }
func (p *ProxyConfig) DeepCopyObject() runtime.Object           { return deepCopy(p) }
func (a *AuthorizationPolicy) DeepCopyObject() runtime.Object   { return deepCopy(a) }
func (g *Gateway) DeepCopyObject() runtime.Object               { return deepCopy(g) }
func (p *PeerAuthentication) DeepCopyObject() runtime.Object    { return deepCopy(p) }
func (r *RequestAuthentication) DeepCopyObject() runtime.Object { return deepCopy(r) }
func (e *EnvoyFilter) DeepCopyObject() runtime.Object           { return deepCopy(e) }
func (w *WasmPlugin) DeepCopyObject() runtime.Object            { return deepCopy(w) }
func (v *VirtualService) DeepCopyObject() runtime.Object        { return deepCopy(v) }
func (h *HTTPRoute) DeepCopyObject() runtime.Object             { return deepCopy(h) }
func (c *Canary) DeepCopyObject() runtime.Object                { return deepCopy(c) }
func (o *OCIRepository) DeepCopyObject() runtime.Object         { return deepCopy(o) }
func (a *AppProject) DeepCopyObject() runtime.Object            { return deepCopy(a) }

// deepCopy copies through the JSON form the types are declared by. Caches
// copy their objects rarely (to compare two versions of a changed one), and
// a copy that drops nothing the type declares is all that is needed.
func deepCopy[T any](in *T) *T {
	out := new(T)
	if data, err := json.Marshal(in); err == nil {
		_ = json.Unmarshal(data, out)
	}
	return out
}
