package prstate

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kedge-io/kedge/internal/drift"
)

func TestStateRoundTrip(t *testing.T) {
	ws := []drift.Workload{
		{Namespace: "shop", Kind: "StatefulSet", Name: "db", Desired: drift.Desired{Revision: "1-24-0", Image: "docker.io/istio/proxyv2:1.24.0"}},
		{Namespace: "shop", Kind: "Deployment", Name: "--> <!-- & \"x\"", Desired: drift.Desired{Revision: "", Image: ""}},
	}
	s := NewState("prod", "shop", ws)
	require.Len(t, s.Targets, 2)
	assert.Equal(t, "Deployment", s.Targets[0].Kind, "targets sorted")
	assert.Len(t, s.Hash, 64)

	block := s.Block()
	assert.Equal(t, 1, strings.Count(block, "-->"), "names cannot close the comment early")
	got, ok := ParseState("text above\n\n" + block + "\n")
	require.True(t, ok)
	assert.Equal(t, s, *got)
}

func TestStateHashFollowsTargets(t *testing.T) {
	a := NewState("prod", "shop", []drift.Workload{{Namespace: "shop", Kind: "Deployment", Name: "cart", Desired: drift.Desired{Revision: "1-24-0"}}})
	b := NewState("prod", "shop", []drift.Workload{{Namespace: "shop", Kind: "Deployment", Name: "cart", Desired: drift.Desired{Revision: "1-25-0"}}})
	c := NewState("prod", "shop", []drift.Workload{{Namespace: "shop", Kind: "Deployment", Name: "cart", Desired: drift.Desired{Revision: "1-24-0"}}})
	assert.NotEqual(t, a.Hash, b.Hash)
	assert.Equal(t, a.Hash, c.Hash)
}

func TestParseStateRejects(t *testing.T) {
	valid := NewState("prod", "shop", nil).Block()
	tampered := strings.Replace(valid, `"namespace":"shop"`, `"namespace":"other"`, 1)
	tests := []struct {
		name, body string
	}{
		{"no block", "just a body"},
		{"unterminated", "<!-- kedge:state {\"cluster\":\"prod\"}"},
		{"not json", "<!-- kedge:state {nope} -->"},
		{"hand-edited", tampered},
		{"empty", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, ok := ParseState(tt.body)
			assert.False(t, ok)
			assert.Nil(t, s)
		})
	}
}

func TestParseStateTakesTheLastBlock(t *testing.T) {
	quoted := NewState("prod", "quoted", nil).Block()
	own := NewState("prod", "shop", nil).Block()
	s, ok := ParseState("> " + quoted + "\n\n" + own + "\n")
	require.True(t, ok)
	assert.Equal(t, "shop", s.Namespace)
}

func TestClosedByKedge(t *testing.T) {
	block := NewState("c", "shop", nil).Block()
	tests := []struct {
		name, body string
		want       bool
	}{
		{"a PR kedge closed", ClosedBody("why\n"+block+"\n", "closed-resolved"), true},
		{"a PR a person closed", "why\n" + block, false},
		{"a closed line quoted above the state block", "<!-- kedge:closed closed-resolved -->\n" + block, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, ClosedByKedge(tt.body))
		})
	}
	_, ok := ParseState(ClosedBody(block, "closed-resolved"))
	assert.True(t, ok, "the state block still reads back")
}
