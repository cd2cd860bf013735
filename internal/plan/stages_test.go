package plan

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kedge-io/kedge/internal/cluster/snapshot"
	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/gitops/edit"
	"github.com/kedge-io/kedge/internal/gitops/index"
	"github.com/kedge-io/kedge/internal/gitops/locate"
	"github.com/kedge-io/kedge/internal/gitops/restart"
	"github.com/kedge-io/kedge/internal/mesh"
	"github.com/kedge-io/kedge/internal/migrate"
)

// TestNoStageWritesIntoAnEarlierStagesValue runs the stages of Build one
// by one, in Build's order, and takes a deep fingerprint of what each
// returns (unexported fields and everything reachable through pointers,
// maps, slices and interfaces included) as soon as it returns. After the
// last stage, every fingerprint must still hold: no stage wrote into a
// value an earlier one returned, the index and the cluster's objects
// included.
func TestNoStageWritesIntoAnEarlierStagesValue(t *testing.T) {
	tests := []struct {
		name string
		opts Options
	}{
		{name: "the demo", opts: Options{RepoRoot: "../../testdata/demo/gitops"}},
		{name: "the demo, chart values preferred", opts: Options{RepoRoot: "../../testdata/demo/gitops", HelmValues: true}},
		{name: "the demo, moving a namespace to another revision", opts: Options{RepoRoot: "../../testdata/demo/gitops",
			Migrations: []migrate.Policy{{Key: "migrations[0]", From: "1-25-0", To: "default"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set, err := snapshot.Read("../../testdata/demo/cluster")
			require.NoError(t, err)
			type heldValue struct {
				name, print string
				value       any
			}
			var held []heldValue
			hold := func(name string, v any) { held = append(held, heldValue{name, fingerprint(v), v}) }
			hold("the cluster's objects", set)

			model := mesh.New(set.MutatingWebhookConfigurations, set.ConfigMaps, set.ProxyConfigs...)
			hold("the mesh model", model)
			selected, err := selectMigrations(set, model, tt.opts)
			require.NoError(t, err)
			hold("the selected migrations", selected)
			ix, err := Open(tt.opts.RepoRoot, nil, 0)
			require.NoError(t, err)
			hold("the index", ix)
			hints := locate.HintsIn(nil, index.WithRepositoryApplications(set, ix))
			if tt.opts.HelmValues {
				hints = preferValues(hints)
			}
			migrations, labelEdits := migrate.Locate(ix, selected, namespaceHints(set, hints))
			hold("the located migrations", migrations)
			hold("the label edits", labelEdits)
			relabelled := migrate.Relabel(set, migrations)
			hold("the relabelled objects", relabelled)
			drifted := drift.Compute(relabelled, model, tt.opts.Drift)
			hold("the drift", drifted)
			locations := locate.After(ix, tt.opts.PriorEdits.Located(), drifted.Workloads, hints)
			hold("the locations", locations)
			edits, outcomes, prior := edit.After(ix, tt.opts.PriorEdits, drifted.Workloads, locations, tt.opts.editOptions())
			hold("the edits", edits)
			hold("the outcomes", outcomes)
			hold("the prior edits", prior)
			attached := migrate.Attach(migrations, edits, labelEdits)
			hold("the attached migrations", attached)
			withRefusals := outcomes.WithRefusals(attached.Refused)
			hold("the outcomes with refusals", withRefusals)
			planned := drifted.WithManifests(func(w drift.Workload) (drift.Manifest, bool) {
				m, ok := withRefusals[restart.IDOf(w)]
				return m, ok
			})
			planned.Migrations = attached.Migrations
			hold("the planned drift", planned)
			res := summarise(set, model, planned, attached.Edits, ix, hints)
			require.NotEmpty(t, res.Plan.Workloads)
			require.NotEmpty(t, res.Edits.All())

			for _, h := range held {
				// Still, after every later stage ran.
				assert.True(t, h.print == fingerprint(h.value), "%s was written into by a later stage", h.name)
			}

			// The plan Build makes is the one the stages make.
			built, err := Build(set, tt.opts)
			require.NoError(t, err)
			assert.Equal(t, res.Plan, built.Plan)
		})
	}
}

// fingerprint writes out everything reachable from v: the fields of every
// struct (unexported ones too), the elements of slices and maps in key
// order, and what pointers and interfaces point to, each pointer once.
// Functions and channels count by identity only.
func fingerprint(v any) string {
	var b strings.Builder
	seen := map[uintptr]int{}
	var walk func(reflect.Value, int)
	walk = func(v reflect.Value, depth int) {
		if depth > 200 {
			b.WriteString("…")
			return
		}
		switch v.Kind() {
		case reflect.Invalid:
			b.WriteString("nil")
		case reflect.Pointer:
			if v.IsNil() {
				b.WriteString("nil")
				return
			}
			if n, ok := seen[v.Pointer()]; ok {
				fmt.Fprintf(&b, "&%d", n)
				return
			}
			seen[v.Pointer()] = len(seen)
			b.WriteString("&")
			walk(v.Elem(), depth+1)
		case reflect.Interface:
			if v.IsNil() {
				b.WriteString("nil")
				return
			}
			fmt.Fprintf(&b, "(%s)", v.Elem().Type())
			walk(v.Elem(), depth+1)
		case reflect.Struct:
			b.WriteString("{")
			for i := range v.NumField() {
				fmt.Fprintf(&b, "%s:", v.Type().Field(i).Name)
				walk(v.Field(i), depth+1)
				b.WriteString(",")
			}
			b.WriteString("}")
		case reflect.Slice, reflect.Array:
			if v.Kind() == reflect.Slice && v.IsNil() {
				b.WriteString("nil")
				return
			}
			b.WriteString("[")
			for i := range v.Len() {
				walk(v.Index(i), depth+1)
				b.WriteString(",")
			}
			b.WriteString("]")
		case reflect.Map:
			if v.IsNil() {
				b.WriteString("nil")
				return
			}
			keys := v.MapKeys()
			rendered := make([]string, len(keys))
			order := make([]int, len(keys))
			for i, k := range keys {
				rendered[i] = fingerprint(valueOf(k))
				order[i] = i
			}
			sort.Slice(order, func(i, j int) bool { return rendered[order[i]] < rendered[order[j]] })
			b.WriteString("map[")
			for _, i := range order {
				b.WriteString(rendered[i])
				b.WriteString(":")
				walk(v.MapIndex(keys[i]), depth+1)
				b.WriteString(",")
			}
			b.WriteString("]")
		case reflect.Func, reflect.Chan, reflect.UnsafePointer:
			fmt.Fprintf(&b, "%s@%x", v.Kind(), v.Pointer())
		case reflect.String:
			fmt.Fprintf(&b, "%q", v.String())
		case reflect.Bool:
			fmt.Fprint(&b, v.Bool())
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			fmt.Fprint(&b, v.Int())
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
			fmt.Fprint(&b, v.Uint())
		case reflect.Float32, reflect.Float64:
			fmt.Fprint(&b, v.Float())
		case reflect.Complex64, reflect.Complex128:
			fmt.Fprint(&b, v.Complex())
		}
	}
	walk(reflect.ValueOf(v), 0)
	return b.String()
}

// valueOf lets a map key of an unexported field be fingerprinted on its
// own.
func valueOf(k reflect.Value) any {
	if k.CanInterface() {
		return k.Interface()
	}
	return fmt.Sprintf("%v", k)
}
