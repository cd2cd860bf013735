package editcheck

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/strvals"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// An Application whose source path holds a chart is rendered by Argo CD
// with `helm template` and the source's helm block: valueFiles, then
// values or valuesObject (valuesObject replaces values), then parameters
// (https://argo-cd.readthedocs.io/en/stable/user-guide/helm/). A change to
// that block is proven by rendering the chart with the block before and
// after: the objects differ by intended restarts alone.

// compareArgoValues judges an Application changed in its sources' helm
// values only; it reports false, leaving the judgement to compareArgo,
// when the change is anything else.
func (c Check) compareArgoValues(where string, b, a *unstructured.Unstructured, res *Result) bool {
	before, after := sourcesOf(b), sourcesOf(a)
	if len(before) != len(after) || reflect.DeepEqual(b.Object, a.Object) ||
		!reflect.DeepEqual(withoutSourceValues(b), withoutSourceValues(a)) {
		return false
	}
	name := "Argo CD Application " + a.GetNamespace() + "/" + a.GetName()
	problem := func(format string, args ...any) {
		res.Problems = append(res.Problems, where+": "+name+": "+fmt.Sprintf(format, args...))
	}
	namespace, _, _ := unstructured.NestedString(a.Object, "spec", "destination", "namespace")
	built := c
	built.TargetNamespaces, built.Flux, built.Argo = nil, nil, nil
	for i := range after {
		if reflect.DeepEqual(before[i], after[i]) {
			continue
		}
		objsBefore, err := renderArgoChart(c.Before, c.Charts, a.GetName(), namespace, before[i])
		if err != nil {
			problem("source %d does not render before the change: %v", i, err)
			continue
		}
		objsAfter, err := renderArgoChart(c.After, c.Charts, a.GetName(), namespace, after[i])
		if err != nil {
			problem("source %d renders before the change, not after: %v", i, err)
			continue
		}
		built.compare(fmt.Sprintf("%s (%s, source %d)", where, name, i), objsBefore, objsAfter, true, res)
	}
	return true
}

func withoutSourceValues(o *unstructured.Unstructured) map[string]any {
	out := runtime.DeepCopyJSON(o.Object)
	strip := func(src any) {
		s, _ := src.(map[string]any)
		h, _ := s["helm"].(map[string]any)
		if h == nil {
			return
		}
		delete(h, "values")
		delete(h, "valuesObject")
		delete(h, "parameters")
		if len(h) == 0 {
			delete(s, "helm")
		}
	}
	spec, _ := out["spec"].(map[string]any)
	strip(spec["source"])
	list, _ := spec["sources"].([]any)
	for _, s := range list {
		strip(s)
	}
	return out
}

// renderArgoChart renders the chart at a source's path in a checkout as
// Argo CD's repo server does, objects without a namespace landing in the
// destination's.
func renderArgoChart(repo string, charts map[string]string, app, namespace string, source map[string]any) ([]*unstructured.Unstructured, error) {
	var src struct {
		Path           string `json:"path"`
		RepoURL        string `json:"repoURL"`
		Chart          string `json:"chart"`
		TargetRevision string `json:"targetRevision"`
		Helm           struct {
			ReleaseName  string         `json:"releaseName"`
			ValueFiles   []string       `json:"valueFiles"`
			Values       string         `json:"values"`
			ValuesObject map[string]any `json:"valuesObject"`
			Parameters   []struct {
				Name        string `json:"name"`
				Value       string `json:"value"`
				ForceString bool   `json:"forceString"`
			} `json:"parameters"`
		} `json:"helm"`
	}
	data, err := yaml.Marshal(source)
	if err == nil {
		err = yaml.Unmarshal(data, &src)
	}
	if err != nil {
		return nil, err
	}
	top, err := resolved(repo)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(top, filepath.FromSlash(strings.TrimPrefix(src.Path, "./")))
	if src.Chart != "" {
		var ok bool
		if dir, ok = charts[src.RepoURL+" "+src.Chart+" "+src.TargetRevision]; !ok {
			return nil, fmt.Errorf("no copy of chart %s %s from %s", src.Chart, src.TargetRevision, src.RepoURL)
		}
	}
	chrt, err := loader.Load(dir)
	if err != nil {
		return nil, err
	}
	values := map[string]any{}
	layer := func(over map[string]any) { values = chartutil.MergeTables(over, values) }
	for _, f := range src.Helm.ValueFiles {
		raw, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(f)))
		if err != nil {
			return nil, err
		}
		m := map[string]any{}
		if err := yaml.Unmarshal(raw, &m); err != nil {
			return nil, err
		}
		layer(m)
	}
	inline := src.Helm.ValuesObject
	if inline == nil {
		if err := yaml.Unmarshal([]byte(src.Helm.Values), &inline); err != nil {
			return nil, err
		}
	}
	if inline != nil {
		layer(inline)
	}
	for _, p := range src.Helm.Parameters {
		parse := strvals.ParseInto
		if p.ForceString {
			parse = strvals.ParseIntoString
		}
		if err := parse(p.Name+"="+p.Value, values); err != nil {
			return nil, err
		}
	}
	release := src.Helm.ReleaseName
	if release == "" {
		release = app
	}
	rendered, err := renderChart(chrt, values, release, namespace)
	if err != nil {
		return nil, err
	}
	return decodeInstalled(rendered, namespace)
}

// mappingKeyOnly is a line that opens a mapping: a key and nothing else.
var mappingKeyOnly = regexp.MustCompile(`^(\s*)[^\s#:'"{}\[\]][^:#]*:\s*$`)

// isValuesChain reports whether a block of added lines is a chain of new
// mappings, each inside the one before, ending in restart annotations
// only: what setting an annotation under a chart value that does not exist
// yet adds (helm:, valuesObject:, a component's key, podAnnotations:).
func isValuesChain(added []string, keys []string) bool {
	depth := -1
	i := 0
	for ; i < len(added) && mappingKeyOnly.MatchString(added[i]); i++ {
		indent := len(mappingKeyOnly.FindStringSubmatch(added[i])[1])
		if indent <= depth {
			return false
		}
		depth = indent
	}
	if i == 0 || i == len(added) {
		return false
	}
	for _, l := range added[i:] {
		if !isAnnotationLine(l, keys) || len(l)-len(strings.TrimLeft(l, " ")) <= depth {
			return false
		}
	}
	return true
}

// isParameterEntries reports whether a block of added lines is Helm
// parameters of an Argo CD source that set restart annotations alone: items
// {name, value, forceString: true} whose name ends in an escaped annotation
// key (--set-string podAnnotations.kedge\.io/restart=...).
func isParameterEntries(added []string, keys []string) bool {
	var items []map[string]any
	if len(added) == 0 || yaml.Unmarshal([]byte(dedent(added)), &items) != nil || len(items) == 0 {
		return false
	}
	for _, it := range items {
		name, _ := it["name"].(string)
		_, hasValue := it["value"].(string)
		if len(it) != 3 || !hasValue || it["forceString"] != true || !endsInKey(name, keys) {
			return false
		}
	}
	return true
}

func endsInKey(name string, keys []string) bool {
	for _, k := range keys {
		if strings.HasSuffix(name, "."+strings.ReplaceAll(k, ".", `\.`)) {
			return true
		}
	}
	return false
}

// changedInValuesOnly reports whether a HelmRelease changed in spec.values
// alone: helm-controller then renders the chart with the new values, which
// compareRelease renders too.
func changedInValuesOnly(before, after *unstructured.Unstructured) bool {
	return !reflect.DeepEqual(before.Object, after.Object) && reflect.DeepEqual(withoutSpec(before, "values"), withoutSpec(after, "values"))
}
