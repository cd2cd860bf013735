package dashboard

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kedge-io/kedge/internal/prstate"
)

func writeTemplates(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
	}
	return dir
}

func TestOverrideReplacesOneFile(t *testing.T) {
	dir := writeTemplates(t, map[string]string{
		PRTitleFile: `Istio {{plain .Namespace}}: {{.Count}}`,
		"README.md": "not a template",
	})
	r, err := NewRenderer(dir)
	require.NoError(t, err)
	f := typical()
	title, err := r.PRTitle(f.pr)
	require.NoError(t, err)
	assert.Equal(t, "Istio shop: 3", title)

	def, err := NewRenderer("")
	require.NoError(t, err)
	want, err := def.PRBody(f.pr)
	require.NoError(t, err)
	got, err := r.PRBody(f.pr)
	require.NoError(t, err)
	assert.Equal(t, want, got, "files not overridden stay built in")
}

func TestOverridePartialsReachEveryTemplate(t *testing.T) {
	dir := writeTemplates(t, map[string]string{
		PartialsFile: `{{define "kedge/subject"}}custom subject{{end}}` +
			`{{define "kedge/workload-table"}}{{end}}{{define "kedge/reasons"}}{{end}}{{define "kedge/target"}}{{end}}` +
			`{{define "kedge/pie"}}{{end}}{{define "kedge/unfixable"}}{{end}}{{define "kedge/skipped"}}{{end}}` +
			`{{define "kedge/mesh"}}{{end}}{{define "kedge/more"}}{{end}}`,
	})
	r, err := NewRenderer(dir)
	require.NoError(t, err)
	f := typical()
	title, err := r.PRTitle(f.pr)
	require.NoError(t, err)
	assert.Equal(t, "custom subject", title)
	msg, err := r.CommitMessage(f.pr)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(msg, "custom subject\n"))
}

func TestBrokenTemplatesFailAtLoad(t *testing.T) {
	tests := []struct {
		name    string
		files   map[string]string
		wantErr []string
	}{
		{
			name:    "syntax error names file and line",
			files:   map[string]string{PRBodyFile: "line one\nline two\n{{if .Fix}}\nno end\n"},
			wantErr: []string{PRBodyFile, "pr-body.tmpl:"},
		},
		{
			name:    "missing field names file and line",
			files:   map[string]string{CommentStalledFile: "ok\n\n{{.NoSuchField}}\n"},
			wantErr: []string{CommentStalledFile, "comment-stalled.tmpl:3", "NoSuchField"},
		},
		{
			name:    "unknown function",
			files:   map[string]string{DashboardIssueFile: "{{shout .Cluster}}"},
			wantErr: []string{DashboardIssueFile, "shout"},
		},
		{
			name:    "misnamed file",
			files:   map[string]string{"pr_body.tmpl": "x"},
			wantErr: []string{"pr_body.tmpl", "unknown template file", PRBodyFile},
		},
		{
			name:    "broken partials",
			files:   map[string]string{PartialsFile: "{{define \"kedge/subject\"}}"},
			wantErr: []string{PartialsFile},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewRenderer(writeTemplates(t, tt.files))
			require.Error(t, err)
			for _, want := range tt.wantErr {
				assert.Contains(t, err.Error(), want)
			}
		})
	}
}

func TestMissingOverrideDirIsAnError(t *testing.T) {
	_, err := NewRenderer(filepath.Join(t.TempDir(), "nope"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "nope")
}

func TestStateBlockSurvivesAnOverrideWithoutIt(t *testing.T) {
	r, err := NewRenderer(writeTemplates(t, map[string]string{PRBodyFile: "Restarting {{.Count}} workloads."}))
	require.NoError(t, err)
	f := typical()
	body, err := r.PRBody(f.pr)
	require.NoError(t, err)
	assert.Equal(t, "Restarting 3 workloads.\n\n"+f.pr.State.Block()+"\n", body)
}

func TestHardCutKeepsStateAndClosesFences(t *testing.T) {
	huge := "{{range .Fix}}" + strings.Repeat("filler line\n", 2000) + "{{end}}```mermaid\n" + strings.Repeat("x\n", 40000) + "```\n"
	r, err := NewRenderer(writeTemplates(t, map[string]string{PRBodyFile: huge}))
	require.NoError(t, err)
	f := typical()
	body, err := r.PRBody(f.pr)
	require.NoError(t, err)
	assert.LessOrEqual(t, len(body), BodyBudget)
	assert.True(t, strings.HasSuffix(body, f.pr.State.Block()+"\n"))
	assert.Contains(t, body, "This text was cut to fit GitHub's size limit")
	assert.Equal(t, 0, strings.Count(body, "```")%2, "code fences balanced")
	_, ok := prstate.ParseState(body)
	assert.True(t, ok)
	assert.Empty(t, markdownProblems(body, policyOf(f)))
}

func TestComment(t *testing.T) {
	r, err := NewRenderer(writeTemplates(t, map[string]string{CommentEditedFile: "{{.}}"}))
	require.NoError(t, err)

	_, err = r.Comment("merged-sideways", CommentData{})
	assert.ErrorContains(t, err, "merged-sideways")

	out, err := r.Comment(CommentEdited, "custom data passes through")
	require.NoError(t, err)
	assert.Equal(t, "custom data passes through\n", out)

	f := typical()
	c := f.comments[CommentStalled]
	byValue, err := r.Comment(CommentStalled, c)
	require.NoError(t, err)
	byPointer, err := r.Comment(CommentStalled, &c)
	require.NoError(t, err)
	assert.Equal(t, byValue, byPointer)
}
