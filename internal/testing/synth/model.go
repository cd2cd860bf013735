package synth

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// Workload kinds of the fleet.
const (
	kindDeployment  = "Deployment"
	kindStatefulSet = "StatefulSet"
	kindDaemonSet   = "DaemonSet"
	kindRollout     = "Rollout"
)

// gitops is how a namespace's workloads reach the cluster.
type gitops int

const (
	// gitopsFlux: a Flux Kustomization applies the namespace's overlay
	// tenants/<ns>, which sets the namespace and may build on shared bases.
	gitopsFlux gitops = iota
	// gitopsArgo: an Argo CD Application applies the directory apps/<ns>
	// of plain files naming their namespace (annotation tracking).
	gitopsArgo
	// gitopsPlain: files under namespaces/<ns> applied by a pipeline that
	// leaves no trace on the objects.
	gitopsPlain
)

var gitopsWeights = []weighted[gitops]{
	{gitopsFlux, 50},
	{gitopsArgo, 30},
	{gitopsPlain, 20},
}

// Shared bases: one file deployed into many namespaces through Flux
// overlays, so kedge has to patch the overlay instead of the file.
var sharedBases = []struct {
	name, kind string
}{
	{"redis", kindStatefulSet},
	{"otel-agent", kindDaemonSet},
}

// sharedPercent is the chance a Flux namespace takes one of its workloads
// from a shared base.
const sharedPercent = 30

// Team and workload names. Workload names repeat across namespaces, as
// they do in real fleets, which is what makes locating a workload by kind
// and name alone expensive.
var (
	teamNames = []string{
		"payments", "checkout", "search", "catalog", "orders", "billing", "identity", "ledger",
		"shipping", "pricing", "reviews", "ads", "media", "notify", "fraud", "loyalty",
	}
	workloadNames = []string{
		"api", "web", "worker", "gateway", "cart", "auth", "events", "scheduler",
		"indexer", "renderer", "cache", "ingest", "export", "report", "sync", "admin",
	}
)

// fleetEpoch anchors every timestamp, so generated objects never depend on
// the clock.
var fleetEpoch = time.Date(2026, time.March, 2, 8, 0, 0, 0, time.UTC)

type namespaceModel struct {
	index   int
	name    string
	profile profile
	gitops  gitops
	drifted bool
	// native is whether this namespace's injector runs native sidecars.
	native    bool
	workloads []workloadModel
	created   time.Time
}

type workloadModel struct {
	kind string
	name string
	pods int
	// base is the shared base directory the workload comes from ("" for
	// the namespace's own file).
	base    string
	version int
}

// model is the fleet before it is turned into objects and files.
type model struct {
	spec       Spec
	namespaces []namespaceModel
}

func newModel(spec Spec) *model {
	rng := rand.New(rand.NewPCG(spec.Seed, 0x6b65646765))
	m := &model{spec: spec, namespaces: make([]namespaceModel, spec.Namespaces)}
	workload := 0
	for i := range m.namespaces {
		ns := &m.namespaces[i]
		ns.index = i
		ns.name = fmt.Sprintf("%s-%04d", teamNames[rng.IntN(len(teamNames))], i)
		ns.profile = pick(rng, profileWeights, profileNone)
		ns.gitops = pick(rng, gitopsWeights, gitopsPlain)
		ns.drifted = drifts(i, spec.Drift)
		ns.native = rng.IntN(2) == 0
		ns.created = fleetEpoch.Add(-time.Duration(rng.IntN(400*24)) * time.Hour)
		n := share(spec.Workloads, spec.Namespaces, i)
		shared := -1
		if ns.gitops == gitopsFlux && rng.IntN(100) < sharedPercent {
			shared = rng.IntN(len(sharedBases))
		}
		names := rng.Perm(len(workloadNames))
		for j := range n {
			w := workloadModel{pods: share(spec.Pods, spec.Workloads, workload), version: 1 + rng.IntN(40)}
			skipRetiredDraws(rng)
			workload++
			switch {
			case j == 0 && shared >= 0:
				w.kind, w.name = sharedBases[shared].kind, sharedBases[shared].name
				w.base = "bases/" + w.name
			default:
				w.kind = pickKind(rng)
				w.name = workloadNames[names[j%len(names)]]
				if j >= len(names) {
					w.name = fmt.Sprintf("%s-%d", w.name, j/len(names))
				}
			}
			ns.workloads = append(ns.workloads, w)
		}
	}
	return m
}

// weighted is a choice and its share of the fleet, in percent.
type weighted[T any] struct {
	value  T
	weight int
}

// pick draws one of the choices by their weights; fallback covers weights
// that add up to less than 100.
func pick[T any](rng *rand.Rand, choices []weighted[T], fallback T) T {
	n := rng.IntN(100)
	for _, c := range choices {
		if n < c.weight {
			return c.value
		}
		n -= c.weight
	}
	return fallback
}

func pickKind(rng *rand.Rand) string {
	switch n := rng.IntN(100); {
	case n < 70:
		return kindDeployment
	case n < 85:
		return kindStatefulSet
	case n < 92:
		return kindDaemonSet
	default:
		return kindRollout
	}
}

// skipRetiredDraws takes from rng what a workload's hash and uid once
// took (ten letters, two words), so that every seed keeps naming the fleet
// and laying out its repository as it always has.
func skipRetiredDraws(rng *rand.Rand) {
	for range 10 {
		rng.IntN(27)
	}
	rng.Uint64()
	rng.Uint64()
}
