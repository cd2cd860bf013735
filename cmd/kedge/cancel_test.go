package main

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

func TestUntilCancelled(t *testing.T) {
	interrupted := errors.New("interrupted by SIGTERM")
	never := make(chan struct{})
	cases := []struct {
		name      string
		cancel    bool
		work      func(ctx context.Context) (string, error)
		want      string
		wantCause bool
	}{
		{name: "finished work returns its result", work: func(context.Context) (string, error) { return "plan", nil }, want: "plan"},
		{name: "work that checks its context stops", cancel: true, wantCause: true, work: func(ctx context.Context) (string, error) {
			<-ctx.Done()
			return "", ctx.Err()
		}},
		{name: "work that cannot stop is abandoned", cancel: true, wantCause: true, work: func(context.Context) (string, error) {
			<-never
			return "never", nil
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancelCause(t.Context())
			defer cancel(nil)
			if tc.cancel {
				cancel(interrupted)
			}
			got, err := untilCancelled(ctx, func() (string, error) { return tc.work(ctx) })
			if tc.wantCause {
				require.ErrorIs(t, err, interrupted, "the error says why it stopped")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestKubeconfigNamespace(t *testing.T) {
	write := func(namespace string) string {
		kc := clientcmdapi.NewConfig()
		kc.Clusters["c"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1"}
		kc.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", Namespace: namespace}
		kc.CurrentContext = "c"
		path := t.TempDir() + "/kubeconfig"
		require.NoError(t, clientcmd.WriteToFile(*kc, path))
		return path
	}
	assert.Equal(t, "kedge", kubeconfigNamespace(write("kedge")))
	assert.Empty(t, kubeconfigNamespace(write("")), "no namespace in the context is none, not \"default\"")
}
