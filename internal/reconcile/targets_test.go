package reconcile

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/forge"
	"github.com/kedge-io/kedge/internal/gitrepo"
	"github.com/kedge-io/kedge/internal/prstate"
	"github.com/kedge-io/kedge/internal/reconcile/decide"
)

func TestBranchNamesReadBack(t *testing.T) {
	tests := []struct {
		branch          string
		namespace, base string
		ok              bool
	}{
		{BranchFor("prod", "billing", "main", true), "billing", "", true},
		{BranchFor("prod", "billing", "staging", false), "billing", "staging", true},
		{BranchFor("prod", "billing", "release/2026-q1", false), "billing", "release/2026-q1", true},
		{"kedge/prod/billing/extra", "", "", false},
		{"kedge/prod/billing@", "", "", false},
		{"kedge/prod/", "", "", false},
		{"kedge/other/billing", "", "", false},
		{"feature/x", "", "", false},
	}
	for _, tt := range tests {
		ns, base, ok := ParseBranch("prod", tt.branch)
		assert.Equal(t, tt.ok, ok, tt.branch)
		assert.Equal(t, tt.namespace, ns, tt.branch)
		assert.Equal(t, tt.base, base, tt.branch)
	}
	assert.Equal(t, "kedge/prod/billing", BranchFor("prod", "billing", "main", true), "the default branch keeps the name kedge has always used")
	assert.Equal(t, "kedge/prod/billing@staging", BranchFor("prod", "billing", "staging", false))
}

// TestOwnershipAndBranches: a PR belongs to its repository, base and
// namespace; a namespace's branch is its open PR's head, else its own
// name, and never a name an open PR of another base uses.
func TestOwnershipAndBranches(t *testing.T) {
	r := New(Settings{Cluster: "prod"}, Deps{})
	state := func(ns, repo, base string) string {
		s := prstate.NewState("prod", ns, []drift.Workload{{Namespace: ns, Kind: "Deployment", Name: "api"}})
		if repo != "" {
			s = s.For(repo, base)
		}
		return "body\n" + s.Block()
	}
	pr := func(n int, head, base, state, body string) forge.PR {
		return forge.PR{Number: n, Head: head, Base: base, State: state, Body: body}
	}
	main := &checkout{name: "acme/platform", defaultBase: true, git: nil}
	staging := &checkout{name: "acme/platform"}
	bases := map[*checkout]string{main: "main", staging: "staging"}
	baseOf := func(c *checkout) string { return bases[c] }

	t.Run("owner", func(t *testing.T) {
		tests := []struct {
			name   string
			pr     forge.PR
			c      *checkout
			wantNS string
			owned  bool
		}{
			{"its branch names the namespace", pr(1, "kedge/prod/billing", "main", "open", state("billing", "acme/platform", "main")), main, "billing", true},
			{"a branch that names none: its state does", pr(7, "kedge/prod/billing/old", "main", "open", state("billing", "acme/platform", "main")), main, "billing", true},
			{"a PR from before the state recorded repository and base", pr(2, "kedge/prod/billing", "main", "open", state("billing", "", "")), main, "billing", true},
			{"a hand-edited state: the branch names the namespace", pr(3, "kedge/prod/billing", "main", "open", "<!-- kedge:state {\"hash\":\"x\"} -->"), main, "billing", true},
			{"another base is another target's, whatever the branch", pr(4, "kedge/prod/billing", "staging", "open", state("billing", "acme/platform", "staging")), main, "", false},
			{"a base GitHub renamed under the PR: the new base's", pr(5, "kedge/prod/billing@stage", "main", "open", state("billing", "acme/platform", "stage")), main, "billing", true},
			{"another cluster's state, a branch that is not kedge's", pr(6, "feature/x", "main", "open", "<!-- kedge:state {} -->"), main, "", false},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				ns, ok := r.ownerOn(tt.pr, baseOf(tt.c))
				assert.Equal(t, tt.owned, ok)
				assert.Equal(t, tt.wantNS, ns)
			})
		}
	})

	t.Run("branch", func(t *testing.T) {
		legacyStaging := pr(1, "kedge/prod/billing", "staging", "open", state("billing", "", ""))
		tests := []struct {
			name        string
			c           *checkout
			owned, all  []forge.PR
			want        string
			wantBlocked bool
		}{
			{"the default branch's own name", main, nil, nil, "kedge/prod/billing", false},
			{"another base's own name", staging, nil, nil, "kedge/prod/billing@staging", false},
			{"an open PR is carried on under its name", staging, []forge.PR{legacyStaging}, []forge.PR{legacyStaging}, "kedge/prod/billing", false},
			{"a closed PR's name is free again", main, []forge.PR{pr(2, "kedge/prod/billing@main", "main", "closed", "")}, nil, "kedge/prod/billing", false},
			{"the name another base's open PR uses is left to it", main, nil, []forge.PR{legacyStaging}, "kedge/prod/billing@main", false},
			{"both names taken: nothing is pushed", main, nil, []forge.PR{legacyStaging, pr(3, "kedge/prod/billing@main", "release", "open", "")}, "kedge/prod/billing", true},
			{"a closed PR of another base takes no name", main, nil, []forge.PR{pr(4, "kedge/prod/billing", "staging", "closed", "")}, "kedge/prod/billing", false},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				branch, blocked := r.branchOn(tt.c.defaultBase, baseOf(tt.c), "billing", tt.owned, tt.all)
				assert.Equal(t, tt.want, branch)
				assert.Equal(t, tt.wantBlocked, blocked != "", blocked)
			})
		}
	})
}

// TestNoPushMovesAnotherBasesPR holds the push to its last word: a
// branch an open PR against another base uses is not pushed, whatever was
// decided, and the namespace says why.
func TestNoPushMovesAnotherBasesPR(t *testing.T) {
	c := &checkout{name: "acme/platform"}
	target := func(ns, branch string) rendered {
		change := gitrepo.Change{Branch: branch, Changed: true}
		return rendered{prepared: prepared{target: target{checkout: c, name: ns, branch: branch}, change: &change}}
	}
	rs := []rendered{target("billing", "kedge/prod/billing"), target("shop", "kedge/prod/shop")}
	// Decisions are made by package decide alone: billing's open PR is
	// updated, shop's is opened.
	decisions, _ := decide.Namespaces([]decide.Facts{
		{Namespace: "billing", Work: &decide.Work{}, PRs: []forge.PR{{Number: 3, State: "open"}}},
		{Namespace: "shop", Work: &decide.Work{}},
	}, decide.Gate{}, decide.Limits{})
	require.Equal(t, []Action{ActUpdate, ActOpen}, []Action{decisions[0].Action(), decisions[1].Action()})
	l := listing{prs: []forge.PR{
		{Number: 7, Head: "kedge/prod/billing", Base: "staging", State: "open"},
		{Number: 8, Head: "kedge/prod/shop", Base: "staging", State: "closed"},
	}}
	changes, _, refused := branchesToPushOn(c, "main", l, rs, decisions)
	assert.Equal(t, []gitrepo.Change{*rs[1].change}, changes)
	assert.Equal(t, map[string]string{"kedge/prod/billing": "branch kedge/prod/billing is the head of pull request #7 against staging; kedge will not move it onto main"}, refused)

	o, blocked := pushResult{refused: refused}.blocks(decisions[0], "kedge/prod/billing", c.name)
	assert.True(t, blocked)
	assert.Equal(t, Outcome{Action: ActNone, State: prstate.PRNotYetOpened, Detail: refused["kedge/prod/billing"]}, o)
}
