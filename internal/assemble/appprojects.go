package assemble

import (
	"net/url"
	"regexp"
	"strings"
	"sync"

	"github.com/gobwas/glob"

	"github.com/kedge-io/kedge/internal/objects"
)

// defaultProject is the AppProject of an Application that names none.
const defaultProject = "default"

// projectOf returns the AppProjects that govern an Application's sources:
// the one of its project's name in its own namespace, else the ones of
// that name elsewhere (an Application outside Argo CD's namespace names a
// project of Argo CD's). None when the cluster shows no such AppProject:
// the project is then not known, and restricts nothing kedge can tell.
func projectOf(app *objects.Application, projects []objects.AppProject) []*objects.AppProject {
	name := app.Spec.Project
	if name == "" {
		name = defaultProject
	}
	var same, other []*objects.AppProject
	for i := range projects {
		p := &projects[i]
		switch {
		case p.Name != name:
		case p.Namespace == app.Namespace:
			same = append(same, p)
		default:
			other = append(other, p)
		}
	}
	if len(same) > 0 {
		return same
	}
	return other
}

// sourcePermitted reports whether every AppProject given admits repoURL
// as a source, as Argo CD's AppProject.IsSourcePermitted decides
// (pkg/apis/application/v1alpha1/app_project_types.go): both sides
// normalised as util/git.NormalizeGitURL does, each sourceRepos entry a
// glob (gobwas/glob, "/" separating; "*" alone matching everything), an
// entry starting with "!" denying what it matches, and the source admitted
// when some entry matches and no deny entry does.
func sourcePermitted(projects []*objects.AppProject, repoURL string) bool {
	src := normalizeGitURL(repoURL)
	for _, p := range projects {
		matched := false
		for _, entry := range p.Spec.SourceRepos {
			deny := strings.HasPrefix(entry, "!")
			pattern := normalizeGitURL(strings.TrimPrefix(entry, "!"))
			// As in Argo CD, "*" alone matches everything in an admitting
			// entry only; "!*" is matched as a glob, which "/" stops.
			hit := (!deny && pattern == "*") || projectGlobMatch(pattern, src)
			switch {
			case deny && hit:
				return false
			case deny:
				// A deny entry that does not match counts as a match, as
				// in Argo CD: "!x" alone admits everything but x.
				matched = true
			case hit:
				matched = true
			}
		}
		if !matched {
			return false
		}
	}
	return true
}

// sshURL is Argo CD's test for an SSH repository address (util/git,
// IsSSHURL).
var sshURL = regexp.MustCompile(`^(ssh://)?([^/:]*?)@[^@]+$`)

// normalizeGitURL is Argo CD's util/git.NormalizeGitURL: lower-cased, an
// scp-like SSH address turned into ssh://, ".git" dropped, re-written by
// net/url, and "ssh://" dropped again.
func normalizeGitURL(repo string) string {
	repo = strings.ToLower(strings.TrimSpace(repo))
	if sshURL.MatchString(repo) && !strings.HasPrefix(repo, "ssh://") {
		repo = "ssh://" + strings.Replace(repo, ":", "/", 1)
	}
	repo = strings.TrimSuffix(repo, ".git")
	u, err := url.Parse(repo)
	if err != nil {
		return ""
	}
	return strings.TrimPrefix(u.String(), "ssh://")
}

// projectGlobs holds compiled sourceRepos patterns.
var projectGlobs sync.Map

func projectGlobMatch(pattern, value string) bool {
	g, ok := projectGlobs.Load(pattern)
	if !ok {
		compiled, err := glob.Compile(pattern, '/')
		if err != nil {
			compiled = nil
		}
		g, _ = projectGlobs.LoadOrStore(pattern, compiled)
	}
	compiled, _ := g.(glob.Glob)
	return compiled != nil && compiled.Match(value)
}
