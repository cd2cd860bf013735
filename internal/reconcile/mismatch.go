package reconcile

import (
	"net/url"
	"sort"
	"strings"

	"github.com/kedge-io/kedge/internal/dashboard"
	"github.com/kedge-io/kedge/internal/plan"
)

// repositoryMismatch finds the namespaces whose drifted workloads the
// cluster's Flux or Argo CD sources apply from another repository than the
// configured one (with repos: rules, from a repository no rule admits).
// kedge cannot restart those through Git, and without saying so a cycle
// would look like a success with nothing to do.
func (r *Reconciler) repositoryMismatch(res *plan.Result) dashboard.Mismatch {
	m := dashboard.Mismatch{Configured: r.configuredRepositories(), Allowlist: len(r.settings.Rules) > 0}
	byRepo := map[string]map[string]bool{}
	for ns, facts := range res.Namespaces {
		if facts.OtherRepo == "" {
			continue
		}
		repo := displayRepository(facts.OtherRepo)
		if byRepo[repo] == nil {
			byRepo[repo] = map[string]bool{}
		}
		byRepo[repo][ns] = true
	}
	for repo, namespaces := range byRepo {
		f := dashboard.ForeignRepository{Repository: repo}
		for ns := range namespaces {
			f.Namespaces = append(f.Namespaces, ns)
		}
		sort.Strings(f.Namespaces)
		m.Foreign = append(m.Foreign, f)
	}
	sort.Slice(m.Foreign, func(i, j int) bool { return m.Foreign[i].Repository < m.Foreign[j].Repository })
	return m
}

// configuredRepositories names what kedge may write to: repo:, and with
// rules their patterns too.
func (r *Reconciler) configuredRepositories() string {
	names := []string{configuredRepository(r.settings.RepoWebURL)}
	for _, rule := range r.settings.Rules {
		if !strings.EqualFold(rule.Match, names[0]) {
			names = append(names, rule.Match)
		}
	}
	return strings.Join(names, ", ")
}

// foreignNamespaces maps each namespace of a mismatch to the repository it
// is applied from.
func foreignNamespaces(m dashboard.Mismatch) map[string]string {
	out := map[string]string{}
	for _, f := range m.Foreign {
		for _, ns := range f.Namespaces {
			out[ns] = f.Repository
		}
	}
	return out
}

// configuredRepository is owner/name, the path of the repository's web
// address (https://github.com/owner/name, or a GitHub Enterprise host).
func configuredRepository(webURL string) string {
	u, err := url.Parse(webURL)
	if err != nil || u.Path == "" {
		return webURL
	}
	return strings.Trim(u.Path, "/")
}

// displayRepository writes a source address as host/path, the way people
// name a repository: without scheme, user, port or ".git".
func displayRepository(address string) string {
	a := strings.TrimSpace(address)
	scp := !strings.Contains(a, "://")
	if !scp {
		if u, err := url.Parse(a); err == nil && u.Host != "" {
			return strings.TrimSuffix(u.Hostname()+strings.TrimSuffix(u.Path, "/"), ".git")
		}
		return a
	}
	// scp-like: git@github.com:owner/name.git
	if at := strings.LastIndex(a, "@"); at >= 0 {
		a = a[at+1:]
	}
	return strings.TrimSuffix(strings.Replace(a, ":", "/", 1), ".git")
}
