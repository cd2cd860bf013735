package forge_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kedge-io/kedge/internal/forge"
	"github.com/kedge-io/kedge/internal/testing/ghemu"
)

const (
	owner    = "acme"
	repo     = "fleet"
	botToken = "ghp_kedge"
)

// setup starts an emulated GitHub and a client for it with a static token,
// no mutation gap and short backoffs, unless adjusted.
func setup(t *testing.T, emuOpts func(*ghemu.Options), cfgOpts func(*forge.Config)) (*ghemu.Server, *forge.Client) {
	t.Helper()
	opts := ghemu.Options{Owner: owner, Repo: repo, Tokens: map[string]string{botToken: "kedge-bot"}}
	if emuOpts != nil {
		emuOpts(&opts)
	}
	emu := ghemu.New(t, opts)
	cfg := forge.Config{
		APIURL:       emu.URL,
		Owner:        owner,
		Repo:         repo,
		Token:        botToken,
		RetryBackoff: 10 * time.Millisecond,
		HTTPClient:   emu.Client(),
	}
	if cfgOpts != nil {
		cfgOpts(&cfg)
	}
	c, err := forge.New(context.Background(), cfg)
	require.NoError(t, err)
	return emu, c
}

// appKey writes a fresh RSA key as a PEM file, as a GitHub App key is
// downloaded.
func appKey(t *testing.T) (*rsa.PrivateKey, string) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "app.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	require.NoError(t, os.WriteFile(path, pemBytes, 0o600))
	return key, path
}

// sha makes a commit id for the emulator's branch table.
func sha(seed string) string {
	sum := sha256.Sum256([]byte(seed))
	return hex.EncodeToString(sum[:20])
}

// branch creates a head branch one commit away from main.
func branch(emu *ghemu.Server, name string) string {
	emu.SetBranch(name, sha(name))
	return name
}

func splitRepo(full string) (string, string) {
	owner, name, _ := strings.Cut(full, "/")
	return owner, name
}

func sortTimes(ts []time.Time) { slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) }) }
