package reconcile

import (
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/assert"

	"github.com/kedge-io/kedge/internal/gitrepo"
)

// TestPreparedBranchAnswers takes a settled answer only for the very
// commit it was given for: the same files, message, base tip and remote
// tip.
func TestPreparedBranchAnswers(t *testing.T) {
	base, remote, other := plumbing.NewHash("1111"), plumbing.NewHash("2222"), plumbing.NewHash("3333")
	files := map[string][]byte{"apps/web.yaml": []byte("a: 1\n")}
	settled := preparedBranch{base: base, remote: remote, message: "Restart web", files: files,
		change: gitrepo.Change{Branch: "kedge/c/shop", Commit: remote, Parent: base}}
	tests := []struct {
		name  string
		asked preparedBranch
		known bool
	}{
		{"the same commit", preparedBranch{base: base, remote: remote, message: "Restart web", files: map[string][]byte{"apps/web.yaml": []byte("a: 1\n")}}, true},
		{"another base tip", preparedBranch{base: other, remote: remote, message: "Restart web", files: files}, false},
		{"the remote branch moved", preparedBranch{base: base, remote: other, message: "Restart web", files: files}, false},
		{"the remote branch is gone", preparedBranch{base: base, message: "Restart web", files: files}, false},
		{"another message", preparedBranch{base: base, remote: remote, message: "Restart web and api", files: files}, false},
		{"other content", preparedBranch{base: base, remote: remote, message: "Restart web", files: map[string][]byte{"apps/web.yaml": []byte("a: 2\n")}}, false},
		{"one more file", preparedBranch{base: base, remote: remote, message: "Restart web", files: map[string][]byte{"apps/web.yaml": []byte("a: 1\n"), "apps/api.yaml": nil}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			change, err := settled.answer(tt.asked)
			if !tt.known {
				assert.ErrorIs(t, err, errNotPrepared)
				return
			}
			assert.NoError(t, err)
			assert.Equal(t, settled.change, change)
		})
	}
	_, err := preparedBranch{}.answer(settled)
	assert.ErrorIs(t, err, errNotPrepared, "nothing settled yet")
}

// TestSettledAnswers keeps only the answers that stand while the tips do:
// a commit still to push may be found on the remote once fetched.
func TestSettledAnswers(t *testing.T) {
	assert.True(t, settledAnswer(gitrepo.Change{Changed: false}, nil), "already pushed")
	assert.True(t, settledAnswer(gitrepo.Change{}, gitrepo.ErrNoDifference), "the base has it")
	assert.False(t, settledAnswer(gitrepo.Change{Changed: true}, nil), "to push")
	assert.False(t, settledAnswer(gitrepo.Change{}, assert.AnError), "failed")
}
