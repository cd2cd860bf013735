// Package index reads a GitOps checkout into the documents it holds and
// knows documents only: every manifest and kustomize root, each root
// rendered with the kustomize library in a render worker (origin
// annotations on, so that every rendered object is traced back to the file
// and document that defines it; identities changed by namespace:,
// namePrefix:, nameSuffix: and patches are therefore exactly what
// kustomize produces, not a re-implementation), the Flux and Argo CD
// objects the repository writes, and which root reads which file. Plain
// YAML files that no kustomization reaches are indexed as written. What a
// GitOps object builds from these documents is its source's to say
// (internal/gitops/flux, argo, helmrelease); where a workload's restart
// goes is internal/gitops/locate's.
//
// Every file is read through the checkout's repofs.FS: nothing outside the
// checkout is ever read. The index is built once per checkout and updated
// from the files Git says changed; nothing writes into it once built.
package index
