// Package doctor checks, without changing anything, that kedge can run
// where it is configured: its configuration, its Kubernetes permissions,
// the Istio it reads, its Lease, its GitHub credentials and what they were
// granted, and each repository it writes to. Each check is one line, and a
// failed one says how to fix it. The checks are those kedge itself makes
// when it starts, or the first call that would fail without them; the
// Kubernetes permissions are asked of the API server with the
// SelfSubjectAccessReviews the service's startup check sends.
//
// Read-only means nothing in the cluster, the repositories or GitHub is
// changed. Like kedge, doctor mints a GitHub App installation token to try
// a clone; that creates no content anywhere.
package doctor

import (
	"context"
	"fmt"
	"io"
	"strings"
)

// Status is a check's outcome.
type Status string

const (
	Pass Status = "ok"
	Fail Status = "FAIL"
	// Skip is a check that could not run because one it depends on
	// failed; its Fix names that check.
	Skip Status = "skip"
)

// Result is one check's line.
type Result struct {
	Check  string
	Status Status
	// Detail is what was found.
	Detail string
	// Fix says what to do, for a failed or skipped check.
	Fix string
}

// Write prints one line per result: the status, the check, what was
// found and, for a check that did not pass, the fix.
func Write(w io.Writer, results []Result) error {
	for _, r := range results {
		line := fmt.Sprintf("%-4s  %s: %s", r.Status, r.Check, r.Detail)
		if r.Status != Pass && r.Fix != "" {
			line += " — fix: " + r.Fix
		}
		if _, err := fmt.Fprintln(w, strings.ReplaceAll(line, "\n", " ")); err != nil {
			return err
		}
	}
	return nil
}

// Failed counts the checks that failed; a skipped check counts as one
// that could not be shown to hold.
func Failed(results []Result) int {
	n := 0
	for _, r := range results {
		if r.Status != Pass {
			n++
		}
	}
	return n
}

// Run makes every check of env, in the order a person fixes them:
// configuration, cluster, GitHub, repositories.
func Run(ctx context.Context, env Env) []Result {
	results := []Result{configResult(env)}
	if env.Config == nil {
		for _, name := range []string{checkKubernetes, checkIstio, checkLease, checkGitHub, checkRepositories, checkDashboard} {
			results = append(results, Result{Check: name, Status: Skip, Detail: "not checked", Fix: "fix the configuration first"})
		}
		return results
	}
	c := &checker{env: env}
	results = append(results, c.kubernetes(ctx), c.istio(ctx), c.lease(ctx), c.credentials(ctx))
	repos := c.repositories(ctx)
	results = append(results, repos...)
	results = append(results, c.dashboard(ctx))
	return results
}
