package argo

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/gitops/chart"
	"github.com/kedge-io/kedge/internal/gitops/document"
	"github.com/kedge-io/kedge/internal/gitops/index"
	"github.com/kedge-io/kedge/internal/gitops/restart"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/yamledit/helmedit"
)

// An Application the repository holds no copy of (one an ApplicationSet
// generates, one created in the cluster) still reads its values files from
// the repository. The last of them has the highest precedence among the
// files (https://argo-cd.readthedocs.io/en/stable/user-guide/helm/#helm-value-precedence):
// when the repository holds it, or it may be missing (ignoreMissingValueFiles,
// the default/override pattern of ApplicationSets), and no other
// Application of the cluster reads it, the restart is written there, under
// the chart value that reaches the workload.

// ValuesFileSite is a chart value in a values file of the repository that
// one Application source alone reads.
type ValuesFileSite struct {
	file string
	// missing is set when the file does not exist yet.
	missing   bool
	helm      *objects.ApplicationSourceHelm
	refs      []Ref
	value     chart.Value
	namespace string
	via       string
}

type valuesFileKind struct{}

func (s *ValuesFileSite) File() string         { return s.file }
func (s *ValuesFileSite) Kind() restart.Kind   { return valuesFileKind{} }
func (s *ValuesFileSite) Reads() restart.Reads { return restart.ReadsCharts }
func (s *ValuesFileSite) Source() index.Source {
	kind, name, _ := strings.Cut(s.value.Workload, "/")
	return index.Source{Path: s.file, Kind: kind, Name: name, Namespace: s.namespace}
}
func (s *ValuesFileSite) Rendered() restart.WorkloadID { return s.value.Rendered() }
func (s *ValuesFileSite) Group() []restart.WorkloadID  { return s.value.GroupIDs(s.namespace) }
func (s *ValuesFileSite) CheckKey() string {
	return fmt.Sprintf("argo values file %s %s/%s", s.file, s.value.Chart.Namespace, s.value.Chart.Release)
}

// Check renders the chart with the values file as it was and as edited.
func (s *ValuesFileSite) Check(ix *index.Index, e restart.FileEdit, intents map[restart.WorkloadID]restart.Intent) error {
	return s.value.CheckAll(ix, e, intents, func(data []byte) (map[string]any, error) {
		if data == nil {
			return chartValuesReplaced(ix, s.value.Chart, s.helm, s.refs, nil)
		}
		return chartValuesReplaced(ix, s.value.Chart, s.helm, s.refs, map[string][]byte{s.file: data})
	})
}

func (valuesFileKind) Name() string { return "a values file of an Argo CD Application" }

func (valuesFileKind) Intents(restarts []restart.Restart) []restart.Intent {
	return restart.OneIntentEach(restarts)
}

// Write writes each restart's annotations under its chart value in the
// values file, creating the file when the Application may miss it.
func (valuesFileKind) Write(ix *index.Index, file string, restarts []restart.Restart) ([]restart.FileEdit, error) {
	site := restarts[0].Site.(*ValuesFileSite)
	if !site.missing {
		return restart.WriteEach(ix, file, restarts, func(data []byte, r restart.Restart) ([]byte, bool, error) {
			s := r.Site.(*ValuesFileSite)
			return helmedit.SetChartValues(data, 0, helmedit.ValuesMap{}, s.value.Key, r.Set)
		})
	}
	var values map[string]any
	for _, r := range restart.ByID(restarts) {
		s := r.Site.(*ValuesFileSite)
		for k, v := range r.Set {
			values, _ = document.WithValue(values, s.value.Key, k, v)
		}
	}
	data, err := newValuesFile(values)
	if err != nil {
		return nil, err
	}
	return []restart.FileEdit{{Path: file, After: data, Created: true, Workloads: restart.IDs(restart.ByID(restarts))}}, nil
}

// newValuesFile writes the values of a new values file, keys sorted, values
// double-quoted as kedge writes them elsewhere.
func newValuesFile(values map[string]any) ([]byte, error) {
	var b strings.Builder
	var write func(m map[string]any, indent string) error
	write = func(m map[string]any, indent string) error {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			switch v := m[k].(type) {
			case map[string]any:
				b.WriteString(indent + k + ":\n")
				if err := write(v, indent+"  "); err != nil {
					return err
				}
			case string:
				fmt.Fprintf(&b, "%s%s: %q\n", indent, k, v)
			default:
				return fmt.Errorf("value %s is not a string", k)
			}
		}
		return nil
	}
	if err := write(values, ""); err != nil {
		return nil, err
	}
	return []byte(b.String()), nil
}

// valuesFileSite returns the site writing w's value in the last values
// file of the source that the repository holds, or may, when no other
// reader reads it; readers names, by repo-relative values file, the other
// Application sources of the cluster reading each.
func valuesFileSite(ix *index.Index, c chart.Chart, helm *objects.ApplicationSourceHelm, refs []Ref, key []string, group []string, namespace, via string, readers map[string][]string) (*ValuesFileSite, error) {
	if helm == nil || len(helm.ValueFiles) == 0 {
		return nil, errors.New("it reads no values file of the repository")
	}
	last := helm.ValueFiles[len(helm.ValueFiles)-1]
	file, err := valuesFile(c, last, refs)
	if err != nil {
		return nil, fmt.Errorf("its last values file cannot carry it: %v", err)
	}
	if others := readers[file]; len(others) > 0 {
		return nil, fmt.Errorf("its last values file %s is read by %s too", file, strings.Join(others, ", "))
	}
	_, err = ix.ReadFile(file)
	missing := errors.Is(err, fs.ErrNotExist)
	switch {
	case missing && !helm.IgnoreMissingValueFiles:
		return nil, fmt.Errorf("its last values file %s does not exist", file)
	case err != nil && !missing:
		return nil, err
	}
	return &ValuesFileSite{file: file, missing: missing, helm: helm, refs: refs, namespace: namespace, via: via,
		value: chart.Value{Chart: c, Key: key, Workload: "", Group: group}}, nil
}

// valuesFileFound is w restarted through the site.
func valuesFileFound(site *ValuesFileSite, workload string, before chart.Render) restart.Found {
	site.value.Workload = workload
	detail := fmt.Sprintf("%s, value %s in %s", site.via, chart.ValuePath(site.value.Key), site.file)
	if len(site.value.Group) > 1 {
		detail += ", shared by " + strings.Join(site.value.Group, ", ")
	}
	return restart.Found{
		Manifest:            drift.Manifest{Status: drift.ManifestFound, Path: site.file, Edit: drift.EditHelmValues, Detail: detail},
		Source:              site.Source(),
		TemplateAnnotations: document.TemplateAnnotations(before[workload]),
		Site:                site,
	}
}
