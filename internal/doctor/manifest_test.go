package doctor

import (
	"bytes"
	"encoding/json"
	"html"
	"os"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kedge-io/kedge/internal/testing/ghemu"
)

// appManifest is deploy/github-app.json, in GitHub's App manifest format.
type appManifest struct {
	Name               string            `json:"name"`
	URL                string            `json:"url"`
	Description        string            `json:"description"`
	Public             bool              `json:"public"`
	RedirectURL        string            `json:"redirect_url"`
	DefaultEvents      *[]string         `json:"default_events"`
	DefaultPermissions map[string]string `json:"default_permissions"`
}

// TestAppManifestAsksForWhatDoctorChecks: the App created from
// deploy/github-app.json has exactly the permissions doctor requires, and
// subscribes to no event; the page that posts it carries the same
// manifest; the emulation's default installation grants the same.
func TestAppManifestAsksForWhatDoctorChecks(t *testing.T) {
	raw, err := os.ReadFile("../../deploy/github-app.json")
	require.NoError(t, err)
	var m appManifest
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&m), "deploy/github-app.json")
	assert.Equal(t, AppPermissions, m.DefaultPermissions)
	require.NotNil(t, m.DefaultEvents, "default_events is set")
	assert.Empty(t, *m.DefaultEvents, "no webhook events")
	assert.False(t, m.Public)
	assert.NotEmpty(t, m.URL, "GitHub requires url")

	page, err := os.ReadFile("../../deploy/github-app.html")
	require.NoError(t, err)
	found := regexp.MustCompile(`name="manifest" value='([^']*)'`).FindSubmatch(page)
	require.NotNil(t, found, "the page posts a manifest field")
	var posted, file any
	require.NoError(t, json.Unmarshal([]byte(html.UnescapeString(string(found[1]))), &posted))
	require.NoError(t, json.Unmarshal(raw, &file))
	assert.Equal(t, file, posted, "deploy/github-app.html posts deploy/github-app.json")

	assert.Equal(t, AppPermissions, ghemu.KedgePermissions())
}
