// Package render builds what a GitOps controller would apply from files a
// repository's writers control: kustomize roots as kustomize-controller
// and Argo CD's repo server build them, and Helm charts as helm-controller
// and `helm template` render them. It is only ever run inside a sandbox
// worker process (internal/sandbox), whose memory, time and reach are
// bounded: nothing here guards against a hostile input by itself beyond
// what the inputs' file system refuses.
package render

import (
	"encoding/json"
	"fmt"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"

	"github.com/kedge-io/kedge/internal/repofs"
)

// Kustomize builds the kustomize root at the absolute directory dir of the
// build's checkout and returns each object of the result as JSON, in
// kustomize's order. Plugins are off (no exec, no Go plugins, no Helm
// inflation) and any file inside the checkout may be read, as Flux builds
// (LoadRestrictionsNone); the build file system refuses every other.
func Kustomize(fsys *repofs.BuildFS, dir string) (_ [][]byte, err error) {
	// Malformed input has made kustomize panic before; a bad root must not
	// take the process down with it.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("kustomize build panicked: %v", r)
		}
	}()
	opts := krusty.MakeDefaultOptions()
	opts.LoadRestrictions = types.LoadRestrictionsNone
	opts.PluginConfig = types.DisabledPluginConfig()
	rm, err := krusty.MakeKustomizer(opts).Run(fsys, dir)
	if err != nil {
		return nil, err
	}
	out := make([][]byte, 0, rm.Size())
	for _, res := range rm.Resources() {
		body, err := res.Map()
		if err != nil {
			return nil, err
		}
		data, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		out = append(out, data)
	}
	return out, nil
}
