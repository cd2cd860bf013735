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
		"comment-closed.tmpl", "comment-edited.tmpl", "comment-rolled-out.tmpl", "comment-stalled.tmpl", "plan.tmpl",
	}, names)
}
