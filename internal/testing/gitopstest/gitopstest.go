// Package gitopstest builds what the tests of the GitOps stages share:
// workloads as a cluster reports them (drifted, with the tracking metadata
// Flux and Argo CD write), checkouts written from a map or generated at
// scale, the fixture repositories of testdata/manifest, and packaged charts.
package gitopstest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"flag"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kedge-io/kedge/internal/drift"
)

// Update makes Golden rewrite the golden files instead of comparing.
var Update = flag.Bool("update", false, "rewrite golden files")

// Fixtures is testdata/manifest, from any package three levels below the
// repository's root.
var Fixtures = fixturesDir()

func fixturesDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "testdata", "manifest")
}

// FixtureRepo is the checkout of a fixture case.
func FixtureRepo(name string) string { return filepath.Join(Fixtures, name, "repo") }

// Golden compares got with testdata/manifest/<case>/golden/<file>, or
// rewrites the file with -update.
func Golden(t *testing.T, name, file string, got []byte) {
	t.Helper()
	p := filepath.Join(Fixtures, name, "golden", file)
	if *Update {
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, got, 0o644))
	}
	want, err := os.ReadFile(p)
	require.NoError(t, err, "golden file missing; run with -update")
	require.Equal(t, string(want), string(got), "golden %s", p)
}

// Istio125 and Istio126 are targets a plan restarts for.
var (
	Istio125 = drift.Desired{Revision: "1-25-0", Image: "docker.io/istio/proxyv2:1.25.0"}
	Istio126 = drift.Desired{Revision: "1-26-0", Image: "docker.io/istio/proxyv2:1.26.0"}
)

// GenerateRepo writes a deterministic GitOps checkout: apps made of a base
// and two overlays (8 files each) and plain directories (4 files each).
// It returns the number of files written.
func GenerateRepo(tb testing.TB, root string, apps, plainDirs int) int {
	tb.Helper()
	files := 0
	write := func(p, content string) {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			tb.Fatal(err)
		}
		files++
	}
	deployment := func(kind, name, ns string) string {
		nsLine := ""
		if ns != "" {
			nsLine = "\n  namespace: " + ns
		}
		return fmt.Sprintf(`apiVersion: apps/v1
kind: %s
metadata:
  name: %s%s
spec:
  selector:
    matchLabels:
      app: %[2]s
  template:
    metadata:
      labels:
        app: %[2]s
    spec:
      containers:
        - name: app
          image: example.com/%[2]s:1.0.0
`, kind, name, nsLine)
	}
	service := func(name, ns string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: Service\nmetadata:\n  name: %s\n  namespace: %s\nspec:\n  ports:\n    - port: 80\n", name, ns)
	}
	for i := 0; i < apps; i++ {
		app := fmt.Sprintf("app-%04d", i)
		base := filepath.Join("apps", app, "base")
		write(filepath.Join(base, "kustomization.yaml"), "resources:\n  - deployment.yaml\n  - service.yaml\n  - configmap.yaml\n")
		write(filepath.Join(base, "deployment.yaml"), deployment("Deployment", app, ""))
		write(filepath.Join(base, "service.yaml"), fmt.Sprintf("apiVersion: v1\nkind: Service\nmetadata:\n  name: %s\nspec:\n  ports:\n    - port: 80\n", app))
		write(filepath.Join(base, "configmap.yaml"), fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  level: info\n", app))
		for _, env := range []string{"staging", "prod"} {
			overlay := filepath.Join("apps", app, env)
			write(filepath.Join(overlay, "kustomization.yaml"), fmt.Sprintf(
				"namespace: %s-%s\nnamePrefix: %s-\nresources:\n  - ../base\npatches:\n  - path: replicas.yaml\n", app, env, env))
			write(filepath.Join(overlay, "replicas.yaml"), fmt.Sprintf(
				"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: %s\nspec:\n  replicas: 2\n", app))
		}
	}
	for i := 0; i < plainDirs; i++ {
		name := fmt.Sprintf("svc-%04d", i)
		ns := fmt.Sprintf("team-%02d", i%50)
		dir := filepath.Join("plain", ns, name)
		write(filepath.Join(dir, "deployment.yaml"), deployment("Deployment", name, ns)+"---\n"+service(name, ns))
		write(filepath.Join(dir, "statefulset.yaml"), deployment("StatefulSet", name+"-db", ns))
		write(filepath.Join(dir, "service.yaml"), service(name+"-db", ns))
		write(filepath.Join(dir, "configmap.yaml"), fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\ndata:\n  a: b\n", name, ns))
	}
	return files
}

func WriteTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, content := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(content), 0o644))
	}
	return root
}

func HelmRelease(name, namespace string) string {
	out := "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: " + name + "\n"
	if namespace != "" {
		out += "  namespace: " + namespace + "\n"
	}
	return out + "spec:\n  interval: 5m\n  chart:\n    spec:\n      chart: podinfo\n      sourceRef:\n        kind: HelmRepository\n        name: podinfo\n"
}

func Workload(ns, kind, name string) drift.Workload {
	apiVersion := "apps/v1"
	if kind == "Rollout" {
		apiVersion = "argoproj.io/v1alpha1"
	}
	return drift.Workload{Namespace: ns, Kind: kind, Name: name, APIVersion: apiVersion}
}

func Drifted(ns, kind, name string, desired drift.Desired) drift.Workload {
	w := Workload(ns, kind, name)
	w.Reasons = []drift.Reason{drift.ReasonRevision}
	w.Desired = desired
	return w
}

// Labelled returns w with the metadata a GitOps controller puts on what it
// applies, as "key=value" pairs; keys with a slash and "tracking-id" in them
// are annotations.
func Labelled(w drift.Workload, pairs ...string) drift.Workload {
	w.Labels, w.Annotations = map[string]string{}, map[string]string{}
	for _, p := range pairs {
		k, v, _ := strings.Cut(p, "=")
		if strings.HasSuffix(k, "tracking-id") {
			w.Annotations[k] = v
		} else {
			w.Labels[k] = v
		}
	}
	return w
}

// FluxApplied labels w as applied by the Flux Kustomization flux-system/name.
func FluxApplied(w drift.Workload, name string) drift.Workload {
	return Labelled(w, "kustomize.toolkit.fluxcd.io/name="+name, "kustomize.toolkit.fluxcd.io/namespace=flux-system")
}

// HelmRendered labels w as rendered by the Flux HelmRelease namespace/name,
// as helm-controller labels what it installs.
func HelmRendered(w drift.Workload, namespace, name string) drift.Workload {
	return Labelled(w, "helm.toolkit.fluxcd.io/name="+name, "helm.toolkit.fluxcd.io/namespace="+namespace)
}

// ArgoTracked annotates w as tracked by the Argo CD Application app.
func ArgoTracked(w drift.Workload, app string) drift.Workload {
	return Labelled(w, "argocd.argoproj.io/tracking-id="+app+":apps/"+w.Kind+":"+w.Namespace+"/"+w.Name)
}

// CopyCase copies a whole fixture case (the repo and anything next to it
// that its symlinks point at) and returns the copied checkout.
func CopyCase(t *testing.T, name string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), name)
	src := filepath.Join(Fixtures, name)
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		default:
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(target, data, 0o644)
		}
	})
	require.NoError(t, err)
	return filepath.Join(dst, "repo")
}

// GitApply applies a patch the way a reviewer would, with git itself.
func GitApply(t *testing.T, dir, patch string) {
	t.Helper()
	cmd := exec.Command("git", "apply", "--whitespace=nowarn", "-")
	cmd.Dir = dir
	cmd.Stdin = bytes.NewBufferString(patch)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git apply: %s\npatch:\n%s", out, patch)
}

// PackChart packages chart files as `helm package` does, into a .tgz whose
// entries sit under the chart's name.
func PackChart(t *testing.T, name string, files map[string]string) string {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, p := range slices.Sorted(maps.Keys(files)) {
		data := []byte(files[p])
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: name + "/" + p, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}))
		_, err := tw.Write(data)
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	require.NoError(t, gz.Close())
	out := filepath.Join(t.TempDir(), name+".tgz")
	require.NoError(t, os.WriteFile(out, buf.Bytes(), 0o644))
	return out
}

// DeploymentTemplate renders a Deployment whose pod template annotations
// come from the given template text (indented under annotations).
func DeploymentTemplate(name, annotations string) string {
	return "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}-" + name + "\nspec:\n" +
		"  selector:\n    matchLabels:\n      app: " + name + "\n  template:\n    metadata:\n      labels:\n        app: " + name + "\n" +
		annotations + "    spec:\n      containers:\n        - name: app\n          image: app:1\n"
}

const chartYAML = "apiVersion: v2\nname: app\nversion: 0.1.0\n"

// ValueCharts are charts in the shapes charts expose pod annotations.
var ValueCharts = map[string]map[string]string{
	"podAnnotations": {
		"Chart.yaml":  chartYAML,
		"values.yaml": "replicas: 1\npodAnnotations: {}\n",
		"templates/deployment.yaml": DeploymentTemplate("web",
			"      {{- with .Values.podAnnotations }}\n      annotations:\n        {{- toYaml . | nindent 8 }}\n      {{- end }}\n"),
		"templates/service.yaml": "apiVersion: v1\nkind: Service\nmetadata:\n  name: {{ .Release.Name }}-web\nspec:\n  ports:\n    - port: 80\n",
	},
	"component": {
		"Chart.yaml":  chartYAML,
		"values.yaml": "podAnnotations: {}\nweb:\n  podAnnotations: {}\nworker:\n  podAnnotations:\n    team: jobs\n",
		"templates/web.yaml": DeploymentTemplate("web",
			"      annotations:\n        {{- with .Values.podAnnotations }}{{ toYaml . | nindent 8 }}{{ end }}\n        {{- with .Values.web.podAnnotations }}{{ toYaml . | nindent 8 }}{{ end }}\n"),
		"templates/worker.yaml": DeploymentTemplate("worker",
			"      annotations:\n        {{- with .Values.podAnnotations }}{{ toYaml . | nindent 8 }}{{ end }}\n        {{- with .Values.worker.podAnnotations }}{{ toYaml . | nindent 8 }}{{ end }}\n"),
	},
	"none": {
		"Chart.yaml":                chartYAML,
		"values.yaml":               "podAnnotations: {}\n",
		"templates/deployment.yaml": DeploymentTemplate("web", "      annotations:\n        fixed: \"yes\"\n"),
	},
}
