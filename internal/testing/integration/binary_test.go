package integration

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"
)

// writeKubeconfig saves a rest.Config with client certificates as a
// kubeconfig file.
func writeKubeconfig(t *testing.T, cfg *rest.Config) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["test"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["test"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData}
	kc.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "test"}
	kc.CurrentContext = "test"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*kc, path))
	return path
}

func freeAddress(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

func scrape(url string) (int, string) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// `kedge run` as built: live cluster, leader election, the endpoints, JSON
// logs, and a clean exit on SIGTERM.
func TestKedgeRunBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the kedge binary")
	}
	admin := controlPlane(t)
	w := newWorld(t)

	bin := filepath.Join(t.TempDir(), "kedge")
	build := exec.Command("go", "build", "-ldflags=-s -w", "-o", bin, "github.com/kedge-io/kedge/cmd/kedge")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build: %s", out)

	addr := freeAddress(t)
	cfg := map[string]any{
		"cluster": w.cfg.Cluster,
		"repo":    map[string]any{"owner": owner, "name": repoName, "url": w.cfg.Repo.URL},
		"github":  map[string]any{"apiURL": w.cfg.GitHub.APIURL},
		"git":     map[string]any{"cacheDir": t.TempDir()},
		"limits":  map[string]any{"mutationGap": "0s"},
		"source":  map[string]any{"kubeconfig": writeKubeconfig(t, admin)},
		"server":  map[string]any{"address": addr, "leaseNamespace": kedgeNamespace},
		"cycle":   map[string]any{"debounce": "200ms"},
	}
	data, err := yaml.Marshal(cfg)
	require.NoError(t, err)
	cfgPath := filepath.Join(t.TempDir(), "kedge.yaml")
	require.NoError(t, os.WriteFile(cfgPath, data, 0o600))

	var stderr bytes.Buffer
	cmd := exec.Command(bin, "run", "--config", cfgPath)
	// The token comes from the environment, never the file.
	cmd.Env = append(os.Environ(), "KEDGE_GITHUB_TOKEN="+token, "POD_NAME=kedge-test-0")
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-exited
		}
	})

	base := "http://" + addr
	eventually(t, 30*time.Second, func() bool { code, _ := scrape(base + "/readyz"); return code == http.StatusOK }, "/readyz answers 200")
	code, _ := scrape(base + "/healthz")
	assert.Equal(t, http.StatusOK, code)
	eventually(t, time.Minute, func() bool {
		_, body := scrape(base + "/metrics")
		return strings.Contains(body, `kedge_cycles_total{result="success",trigger="start"} 1`)
	}, "the start cycle in /metrics")
	_, body := scrape(base + "/metrics")
	for _, want := range []string{"kedge_leader 1", `kedge_drifted_workloads{namespace="shop",reason="proxy-image"}`, `kedge_pull_requests{state="open"}`, `kedge_github_requests_total{method="POST"}`, "kedge_github_rate_limit_remaining", `kedge_git_push_duration_seconds_count{result="pushed"} 1`} {
		assert.Contains(t, body, want)
	}
	assert.NotEmpty(t, w.gh.PRs())

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-exited:
		require.NoError(t, err, "exit status 0 after SIGTERM; stderr:\n%s", stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatal("kedge did not exit after SIGTERM")
	}

	logs := stderr.String()
	assert.NotContains(t, logs, token)
	lines := 0
	sc := bufio.NewScanner(strings.NewReader(logs))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var entry map[string]any
		assert.NoError(t, json.Unmarshal(sc.Bytes(), &entry), "a JSON log line: %s", sc.Text())
		lines++
	}
	assert.Contains(t, logs, `"msg":"cycle finished"`)
	assert.Contains(t, logs, `"msg":"released the Lease"`)
	t.Logf("%d JSON log lines", lines)
}
