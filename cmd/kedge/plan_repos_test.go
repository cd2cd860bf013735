package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kedge-io/kedge/internal/drift"
)

const teamsFixture = "../../testdata/repos/platform-and-teams"

func teamsPlan(t *testing.T, output string, repos ...string) (string, string, int) {
	t.Helper()
	args := []string{"plan", "--snapshot", filepath.Join(teamsFixture, "cluster"), "--output", output}
	for _, r := range repos {
		args = append(args, "--repo", r)
	}
	var out, errOut bytes.Buffer
	code := execute(context.Background(), args, &out, &errOut)
	return out.String(), errOut.String(), code
}

func TestPlanSeveralRepositories(t *testing.T) {
	platform := "acme/platform@main=" + filepath.Join(teamsFixture, "acme_platform")
	shop := "acme/team-shop=" + filepath.Join(teamsFixture, "acme_team-shop")

	out, errOut, code := teamsPlan(t, "json", platform, shop)
	require.Equal(t, exitOK, code, errOut)
	var p drift.Plan
	require.NoError(t, json.Unmarshal([]byte(out), &p))
	got := map[string]string{}
	for _, w := range p.Workloads {
		got[w.Namespace+"/"+w.Name] = w.Manifest.Status + " " + w.Manifest.Repository + " " + w.Manifest.Path
	}
	assert.Equal(t, map[string]string{
		"ingress/gateway": "found acme/platform@main infra/ingress/gateway.yaml",
		"shop/cart":       "found acme/platform@main shared/shop/cart.yaml",
		"shop/web":        "found acme/team-shop apps/shop/web.yaml",
		"payments/api":    "no-repo acme/team-payments ",
		"legacy/old":      "no-repo acme/legacy ",
		"addons/agent":    "no-repo vendor/addons ",
	}, got)
	assert.Contains(t, out, `"repository": "acme/team-shop"`)
	assert.Contains(t, out, "which --repo does not list")

	table, _, code := teamsPlan(t, "table", platform, shop)
	require.Equal(t, exitOK, code)
	assert.Contains(t, strings.SplitN(table, "\n", 2)[0], "REPOSITORY")
	assert.Regexp(t, `web\s.*acme/team-shop\s+found apps/shop/web.yaml`, table)

	patch, _, code := teamsPlan(t, "patch", platform, shop)
	require.Equal(t, exitOK, code)
	parts := strings.Split(patch, "# acme/team-shop\n")
	require.Len(t, parts, 2, patch)
	assert.True(t, strings.HasPrefix(parts[0], "# acme/platform@main\n"))
	assert.Contains(t, parts[0], "a/shared/shop/cart.yaml")
	assert.NotContains(t, parts[0], "web.yaml")
	assert.Contains(t, parts[1], "a/apps/shop/web.yaml")
	assert.Equal(t, 1, strings.Count(parts[1], "diff --git"))
}

func TestPlanOneRepositoryKeepsItsTable(t *testing.T) {
	table, errOut, code := teamsPlan(t, "table", filepath.Join(teamsFixture, "acme_platform"))
	require.Equal(t, exitOK, code, errOut)
	assert.NotContains(t, table, "REPOSITORY")
}

func TestPlanRepoFlagErrors(t *testing.T) {
	tests := []struct {
		name  string
		repos []string
		want  string
	}{
		{"several bare paths", []string{"a", "b"}, "owner/name[@branch]=PATH"},
		{"a name twice", []string{"acme/x=a", "ACME/X=b"}, "given twice"},
		{"no path", []string{"acme/x=", "acme/y=b"}, "no path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, errOut, code := teamsPlan(t, "table", tt.repos...)
			assert.Equal(t, exitUsage, code)
			assert.Contains(t, errOut, tt.want)
		})
	}
}
