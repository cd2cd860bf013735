package gitrepo_test

import (
	"path/filepath"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestChangedSince(t *testing.T) {
	rm := newRemote(t, "file")
	dir := filepath.Join(t.TempDir(), "gitops")
	first := rm.open(t, dir)

	same, err := first.ChangedSince(first.BaseTip())
	require.NoError(t, err)
	assert.Empty(t, same, "nothing changed")

	rm.srv.CommitAsHuman(t, repoName, "main", map[string]string{
		"apps/shop/cart.yaml":     "kind: Deployment\nmetadata:\n  name: cart2\n",
		"apps/search/search.yaml": "kind: Deployment\nmetadata:\n  name: search\n",
	}, "Edit cart, add search")
	rm.srv.CommitAsHuman(t, repoName, "main", map[string]string{
		"apps/billing/api.yaml": "kind: Deployment\nmetadata:\n  name: api2\n",
	}, "Edit api")
	second := rm.open(t, dir)
	changed, err := second.ChangedSince(first.BaseTip())
	require.NoError(t, err)
	assert.Equal(t, []string{"apps/billing/api.yaml", "apps/search/search.yaml", "apps/shop/cart.yaml"}, changed,
		"every file of every commit between the two tips")

	_, err = second.ChangedSince(plumbing.NewHash("0123456789abcdef0123456789abcdef01234567"))
	assert.Error(t, err, "a commit the clone does not hold has no known difference")
}
