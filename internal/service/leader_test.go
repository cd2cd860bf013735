package service

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLeaseNamespace(t *testing.T) {
	cases := []struct {
		name                            string
		configured, podNamespace, mount string
		kubeconfig                      string
		want, wantErr                   string
	}{
		{name: "configured wins", configured: "ops", podNamespace: "kedge", mount: "kedge", kubeconfig: "dev", want: "ops"},
		{name: "the downward API", podNamespace: "kedge", mount: "other", kubeconfig: "dev", want: "kedge"},
		{name: "the service account's namespace in a pod", mount: "kedge\n", kubeconfig: "dev", want: "kedge"},
		{name: "the kubeconfig context outside a pod", kubeconfig: "dev", want: "dev"},
		{name: "none known", wantErr: "set server.leaseNamespace"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("POD_NAMESPACE", tc.podNamespace)
			file := filepath.Join(t.TempDir(), "namespace")
			if tc.mount != "" {
				require.NoError(t, os.WriteFile(file, []byte(tc.mount), 0o600))
			}
			defer func(prev string) { serviceAccountNamespaceFile = prev }(serviceAccountNamespaceFile)
			serviceAccountNamespaceFile = file

			got, err := LeaseNamespace(tc.configured, tc.kubeconfig)
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestMaxFailoverOfTheDefaultTimings(t *testing.T) {
	// 15 s of lease, and twice a 2 s retry stretched by client-go's
	// jitter of 1.2: what deploy/README.md documents.
	assert.Equal(t, 23800*time.Millisecond, Election{}.MaxFailover())
	assert.Equal(t, 3*time.Second+2*550*time.Millisecond, Election{LeaseDuration: 3 * time.Second, RetryPeriod: 250 * time.Millisecond}.MaxFailover())
}
