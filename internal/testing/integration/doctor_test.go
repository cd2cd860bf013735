package integration

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/kedge-io/kedge/internal/testing/ghemu"
	"github.com/kedge-io/kedge/internal/testing/gitserver"
)

var updateDoctor = flag.Bool("update", false, "rewrite testdata/doctor/*.golden from `kedge doctor`")

const doctorGoldens = "../../../testdata/doctor"

// TestDoctor runs `kedge doctor` as built against a real API server with
// deploy/'s RBAC (as its ServiceAccount) and the demo cluster's Istio, a
// GitHub App on the GitHub emulation and a git server: every check passes.
// Then, one at a time, a permission is taken from deploy/'s ClusterRole,
// the App loses pull_requests: write, and the repository is misnamed:
// exactly that check fails, naming the fix, and doctor exits 1.
func TestDoctor(t *testing.T) {
	bin := buildKedge(t)
	admin := controlPlane(t)
	adminClient, err := kubernetes.NewForConfig(admin)
	require.NoError(t, err)
	kubeconfig := writeKubeconfigAs(t, admin, serviceAccountUser(kedgeNamespace, kedgeServiceAccount),
		[]string{"system:serviceaccounts", "system:serviceaccounts:" + kedgeNamespace, "system:authenticated"})

	const appID, installationID = 4242, 77
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	keyFile := filepath.Join(t.TempDir(), "private-key.pem")
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600))
	hub := ghemu.NewHub(t, ghemu.HubOptions{AppID: appID, AppPublicKey: &key.PublicKey, Installations: map[string]int64{owner: installationID}})
	git := gitserver.New(t)
	abs, err := filepath.Abs(demoRepo)
	require.NoError(t, err)
	git.CreateRepo(t, repoName, abs)
	git.SetRepoTokenCheck(func(repo, token string) bool {
		return hub.ValidTokenFor(owner+"/"+strings.TrimSuffix(repo, ".git"), token)
	})
	hub.AddRepo(ghemu.Options{Owner: owner, Repo: repoName, Branches: ghemu.GitBranches(git.RepoPath(repoName))})

	writeConfig := func(name string) string {
		data, err := yaml.Marshal(map[string]any{
			"cluster": "prod-eu-1",
			"repo":    map[string]any{"owner": owner, "name": name, "url": git.RepoURL(name)},
			"github":  map[string]any{"apiURL": hub.URL + "/api/v3/", "appID": appID, "installationID": installationID, "privateKeyFile": keyFile},
			"source":  map[string]any{"kubeconfig": kubeconfig},
			"server":  map[string]any{"leaseNamespace": kedgeNamespace},
		})
		require.NoError(t, err)
		path := filepath.Join(t.TempDir(), "kedge.yaml")
		require.NoError(t, os.WriteFile(path, data, 0o600))
		return path
	}

	deployedRole, err := adminClient.RbacV1().ClusterRoles().Get(t.Context(), "kedge", metav1.GetOptions{})
	require.NoError(t, err)
	setRole := func(edit func(resources []string) []string) {
		role, err := adminClient.RbacV1().ClusterRoles().Get(t.Context(), "kedge", metav1.GetOptions{})
		require.NoError(t, err)
		role.Rules = deployedRole.DeepCopy().Rules
		for i := range role.Rules {
			role.Rules[i].Resources = edit(role.Rules[i].Resources)
		}
		_, err = adminClient.RbacV1().ClusterRoles().Update(t.Context(), role, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	asDeployed := func(r []string) []string { return r }

	cases := []struct {
		name    string
		repo    string
		prepare func()
		// failing is the one check that must fail, "" for none.
		failing string
		fix     string
	}{
		{name: "all-green", repo: repoName},
		{name: "rbac-without-replicasets", repo: repoName, failing: "kubernetes permissions",
			prepare: func() {
				setRole(func(r []string) []string {
					return slices.DeleteFunc(slices.Clone(r), func(s string) bool { return s == "replicasets" })
				})
			},
			fix: "apply deploy/rbac.yaml (kubectl apply -k deploy/, or the Helm chart), which binds kedge's ServiceAccount to the ClusterRole that grants them"},
		{name: "app-without-pull-requests-write", repo: repoName, failing: "github credentials",
			prepare: func() {
				perms := ghemu.KedgePermissions()
				perms["pull_requests"] = "read"
				hub.SetPermissions(perms)
			},
			fix: "give the App Pull requests: Read and write in its settings (deploy/github-app.json lists what kedge needs), then have an owner of example-org accept the new permissions on the installation"},
		{name: "wrong-repository-name", repo: "gitopz", failing: "repository example-org/gitopz",
			fix: "check that the repository exists under this name (repo.owner and repo.name, or the repos: rule) and that kedge's GitHub App is installed on it with Contents access"},
	}
	port := regexp.MustCompile(`127\.0\.0\.1:\d+`)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			setRole(asDeployed)
			hub.SetPermissions(ghemu.KedgePermissions())
			if tc.prepare != nil {
				tc.prepare()
			}
			cfgPath := writeConfig(tc.repo)
			run := runKedge(t, bin, time.Minute, nil, "doctor", "--config", cfgPath)
			out := port.ReplaceAllString(strings.ReplaceAll(run.stdout, cfgPath, "kedge.yaml"), "127.0.0.1:PORT")
			golden := filepath.Join(doctorGoldens, tc.name+".golden")
			if *updateDoctor {
				require.NoError(t, os.MkdirAll(doctorGoldens, 0o755))
				require.NoError(t, os.WriteFile(golden, []byte(out), 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err, "go test ./internal/testing/integration -run TestDoctor -update writes it")
			assert.Equal(t, string(want), out)

			var failed []string
			for _, line := range strings.Split(strings.TrimSpace(run.stdout), "\n") {
				if !strings.HasPrefix(line, "ok    ") {
					failed = append(failed, line)
				}
			}
			if tc.failing == "" {
				assert.Equal(t, 0, run.code, "stderr: %s", run.stderr)
				assert.Empty(t, failed, "every check passes")
				return
			}
			assert.Equal(t, 1, run.code)
			require.NotEmpty(t, failed)
			assert.True(t, strings.HasPrefix(failed[0], "FAIL  "+tc.failing+": "), failed[0])
			assert.True(t, strings.HasSuffix(failed[0], " — fix: "+tc.fix), failed[0])
			for _, line := range failed[1:] {
				assert.True(t, strings.HasPrefix(line, "skip  "), "only checks that depend on it are not made: %s", line)
			}
			assert.Contains(t, run.stderr, "kedge: doctor: ")
		})
	}
}
