package templates_test

import (
	"io/fs"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kedge-io/kedge/templates"
)

func TestDefaultHoldsEveryTemplate(t *testing.T) {
	names, err := fs.Glob(templates.Default(), "*.tmpl")
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{
		"partials.tmpl", "pr-title.tmpl", "pr-body.tmpl", "commit-message.tmpl", "dashboard-issue.tmpl",
		"comment-closed.tmpl", "comment-closed-opted-out.tmpl", "comment-closed-not-selected.tmpl",
		"comment-closed-deleted.tmpl", "comment-closed-not-editable.tmpl", "comment-closed-mixed.tmpl",
		"comment-duplicate.tmpl", "comment-superseded.tmpl",
		"comment-edited.tmpl", "comment-rolled-out.tmpl", "comment-stalled.tmpl", "plan.tmpl",
	}, names)
}
