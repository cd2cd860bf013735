package assemble

import (
	"github.com/kedge-io/kedge/internal/config"
	"github.com/kedge-io/kedge/internal/route"
)

// RouteRules maps repo: and repos: onto the allowlist: repo: comes first
// and is always admitted, with its own base branch, paths and clone URL;
// the repos: entries follow in order (the first match wins).
func RouteRules(cfg *config.Config) []route.Rule {
	var out []route.Rule
	if cfg.Repo.Owner != "" && cfg.Repo.Name != "" {
		out = append(out, route.Rule{
			Match: cfg.Repo.Owner + "/" + cfg.Repo.Name, BaseBranch: cfg.Repo.BaseBranch,
			Paths: cfg.Repo.Paths, CloneURL: cfg.Repo.URL,
		})
	}
	for _, r := range cfg.Repos {
		out = append(out, route.Rule{Match: r.Match, BaseBranch: r.BaseBranch, Paths: r.Paths, CloneURL: r.CloneURL})
	}
	return out
}
