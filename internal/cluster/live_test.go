package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
)

func TestNewLiveRejectsBadOptions(t *testing.T) {
	cases := []struct {
		name    string
		opts    LiveOptions
		wantErr string
	}{
		{name: "no config", opts: LiveOptions{}, wantErr: "no API server configuration"},
		{name: "negative resync", opts: LiveOptions{Config: &rest.Config{Host: "https://127.0.0.1:1"}, Resync: -time.Second}, wantErr: "negative resync"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewLive(tc.opts)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantErr)
		})
	}
}

func TestLiveLifecycleErrors(t *testing.T) {
	// Nothing listens on port 1 of the loopback address: every request
	// fails at once.
	live, err := NewLive(LiveOptions{Config: &rest.Config{Host: "https://127.0.0.1:1", Timeout: time.Second}})
	require.NoError(t, err)

	err = live.WaitForSync(t.Context())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not started")

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	err = live.Start(ctx)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "discovery")

	assert.Empty(t, live.Set().Pods, "a source that never started holds nothing")
}
