package assemble

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/kedge-io/kedge/internal/config"
	"github.com/kedge-io/kedge/internal/route"
)

func TestRouteRules(t *testing.T) {
	tests := []struct {
		name string
		cfg  config.Config
		want []route.Rule
	}{
		{"nothing configured", config.Config{}, nil},
		{
			name: "repo: alone",
			cfg:  config.Config{Repo: config.RepoConfig{Owner: "acme", Name: "fleet", BaseBranch: "main", Paths: []string{"prod"}, URL: "file:///srv/fleet.git"}},
			want: []route.Rule{{Match: "acme/fleet", BaseBranch: "main", Paths: []string{"prod"}, CloneURL: "file:///srv/fleet.git"}},
		},
		{
			name: "repo: first, then repos: in order",
			cfg: config.Config{
				Repo:  config.RepoConfig{Owner: "acme", Name: "platform"},
				Repos: []config.RepoRule{{Match: "acme/team-*", BaseBranch: "release"}, {Match: "other/apps", CloneURL: "https://mirror.example/{owner}/{name}.git"}},
			},
			want: []route.Rule{
				{Match: "acme/platform"},
				{Match: "acme/team-*", BaseBranch: "release"},
				{Match: "other/apps", CloneURL: "https://mirror.example/{owner}/{name}.git"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, RouteRules(&tt.cfg))
		})
	}
}

func TestCloneURLFor(t *testing.T) {
	r := route.Rule{CloneURL: "https://mirror.example/{owner}/{name}.git"}
	assert.Equal(t, "https://mirror.example/acme/shop.git", r.CloneURLFor("acme/shop"))
	assert.Equal(t, "", route.Rule{}.CloneURLFor("acme/shop"))
}
