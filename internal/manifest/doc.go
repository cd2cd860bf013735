// Package manifest finds where a drifted workload is defined in a GitOps
// checkout and computes the smallest edit that restarts it.
//
// The index renders every kustomize root with the kustomize library itself,
// with origin annotations switched on, so that every rendered object is traced
// back to the file and document that defines it; identities changed by
// namespace:, namePrefix:, nameSuffix: and patches are therefore exactly what
// kustomize produces, not a re-implementation. Plain YAML files that no
// kustomization reaches are indexed as written.
//
// Edits are computed in memory (the checkout is never written) as before/after
// byte pairs, grouped by namespace because kedge opens one pull request per
// namespace, each branched from the base branch.
package manifest
