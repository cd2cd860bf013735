package synth

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Directories of the GitOps repository, one per way of deploying.
func overlayDir(namespace string) string { return "tenants/" + namespace }
func argoDir(namespace string) string    { return "apps/" + namespace }
func plainDir(namespace string) string   { return "namespaces/" + namespace }

// repoFiles calls fn with every file of the repository, in a fixed order.
// Contents are written the way people write them (no defaults, no status),
// so kustomize renders exactly the identities the cluster holds.
func (m *model) repoFiles(fn func(path string, content []byte) error) error {
	var fluxDocs []string
	usedBases := map[string]bool{}
	for i := range m.namespaces {
		ns := &m.namespaces[i]
		var err error
		switch ns.gitops {
		case gitopsFlux:
			fluxDocs = append(fluxDocs, fluxKustomizationDoc(ns.name))
			err = m.overlay(ns, fn, usedBases)
		case gitopsArgo:
			err = m.directory(ns, argoDir(ns.name), fn)
		case gitopsPlain:
			err = m.directory(ns, plainDir(ns.name), fn)
		}
		if err != nil {
			return err
		}
	}
	for _, base := range sharedBases {
		if !usedBases[base.name] {
			continue
		}
		dir := "bases/" + base.name
		w := workloadModel{kind: base.kind, name: base.name, pods: 3, version: 1}
		file := dir + "/" + strings.ToLower(base.kind) + ".yaml"
		if err := fn(file, []byte(workloadDoc(&w, "")+"---\n"+serviceDoc(w.name, ""))); err != nil {
			return err
		}
		kust := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - " + strings.ToLower(base.kind) + ".yaml\n"
		if err := fn(dir+"/kustomization.yaml", []byte(kust)); err != nil {
			return err
		}
	}
	if len(fluxDocs) > 0 {
		head := fmt.Sprintf(`apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: %s
  namespace: %s
spec:
  interval: 1m
  url: %s
  ref:
    branch: main
`, fluxSource, fluxNamespace, m.spec.RepoURL)
		content := head + "---\n" + strings.Join(fluxDocs, "---\n")
		if err := fn("clusters/"+m.spec.Cluster+"/tenants.yaml", []byte(content)); err != nil {
			return err
		}
	}
	return nil
}

func fluxKustomizationDoc(namespace string) string {
	return fmt.Sprintf(`apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: %[1]s
  namespace: %[2]s
spec:
  interval: 10m
  path: ./%[3]s
  prune: true
  sourceRef:
    kind: GitRepository
    name: %[4]s
`, namespace, fluxNamespace, overlayDir(namespace), fluxSource)
}

// overlay writes a Flux tenant: a kustomization setting the namespace,
// listing the namespace's own workload files and any shared base.
func (m *model) overlay(ns *namespaceModel, fn func(string, []byte) error, usedBases map[string]bool) error {
	dir := overlayDir(ns.name)
	var resources []string
	for i := range ns.workloads {
		w := &ns.workloads[i]
		if w.base != "" {
			usedBases[w.name] = true
			resources = append(resources, "../../"+w.base)
			continue
		}
		file := w.name + ".yaml"
		resources = append(resources, file)
		if err := fn(dir+"/"+file, []byte(workloadDoc(w, "")+"---\n"+serviceDoc(w.name, ""))); err != nil {
			return err
		}
	}
	kust := fmt.Sprintf("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: %s\nresources:\n", ns.name)
	for _, r := range resources {
		kust += "  - " + r + "\n"
	}
	return fn(dir+"/kustomization.yaml", []byte(kust))
}

// directory writes one file per workload naming its namespace, as a
// directory applied as is.
func (m *model) directory(ns *namespaceModel, dir string, fn func(string, []byte) error) error {
	for i := range ns.workloads {
		w := &ns.workloads[i]
		doc := workloadDoc(w, ns.name) + "---\n" + serviceDoc(w.name, ns.name)
		if err := fn(dir+"/"+w.name+".yaml", []byte(doc)); err != nil {
			return err
		}
	}
	return nil
}

func metadataBlock(name, namespace string) string {
	s := "metadata:\n  name: " + name + "\n"
	if namespace != "" {
		s += "  namespace: " + namespace + "\n"
	}
	return s + "  labels:\n    app.kubernetes.io/name: " + name + "\n"
}

// workloadDoc is the workload as its team writes it.
func workloadDoc(w *workloadModel, namespace string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: %s\nkind: %s\n", apiVersionOf(w.kind), w.kind)
	b.WriteString(metadataBlock(w.name, namespace))
	b.WriteString("spec:\n")
	switch w.kind {
	case kindDeployment, kindRollout:
		fmt.Fprintf(&b, "  replicas: %d\n  revisionHistoryLimit: 10\n", w.pods)
	case kindStatefulSet:
		fmt.Fprintf(&b, "  replicas: %d\n  serviceName: %s\n", w.pods, w.name)
	}
	if w.kind == kindRollout {
		b.WriteString("  strategy:\n    canary:\n      steps:\n        - setWeight: 20\n        - pause: {duration: 10m}\n")
	}
	fmt.Fprintf(&b, `  selector:
    matchLabels:
      app: %[1]s
  template:
    metadata:
      labels:
        app: %[1]s
        version: v%[2]d
      annotations:
        prometheus.io/scrape: "true"
        prometheus.io/port: "9090"
    spec:
      serviceAccountName: %[1]s
      containers:
        - name: %[1]s
          image: %[3]s
          ports:
            - name: http
              containerPort: 8080
            - name: metrics
              containerPort: 9090
          env:
            - name: LOG_LEVEL
              value: info
          resources:
            requests:
              cpu: 250m
              memory: 256Mi
            limits:
              memory: 512Mi
          readinessProbe:
            httpGet:
              path: /ready
              port: 8080
          livenessProbe:
            httpGet:
              path: /healthz
              port: 8080
`, w.name, w.version, repoImage(w))
	return b.String()
}

// repoImage is the application image of a workload.
func repoImage(w *workloadModel) string {
	return fmt.Sprintf("%s/apps/%s:%d.%d.0", appRegistry, w.name, 1+w.version/10, w.version%10)
}

func serviceDoc(name, namespace string) string {
	return "apiVersion: v1\nkind: Service\n" + metadataBlock(name, namespace) + fmt.Sprintf(`spec:
  selector:
    app: %s
  ports:
    - name: http
      port: 80
      targetPort: http
`, name)
}

// writeFiles writes what repoFiles produces below dir.
func writeFiles(dir string, produce func(func(string, []byte) error) error) (int, error) {
	files := 0
	made := map[string]bool{}
	err := produce(func(path string, content []byte) error {
		full := filepath.Join(dir, filepath.FromSlash(path))
		parent := filepath.Dir(full)
		if !made[parent] {
			if err := os.MkdirAll(parent, 0o755); err != nil {
				return err
			}
			made[parent] = true
		}
		files++
		return os.WriteFile(full, content, 0o644)
	})
	return files, err
}
