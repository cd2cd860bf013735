package ghemu

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-github/v66/github"
	"github.com/stretchr/testify/require"
)

const (
	testOwner = "acme"
	testRepo  = "fleet"
	botToken  = "ghp_bot"
	userToken = "ghp_alice"
)

func newTestServer(t *testing.T, mutate ...func(*Options)) *Server {
	t.Helper()
	opts := Options{
		Owner:  testOwner,
		Repo:   testRepo,
		Tokens: map[string]string{botToken: "kedge-bot", userToken: "alice"},
	}
	for _, m := range mutate {
		m(&opts)
	}
	return New(t, opts)
}

// ghClient is a go-github client pointed at the server the way kedge points
// one at GitHub Enterprise.
func ghClient(t *testing.T, s *Server, token string) *github.Client {
	t.Helper()
	c, err := github.NewClient(s.Client()).WithAuthToken(token).WithEnterpriseURLs(s.URL, s.URL)
	require.NoError(t, err)
	return c
}

type rawAnswer struct {
	status int
	header http.Header
	body   []byte
}

func (a rawAnswer) json(t *testing.T, v any) {
	t.Helper()
	require.NoError(t, json.Unmarshal(a.body, v), string(a.body))
}

// raw sends one request by hand, for what go-github would hide.
func raw(t *testing.T, s *Server, method, path, authorization string, body any, header ...string) rawAnswer {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = bytes.NewBufferString(b)
	default:
		payload, err := json.Marshal(b)
		require.NoError(t, err)
		rd = bytes.NewReader(payload)
	}
	req, err := http.NewRequestWithContext(context.Background(), method, s.URL+path, rd)
	require.NoError(t, err)
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := s.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	payload, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return rawAnswer{status: resp.StatusCode, header: resp.Header, body: payload}
}

func newKey(t *testing.T) *rsa.PrivateKey {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	return key
}

// createPR opens a pull request from a fresh branch of the in-memory table.
func createPR(t *testing.T, s *Server, c *github.Client, head, base string) *github.PullRequest {
	t.Helper()
	s.SetBranch(head, fakeSHA(head+time.Now().String()))
	pr, resp, err := c.PullRequests.Create(context.Background(), testOwner, testRepo, &github.NewPullRequest{
		Title: github.String("Restart " + head),
		Head:  github.String(head),
		Base:  github.String(base),
		Body:  github.String("body of " + head),
	})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	return pr
}
