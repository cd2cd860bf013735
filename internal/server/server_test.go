package server_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kedge-io/kedge/internal/metrics"
	"github.com/kedge-io/kedge/internal/server"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

func TestEndpoints(t *testing.T) {
	ready := server.NewReadiness(server.CheckInformers, server.CheckGitHub)
	m := metrics.New(nil)
	m.SetLeader(true)
	ln, err := server.Listen("127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- server.New(ready, m.Handler(), nil).Serve(ctx, ln) }()
	base := "http://" + ln.Addr().String()

	steps := []struct {
		name       string
		set        func()
		wantReady  int
		wantDetail []string
		wantAbsent []string
	}{
		{
			name:       "nothing checked yet",
			set:        func() {},
			wantReady:  http.StatusServiceUnavailable,
			wantDetail: []string{"github: pending", "informers: pending"},
		},
		{
			name: "caches synced, GitHub refuses the credentials",
			set: func() {
				ready.Set(server.CheckInformers, nil)
				ready.Set(server.CheckGitHub, errors.New("401 Bad credentials"))
			},
			wantReady:  http.StatusServiceUnavailable,
			wantDetail: []string{"github: 401 Bad credentials"},
			wantAbsent: []string{"informers"},
		},
		{
			name:      "both checks passed",
			set:       func() { ready.Set(server.CheckGitHub, nil) },
			wantReady: http.StatusOK,
		},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			st.set()
			code, body := get(t, base+"/healthz")
			assert.Equal(t, http.StatusOK, code, "alive whatever readiness says")
			assert.Equal(t, "ok\n", body)

			code, body = get(t, base+"/readyz")
			assert.Equal(t, st.wantReady, code)
			for _, d := range st.wantDetail {
				assert.Contains(t, body, d)
			}
			for _, d := range st.wantAbsent {
				assert.NotContains(t, body, d, "only failing checks are listed")
			}
		})
	}

	code, body := get(t, base+"/metrics")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "kedge_leader 1\n")
	assert.Contains(t, body, "go_goroutines")

	code, _ = get(t, base+"/nothing")
	assert.Equal(t, http.StatusNotFound, code)

	cancel()
	select {
	case err := <-served:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after its context ended")
	}
}

func TestListenNamesTheAddressItCannotBind(t *testing.T) {
	ln, err := server.Listen("127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	_, err = server.Listen(ln.Addr().String())
	require.Error(t, err)
	assert.Contains(t, err.Error(), ln.Addr().String())
}
