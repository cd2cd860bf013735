package dashboard

import (
	"fmt"
	"time"

	"github.com/kedge-io/kedge/internal/ambient"
	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/prstate"
	"github.com/kedge-io/kedge/internal/waves"
)

// fixture is one golden case: the data of every template.
type fixture struct {
	pr        NamespacePR
	dashboard ClusterDashboard
	comments  map[string]CommentData
	plan      PlanView
}

const (
	repo      = "https://github.com/acme/gitops"
	dashURL   = repo + "/issues/1"
	img1232   = "docker.io/istio/proxyv2:1.23.2"
	img1240   = "docker.io/istio/proxyv2:1.24.0"
	imgDigest = "registry.acme.io:5000/istio/proxyv2@sha256:4f2a9c0b7d1e5f3a8b6c9d0e1f2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c"
)

var now = time.Date(2026, 3, 14, 9, 30, 0, 0, time.UTC)

func ago(d time.Duration) *time.Time {
	t := now.Add(-d)
	return &t
}

func pullURL(n int) string { return fmt.Sprintf("%s/pull/%d", repo, n) }

func workload(ns, kind, name string, reasons []drift.Reason, drifted, total int, from []string, fromImages []string, toRev, toImage string, m drift.Manifest, oldest *time.Time) drift.Workload {
	return drift.Workload{
		Namespace: ns, Kind: kind, Name: name, Reasons: reasons,
		Pods:                  drift.PodCount{Total: total, Drifted: drifted},
		Current:               drift.Current{Revisions: from, Images: fromImages},
		Desired:               drift.Desired{Revision: toRev, Image: toImage},
		Manifest:              m,
		OldestDriftedPodStart: oldest,
	}
}

func found(path, edit string) drift.Manifest {
	return drift.Manifest{Status: drift.ManifestFound, Path: path, Edit: edit}
}

func mesh() Mesh {
	return Mesh{
		Revisions: []Revision{
			{Name: "1-24-0", Image: img1240, Tags: []string{"stable", "default"}, Namespaces: []string{"web", "shop", "payments"}},
			{Name: "1-23-2", Image: img1232, Tags: []string{"previous"}, Namespaces: []string{"legacy"}},
		},
		Tags: map[string]string{"default": "1-24-0", "stable": "1-24-0", "previous": "1-23-2"},
	}
}

func prFor(ns string, ws []drift.Workload, versions map[string]int) NamespacePR {
	return NamespacePR{
		Cluster: "prod-eu-1", Namespace: ns, Branch: "kedge/prod-eu-1/" + ns, BaseBranch: "main",
		RepoWebURL: repo, Workloads: ws, ProxyVersions: versions,
		Applier:          "Flux Kustomization flux-system/apps",
		OptOutAnnotation: "kedge.io/ignore", RestartAnnotation: "kedge.io/restartedAt",
		DashboardURL: dashURL,
		State:        prstate.NewState("prod-eu-1", ns, fixable(ws)),
		Now:          now,
	}
}

func fixable(ws []drift.Workload) []drift.Workload {
	fix, _ := splitFixable(ws)
	return fix
}

func commentsFor(pr NamespacePR, stragglers []drift.Workload) map[string]CommentData {
	base := CommentData{
		Cluster: pr.Cluster, Namespace: pr.Namespace, Branch: pr.Branch,
		Targets: pr.State.Targets, MergedAt: now.Add(-47 * time.Minute), Grace: 30 * time.Minute,
		Now: now, DashboardURL: dashURL,
	}
	edited := base
	edited.Authors = []string{"jane-doe", "ops-bot"}
	stalled := base
	stalled.Stragglers = stragglers
	out := map[string]CommentData{
		CommentClosed: closing(base, prstate.FateResolved, ""), CommentEdited: edited, CommentRolledOut: base, CommentStalled: stalled,
		CommentClosedOptedOut:    closing(base, prstate.FateOptedOut, "annotation "+pr.OptOutAnnotation+"=true"),
		CommentClosedNotSelected: closing(base, prstate.FateNotSelected, "namespaces.exclude"),
		CommentClosedDeleted:     closing(base, prstate.FateDeleted, ""),
		CommentClosedNotEditable: closing(base, prstate.FateNotEditable, "no manifest in the repository defines it"),
		CommentClosedMixed:       mixed(base),
	}
	nsOptOut := out[CommentClosedOptedOut]
	nsOptOut.NamespaceOptedOut = true
	out[CommentClosedOptedOut] = nsOptOut
	successor := base
	successor.Successor, successor.SuccessorURL = 41, pullURL(41)
	out[CommentDuplicate], out[CommentSuperseded] = successor, successor
	return out
}

// closing gives every target of the comment the same fate.
func closing(c CommentData, fate prstate.Fate, detail string) CommentData {
	c.OptOutAnnotation = "kedge.io/ignore"
	c.Closed = nil
	for _, t := range c.Targets {
		c.Closed = append(c.Closed, ClosedTarget{Target: t, Fate: fate, Detail: detail})
	}
	return c
}

// mixed gives the targets of the comment each another fate in turn.
func mixed(c CommentData) CommentData {
	fates := []ClosedTarget{
		{Fate: prstate.FateOptedOut, Detail: "annotation kedge.io/ignore=true"},
		{Fate: prstate.FateDeleted},
		{Fate: prstate.FateNotEditable, Detail: "Flux Kustomization flux-system/apps applies it from github.com/acme/platform, not this repository"},
		{Fate: prstate.FateResolved},
	}
	c.Closed = nil
	for i, t := range c.Targets {
		f := fates[i%len(fates)]
		f.Target = t
		c.Closed = append(c.Closed, f)
	}
	return c
}

// typical is a namespace with three workloads drifting for different
// reasons, on a dashboard with a namespace in each interesting state.
func typical() fixture {
	shop := []drift.Workload{
		workload("shop", "Deployment", "cart", []drift.Reason{drift.ReasonRevision}, 3, 3,
			[]string{"1-23-2"}, []string{img1232}, "1-24-0", img1240, found("apps/shop/cart.yaml", drift.EditInPlace), ago(12*24*time.Hour+3*time.Hour)),
		workload("shop", "Rollout", "checkout", []drift.Reason{drift.ReasonProxyImage}, 2, 4,
			[]string{"1-24-0"}, []string{imgDigest}, "1-24-0", img1240, found("apps/shop/overlays/prod/kustomization.yaml", drift.EditOverlayPatch), ago(26*time.Hour)),
		workload("shop", "StatefulSet", "orders-db", []drift.Reason{drift.ReasonMissingSidecar, drift.ReasonRevision}, 1, 2,
			nil, nil, "1-24-0", img1240, found("apps/shop/orders db.yaml", drift.EditInPlace), ago(40*time.Minute)),
	}
	pr := prFor("shop", shop, map[string]int{"1.24.0": 7, "1.23.2": 3, "sha256:4f2a9c0b7d1e": 2, "": 1})
	payments := []drift.Workload{
		workload("payments", "Deployment", "ledger", []drift.Reason{drift.ReasonRevision}, 2, 5,
			[]string{"1-23-2"}, []string{img1232}, "1-24-0", img1240, found("apps/payments/ledger.yaml", drift.EditInPlace), ago(3*time.Hour)),
	}
	monitoring := []drift.Workload{
		workload("monitoring", "DaemonSet", "node-exporter", []drift.Reason{drift.ReasonUnwantedSidecar}, 6, 6,
			[]string{"1-23-2"}, []string{img1232}, "", "", drift.Manifest{Status: drift.ManifestHelm, Detail: "HelmRelease monitoring/prometheus"}, ago(9*24*time.Hour)),
		workload("monitoring", "Deployment", "grafana", []drift.Reason{drift.ReasonRevision}, 1, 1,
			[]string{"1-23-2"}, []string{img1232}, "1-24-0", img1240, drift.Manifest{Status: drift.ManifestAmbiguous, Detail: "defined in two overlays", Candidates: []string{"apps/monitoring/prod/grafana.yaml", "apps/monitoring/base/grafana.yaml"}}, ago(5*time.Hour)),
	}
	legacy := []drift.Workload{
		workload("legacy", "Deployment", "billing", []drift.Reason{drift.ReasonProxyImage}, 2, 2,
			[]string{"1-23-2"}, []string{"docker.io/istio/proxyv2:1.23.1"}, "1-23-2", img1232, found("apps/legacy/billing.yaml", drift.EditInPlace), ago(2*time.Hour)),
	}
	search := []drift.Workload{
		workload("search", "Deployment", "indexer", []drift.Reason{drift.ReasonRevision}, 4, 4,
			[]string{"1-23-2"}, []string{img1232}, "1-24-0", img1240, found("apps/search/indexer.yaml", drift.EditInPlace), ago(time.Hour)),
	}
	dashboard := ClusterDashboard{
		Cluster: "prod-eu-1", Mesh: mesh(), RepoWebURL: repo, BaseBranch: "main",
		Mismatch: Mismatch{Configured: "acme/gitops", Foreign: []ForeignRepository{
			{Repository: "github.com/acme/platform", Namespaces: []string{"monitoring"}},
		}},
		Namespaces: []NamespaceStatus{
			{Namespace: "shop", State: prstate.PROpen, PRNumber: 12, PRURL: pullURL(12), Workloads: shop},
			{Namespace: "payments", State: prstate.PRMergedRollingOut, PRNumber: 9, PRURL: pullURL(9), Workloads: payments},
			{Namespace: "monitoring", State: prstate.PRRefused, Workloads: monitoring, Detail: "no workload kedge can edit"},
			{Namespace: "legacy", State: prstate.PREdited, PRNumber: 7, PRURL: pullURL(7), Workloads: legacy},
			{Namespace: "search", State: prstate.PRRateLimited, Workloads: search, Detail: "10 PRs open, the limit"},
		},
		Skipped: []drift.Skipped{
			{Namespace: "batch", Kind: "CronJob", Name: "nightly-report", Reason: drift.SkipNotRestartable},
			{Namespace: "shop", Kind: "Pod", Name: "debug-shell", Reason: drift.SkipNoOwner},
			{Namespace: "edge", Kind: "Deployment", Name: "gateway", Reason: drift.SkipConflict, Detail: "revisions 1-23-2 and 1-24-0 both match"},
		},
		Refused:    []RefusedFile{{Namespace: "legacy", Path: "apps/legacy/billing.yaml", Reason: "YAML anchors would change", Workloads: []string{"Deployment/billing"}}},
		Stragglers: []Straggler{{Namespace: "payments", PRNumber: 9, PRURL: pullURL(9), MergedAt: now.Add(-95 * time.Minute), Workloads: payments}},
		LastCycle:  now, LastCycleDuration: 4200 * time.Millisecond,
	}
	all := append(append(append(append(append([]drift.Workload{}, shop...), payments...), monitoring...), legacy...), search...)
	m := mesh()
	comments := commentsFor(pr, shop[1:])
	// Here the workloads opted out one by one, not the namespace.
	workloadOptOut := closing(comments[CommentClosedOptedOut], prstate.FateOptedOut, "annotation kedge.io/ignore=true")
	workloadOptOut.NamespaceOptedOut = false
	comments[CommentClosedOptedOut] = workloadOptOut
	return fixture{
		pr: pr, dashboard: dashboard,
		comments: comments,
		plan: PlanView{
			Plan: drift.Plan{Cluster: "prod-eu-1", Workloads: all, Skipped: dashboard.Skipped}, Mesh: &m, Now: now,
			ProxyVersions: map[string]map[string]int{"shop": pr.ProxyVersions, "payments": {"1.23.2": 2, "1.24.0": 3}},
		},
	}
}

// noDrift has nothing to show anywhere.
func noDrift() fixture {
	pr := prFor("shop", nil, map[string]int{"1.24.0": 12})
	m := mesh()
	return fixture{
		pr:        pr,
		dashboard: ClusterDashboard{Cluster: "prod-eu-1", Mesh: m, RepoWebURL: repo, BaseBranch: "main", LastCycle: now, LastCycleDuration: 850 * time.Millisecond},
		comments:  commentsFor(pr, nil),
		plan:      PlanView{Plan: drift.Plan{Cluster: "prod-eu-1", Workloads: []drift.Workload{}, Skipped: []drift.Skipped{}}, Mesh: &m, Now: now},
	}
}

// oneWorkload is the smallest real PR.
func oneWorkload() fixture {
	ws := []drift.Workload{
		workload("web", "Deployment", "frontend", []drift.Reason{drift.ReasonRevision}, 2, 2,
			[]string{"1-23-2"}, []string{img1232}, "1-24-0", img1240, found("clusters/prod/web/frontend.yaml", drift.EditInPlace), ago(4*24*time.Hour)),
	}
	pr := prFor("web", ws, map[string]int{"1.23.2": 2})
	pr.Applier = "Argo CD Application web"
	return fixture{
		pr: pr,
		dashboard: ClusterDashboard{
			Cluster: "prod-eu-1", Mesh: mesh(), RepoWebURL: repo, BaseBranch: "main",
			Namespaces: []NamespaceStatus{{Namespace: "web", State: prstate.PROpen, PRNumber: 3, PRURL: pullURL(3), Workloads: ws}},
			LastCycle:  now, LastCycleDuration: 1500 * time.Millisecond,
		},
		comments: commentsFor(pr, ws),
		plan: PlanView{
			Plan: drift.Plan{Cluster: "prod-eu-1", Workloads: ws}, Now: now,
			ProxyVersions: map[string]map[string]int{"web": pr.ProxyVersions},
		},
	}
}

// hundreds is a namespace with more workloads than a body can list, and a
// dashboard with more namespaces than it can list.
func hundreds() fixture {
	var ws []drift.Workload
	for i := 0; i < 300; i++ {
		ws = append(ws, workload("bulk", "Deployment", fmt.Sprintf("service-%03d", i), []drift.Reason{drift.ReasonRevision}, 2, 2,
			[]string{"1-23-2"}, []string{img1232}, "1-24-0", img1240, found(fmt.Sprintf("apps/bulk/service-%03d.yaml", i), drift.EditInPlace), ago(time.Duration(i+1)*time.Hour)))
	}
	pr := prFor("bulk", ws, map[string]int{"1.23.2": 600, "1.24.0": 40})
	var namespaces []NamespaceStatus
	var skipped []drift.Skipped
	for i := 0; i < 250; i++ {
		ns := fmt.Sprintf("team-%03d", i)
		namespaces = append(namespaces, NamespaceStatus{
			Namespace: ns, State: prstate.PROpen, PRNumber: 100 + i, PRURL: pullURL(100 + i),
			Workloads: []drift.Workload{
				workload(ns, "Deployment", "api", []drift.Reason{drift.ReasonRevision}, 1, 2,
					[]string{"1-23-2"}, []string{img1232}, "1-24-0", img1240, found("apps/"+ns+"/api.yaml", drift.EditInPlace), ago(time.Hour)),
				workload(ns, "Deployment", "cache", []drift.Reason{drift.ReasonRevision}, 1, 1,
					[]string{"1-23-2"}, []string{img1232}, "1-24-0", img1240, drift.Manifest{Status: drift.ManifestNotFound, Detail: "no kustomization builds it"}, ago(time.Hour)),
			},
		})
		skipped = append(skipped, drift.Skipped{Namespace: ns, Kind: "CronJob", Name: "cleanup", Reason: drift.SkipNotRestartable})
	}
	return fixture{
		pr: pr,
		dashboard: ClusterDashboard{
			Cluster: "prod-eu-1", Mesh: mesh(), RepoWebURL: repo, BaseBranch: "main",
			Namespaces: namespaces, Skipped: skipped, LastCycle: now, LastCycleDuration: 61 * time.Second,
		},
		comments: commentsFor(pr, ws),
		plan:     PlanView{Plan: drift.Plan{Cluster: "prod-eu-1", Workloads: ws}, Now: now},
	}
}

// Strings a hostile cluster (or repository) could hold.
const (
	hPipe    = "a|b"
	hScript  = "<script>alert(1)</script>"
	hTick    = "`x`"
	hMention = "@org/team"
	hLink    = "[x](http://evil)"
)

// hostile puts hostile strings everywhere the cluster controls text.
func hostile() fixture {
	w1 := workload(hPipe, "Deployment", hScript, []drift.Reason{drift.ReasonRevision, "<b>new</b>"}, 1, 2,
		[]string{hTick, hMention}, []string{"evil.io/proxy:" + hTick, "evil.io/proxy@sha256:" + hLink}, hLink, "evil.io/proxy:1.0|x",
		found("apps/a|b/[x](y) <z>.yaml", drift.EditInPlace), ago(time.Hour))
	w2 := workload(hPipe, "StatefulSet", hMention, []drift.Reason{drift.ReasonProxyImage}, 1, 1,
		[]string{"r\nnew line"}, []string{"www.evil.com/p:1"}, "#12", "img:v1 #12",
		found("apps/@org/team.yaml", drift.EditOverlayPatch), ago(time.Hour))
	w3 := workload(hPipe, "Deployment", hLink, []drift.Reason{drift.ReasonRevision}, 1, 1,
		[]string{"1"}, []string{"i:1"}, "2", "i:2",
		drift.Manifest{Status: drift.ManifestAmbiguous, Detail: hMention + " " + hScript, Candidates: []string{"x|y.yaml", hLink}}, nil)
	ws := []drift.Workload{w1, w2, w3}
	pr := prFor(hPipe, ws, map[string]int{hScript: 1, hTick: 2, "\"quoted\" # x": 3, "```": 4})
	pr.Cluster = hMention
	pr.Branch = "kedge/" + hPipe
	pr.Applier = hLink + " " + hMention
	pr.OptOutAnnotation = hTick
	pr.Wave = &WaveRef{Name: hScript, Number: 1, Of: 1}
	pr.RestartAnnotation = hScript
	pr.Migration = &Migration{From: hMention, To: hScript, NamespacePath: "ns/" + hLink + ".yaml"}
	pr.State = prstate.NewState(hMention, hPipe, fixable(ws))
	comments := commentsFor(pr, ws)
	edited := comments[CommentEdited]
	edited.Authors = []string{hMention, hScript, "@octocat"}
	comments[CommentEdited] = edited
	m := Mesh{
		Revisions: []Revision{{Name: hPipe, Image: hTick, Tags: []string{hMention, hLink}, Namespaces: []string{hScript, hPipe}}},
		Tags:      map[string]string{hMention: hPipe, hLink: hScript},
	}
	dashboard := ClusterDashboard{
		Cluster: hScript, Mesh: m, RepoWebURL: repo, BaseBranch: "main",
		Mismatch: Mismatch{Configured: hMention, Foreign: []ForeignRepository{{Repository: hLink, Namespaces: []string{hScript, hPipe}}}},
		Namespaces: []NamespaceStatus{{Namespace: hPipe, State: prstate.PROpen, PRNumber: 5, PRURL: pullURL(5), Workloads: ws, Detail: hMention},
			{Namespace: hTick, State: prstate.PRState(hScript), Workloads: []drift.Workload{w2}}},
		Skipped:    []drift.Skipped{{Namespace: hTick, Kind: hPipe, Name: hMention, Reason: drift.SkipReason(hLink), Detail: hScript}},
		Refused:    []RefusedFile{{Namespace: hPipe, Path: "apps/a|b/[x](y) <z>.yaml", Reason: hMention + " " + hTick, Workloads: []string{hScript}}},
		Stragglers: []Straggler{{Namespace: hPipe, PRNumber: 5, PRURL: "javascript:alert(1)", MergedAt: now.Add(-time.Hour), Workloads: ws[:1]}},
		Rollouts: []waves.Rollout{{Target: hTick, ID: hMention, Waves: []waves.Status{{Name: hPipe, State: waves.StateBlocked, Namespaces: []string{hScript},
			Blocking: []waves.Blocker{{Namespace: hPipe, Kind: hTick, Name: hMention, Why: hScript}}}}}},
		ResumeLabel: hLink,
		LastCycle:   now, LastCycleDuration: time.Second,
	}
	return fixture{
		pr: pr, dashboard: dashboard, comments: comments,
		plan: PlanView{
			Plan: drift.Plan{Cluster: hLink, Workloads: ws, Skipped: dashboard.Skipped}, Mesh: &m, Now: now,
			ProxyVersions: map[string]map[string]int{hPipe: pr.ProxyVersions},
		},
	}
}

// migration moves a namespace to a new revision along with its restarts.
func migration() fixture {
	ws := []drift.Workload{
		workload("web", "Deployment", "frontend", []drift.Reason{drift.ReasonRevision}, 3, 3,
			[]string{"1-23-2"}, []string{img1232}, "1-24-0", img1240, found("apps/web/frontend.yaml", drift.EditInPlace), ago(30*24*time.Hour)),
		workload("web", "Deployment", "api", []drift.Reason{drift.ReasonRevision}, 2, 2,
			[]string{"1-23-2"}, []string{img1232}, "1-24-0", img1240, found("apps/web/api.yaml", drift.EditInPlace), ago(30*24*time.Hour)),
	}
	pr := prFor("web", ws, map[string]int{"1.23.2": 5})
	pr.Migration = &Migration{From: "1-23-2", To: "1-24-0", NamespacePath: "namespaces/web.yaml", RemovedLabels: []string{"istio-injection"}}
	return fixture{
		pr: pr,
		dashboard: ClusterDashboard{
			Cluster: "prod-eu-1", Mesh: mesh(), RepoWebURL: repo, BaseBranch: "main",
			Namespaces: []NamespaceStatus{{Namespace: "web", State: prstate.PRNotYetOpened, Workloads: ws}},
			LastCycle:  now, LastCycleDuration: 2 * time.Second,
		},
		comments: commentsFor(pr, ws[:1]),
		plan:     PlanView{Plan: drift.Plan{Cluster: "prod-eu-1", Workloads: ws}, Now: now},
	}
}

// relabelOnly moves a namespace whose pods all run the new revision
// already: the PR changes the label and restarts nothing.
func relabelOnly() fixture {
	pr := prFor("web", nil, map[string]int{"1.24.0": 5})
	pr.Migration = &Migration{From: "1-23-2", To: "1-24-0", NamespacePath: "namespaces/web.yaml"}
	return fixture{
		pr: pr,
		dashboard: ClusterDashboard{
			Cluster: "prod-eu-1", Mesh: mesh(), RepoWebURL: repo, BaseBranch: "main",
			Namespaces: []NamespaceStatus{{Namespace: "web", State: prstate.PRNotYetOpened}},
			LastCycle:  now, LastCycleDuration: 2 * time.Second,
		},
		comments: commentsFor(pr, nil),
		// An offline plan of a snapshot that names no cluster.
		plan: PlanView{Plan: drift.Plan{}, Now: now, Snapshot: "snapshots/web"},
	}
}

// rolloutWaves is a PR of the second of three waves, with the dashboard
// showing one target soaking its first wave and another blocked.
func rolloutWaves() fixture {
	f := oneWorkload()
	f.pr.Wave = &WaveRef{Name: "non-critical", Number: 2, Of: 3}
	ws := []waves.Status{
		{Index: 0, Name: "canary", State: waves.StateDone, Namespaces: []string{"canary-a", "canary-b"}, Skipped: []string{"canary-b"}},
		{Index: 1, Name: "non-critical", State: waves.StateSoaking, Namespaces: []string{"orders"}, SoakEnds: now.Add(12 * time.Minute),
			Tolerated: []waves.Blocker{{Namespace: "orders", Kind: "Deployment", Name: "api", Why: "pod api-1: CrashLoopBackOff"}}},
		{Index: 2, Name: "rest", State: waves.StateWaiting, Namespaces: []string{"shop", "web"}},
	}
	blocked := []waves.Status{
		{Index: 0, Name: "canary", State: waves.StateSoaking, Namespaces: []string{"canary-a"}, RollingOut: 2},
		{Index: 1, Name: "non-critical", State: waves.StateBlocked, Namespaces: []string{"orders"},
			Blocking: []waves.Blocker{{Namespace: "orders", Kind: "StatefulSet", Name: "db", Why: "istio-proxy of pod db-0 restarted 4 times (max 1)"}}},
		{Index: 2, Name: waves.RestName, State: waves.StateWaiting, Namespaces: []string{"web"}},
	}
	f.dashboard.Rollouts = []waves.Rollout{
		{Target: "1-24-0@" + img1240, ID: "t-0123456789", Waves: ws, Active: 1},
		{Target: "@", ID: "t-9876543210", Waves: blocked, Active: 1},
	}
	f.dashboard.ResumeLabel = "kedge.io/resume-rollout"
	// The blocking namespace's PR rolled out: its pods run the new sidecar
	// and one of them keeps restarting.
	f.dashboard.Namespaces = append(f.dashboard.Namespaces, NamespaceStatus{Namespace: "orders", State: prstate.PRRolledOut, PRNumber: 7, PRURL: pullURL(7)})
	return f
}

// toAmbient moves a namespace out of sidecars: the PR sets the ambient
// labels, removes the injection label and restarts the workloads onto no
// sidecar.
func toAmbient() fixture {
	ws := []drift.Workload{
		workload("web", "Deployment", "frontend", []drift.Reason{drift.ReasonUnwantedSidecar}, 3, 3,
			[]string{"1-24-0"}, []string{img1240}, "", "", found("apps/web/frontend.yaml", drift.EditInPlace), ago(30*24*time.Hour)),
	}
	pr := prFor("web", ws, map[string]int{"1.24.0": 3})
	pr.Migration = &Migration{From: "1-24-0", To: "ambient", NamespacePath: "namespaces/web.yaml",
		RemovedLabels: []string{"istio.io/rev"}, SetLabels: []string{"istio.io/dataplane-mode=ambient", "istio.io/use-waypoint=waypoint"},
		Carried: []CarriedPolicy{
			{Object: "AuthorizationPolicy web/get-only", Path: "apps/web/policies.yaml", Selector: "app=frontend", Services: []string{"frontend"}, Waypoints: []string{"web/waypoint"}},
			{Object: "RequestAuthentication web/jwt", Path: "apps/web/policies.yaml", Selector: "app=frontend", Services: []string{"frontend", "frontend-admin"}, Waypoints: []string{"web/waypoint"}},
		}}
	return fixture{
		pr: pr,
		dashboard: ClusterDashboard{
			Cluster: "prod-eu-1", Mesh: mesh(), RepoWebURL: repo, BaseBranch: "main",
			Namespaces: []NamespaceStatus{{Namespace: "web", State: prstate.PROpen, PRNumber: 3, PRURL: pullURL(3), Workloads: ws}},
			Migrations: []drift.Migration{
				{Namespace: "web", From: "1-24-0", To: "ambient"},
				{Namespace: "payments", From: "1-24-0", To: "ambient", Blocked: drift.BlockAmbientNotReady, Ambient: []ambient.Finding{
					{Object: ambient.Ref{Kind: "PeerAuthentication", Namespace: "payments", Name: "legacy-port"}, Path: "apps/payments/mtls.yaml", Field: "spec.portLevelMtls.9090.mode",
						Reason: "DISABLE turns mTLS off, which ambient mode does not support", Step: ambient.StepNotSupported},
					{Object: ambient.Ref{Kind: "EnvoyFilter", Namespace: "payments", Name: "lua"}, Field: "spec.configPatches[0]",
						Reason: "it patches the sidecars, which ambient mode removes", Step: ambient.StepAttach},
				}},
				{Namespace: "legacy", From: "1-23-2", To: "1-24-0", Blocked: drift.BlockTargetNotReady, Detail: "revision 1-24-0 has no injector ConfigMap istio-sidecar-injector-1-24-0"},
			},
			LastCycle: now, LastCycleDuration: 2 * time.Second,
		},
		comments: commentsFor(pr, ws),
		plan:     PlanView{Plan: drift.Plan{Cluster: "prod-eu-1", Workloads: ws}, Now: now},
	}
}

// backToSidecars moves a namespace out of ambient mode: the PR takes the
// ambient labels off, sets istio.io/rev and restarts the workloads, whose
// new pods are injected again.
func backToSidecars() fixture {
	ws := []drift.Workload{
		workload("web", "Deployment", "frontend", []drift.Reason{drift.ReasonMissingSidecar}, 3, 3,
			nil, nil, "1-24-0", img1240, found("apps/web/frontend.yaml", drift.EditInPlace), ago(3*24*time.Hour)),
	}
	pr := prFor("web", ws, map[string]int{"": 3})
	pr.Migration = &Migration{From: "ambient", To: "1-24-0", NamespacePath: "namespaces/web.yaml",
		RemovedLabels: []string{"istio.io/dataplane-mode", "istio.io/use-waypoint"}}
	return fixture{
		pr: pr,
		dashboard: ClusterDashboard{
			Cluster: "prod-eu-1", Mesh: mesh(), RepoWebURL: repo, BaseBranch: "main",
			Namespaces: []NamespaceStatus{{Namespace: "web", State: prstate.PROpen, PRNumber: 4, PRURL: pullURL(4), Workloads: ws}},
			LastCycle:  now, LastCycleDuration: 2 * time.Second,
		},
		comments: commentsFor(pr, ws),
		plan:     PlanView{Plan: drift.Plan{Cluster: "prod-eu-1", Workloads: ws}, Now: now},
	}
}

var cases = []struct {
	name    string
	fixture func() fixture
}{
	{"typical", typical},
	{"no-drift", noDrift},
	{"one-workload", oneWorkload},
	{"hundreds", hundreds},
	{"hostile", hostile},
	{"migration", migration},
	{"relabel-only", relabelOnly},
	{"waves", rolloutWaves},
	{"to-ambient", toAmbient},
	{"delivered", delivered},
	{"back-to-sidecars", backToSidecars},
	{"helm-fallback", helmFallback},
}

// helmFallback is a release whose team asked for chart values
// (helm.prefer: values), restarted through its post-renderer instead
// because the cluster lacks the chart's HelmRepository: the change says
// why.
func helmFallback() fixture {
	m := found("apps/podinfo/release.yaml", drift.EditHelmPostRenderer)
	m.Detail = "HelmRelease podinfo/podinfo"
	m.Fallback = "not chart values: the cluster has no HelmRepository flux-system/charts"
	ws := []drift.Workload{
		workload("podinfo", "Deployment", "podinfo", []drift.Reason{drift.ReasonRevision}, 2, 2,
			[]string{"1-23-2"}, []string{img1232}, "1-24-0", img1240, m, ago(2*24*time.Hour)),
	}
	pr := prFor("podinfo", ws, map[string]int{"1.23.2": 2})
	pr.Applier = "Flux HelmRelease podinfo/podinfo"
	return fixture{
		pr: pr,
		dashboard: ClusterDashboard{
			Cluster: "prod-eu-1", Mesh: mesh(), RepoWebURL: repo, BaseBranch: "main",
			Namespaces: []NamespaceStatus{{Namespace: "podinfo", State: prstate.PROpen, PRNumber: 4, PRURL: pullURL(4), Workloads: ws}},
			LastCycle:  now, LastCycleDuration: 1500 * time.Millisecond,
		},
		comments: commentsFor(pr, ws),
		plan: PlanView{
			Plan: drift.Plan{Cluster: "prod-eu-1", Workloads: ws}, Now: now,
			ProxyVersions: map[string]map[string]int{"podinfo": pr.ProxyVersions},
		},
	}
}

// delivered is a namespace whose pods other controllers run: a Flagger
// Canary's primary and an Argo Rollout taking its template from a
// Deployment, restarted through the workloads Git holds, beside an
// operator's StatefulSet and an OnDelete one kedge skips. The pods run
// digested and mirrored images, shown as they run.
func delivered() fixture {
	const mirrored = "mirror.acme.io/istio/proxyv2:1.23.2@sha256:4f2a9c0b7d1e5f3a8b6c9d0e1f2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c"
	podinfo := workload("shop", "Deployment", "podinfo", []drift.Reason{drift.ReasonProxyImage}, 3, 3,
		[]string{"1-24-0"}, []string{mirrored}, "1-24-0", img1240, found("apps/shop/podinfo.yaml", drift.EditInPlace), ago(6*24*time.Hour))
	podinfo.Via = &drift.Via{Kind: drift.KindCanary, Name: "podinfo", APIVersion: "flagger.app/v1beta1", Primary: "podinfo-primary"}
	api := workload("shop", "Deployment", "api-template", []drift.Reason{drift.ReasonRevision}, 2, 2,
		[]string{"1-23-2"}, []string{img1232}, "1-24-0", img1240, found("apps/shop/api.yaml", drift.EditInPlace), ago(2*24*time.Hour))
	api.Via = &drift.Via{Kind: drift.KindRollout, Name: "api", APIVersion: "argoproj.io/v1alpha1"}
	cart := workload("shop", "Deployment", "cart", []drift.Reason{drift.ReasonRevision}, 1, 2,
		[]string{"1-23-2"}, []string{img1232}, "1-24-0", img1240, found("apps/shop/cart.yaml", drift.EditInPlace), ago(3*time.Hour))
	// A mirror nobody declared in images.mirrors: the same version, another
	// image.
	search := workload("shop", "Deployment", "search", []drift.Reason{drift.ReasonProxyImage}, 2, 2,
		[]string{"1-24-0"}, []string{"mirror.acme.io/istio/proxyv2:1.24.0"}, "1-24-0", img1240, found("apps/shop/search.yaml", drift.EditInPlace), ago(5*time.Hour))
	shop := []drift.Workload{podinfo, api, cart, search}
	pr := prFor("shop", shop, map[string]int{"1.23.2": 3, "1.24.0": 4})
	skipped := []drift.Skipped{
		{Namespace: "shop", Kind: "StatefulSet", Name: "orders-db", Reason: drift.SkipOnDelete,
			Detail: "updateStrategy OnDelete: a new pod template reaches a pod only when the pod is deleted; delete the pods of StatefulSet orders-db to restart them"},
		{Namespace: "shop", Kind: "Dragonfly", Name: "cache", Reason: drift.SkipNotRestartable,
			Detail: "StatefulSet cache owned by Dragonfly cache (dragonflydb.io/v1alpha1, owner reference without controller: true): the operator behind Dragonfly cache writes the pod template, which kedge cannot restart through Git"},
	}
	dashboard := ClusterDashboard{
		Cluster: "prod-eu-1", Mesh: mesh(), RepoWebURL: repo, BaseBranch: "main",
		Namespaces: []NamespaceStatus{{Namespace: "shop", State: prstate.PROpen, PRNumber: 21, PRURL: pullURL(21), Workloads: shop}},
		Skipped:    skipped,
		Stragglers: []Straggler{{Namespace: "shop", PRNumber: 20, PRURL: pullURL(20), MergedAt: now.Add(-2 * time.Hour), Workloads: []drift.Workload{podinfo}}},
		LastCycle:  now, LastCycleDuration: 2100 * time.Millisecond,
	}
	m := mesh()
	return fixture{
		pr: pr, dashboard: dashboard,
		comments: commentsFor(pr, []drift.Workload{podinfo}),
		plan: PlanView{
			Plan: drift.Plan{Cluster: "prod-eu-1", Workloads: shop, Skipped: skipped}, Mesh: &m, Now: now,
			ProxyVersions: map[string]map[string]int{"shop": pr.ProxyVersions},
		},
	}
}

// policyOf allows links to every file the fixture's workloads, migration
// and refused files name, on the PR and base branches, and to its PRs and
// dashboard.
func policyOf(f fixture) linkPolicy {
	p := linkPolicy{repo: repo, branches: []string{f.pr.Branch, "main"}, paths: map[string]bool{}, exact: map[string]bool{dashURL: true}}
	addWorkloads := func(ws []drift.Workload) {
		for _, w := range ws {
			for _, file := range manifestFiles(w) {
				p.paths[file] = true
			}
		}
	}
	addWorkloads(f.pr.Workloads)
	if f.pr.Migration != nil {
		p.paths[f.pr.Migration.NamespacePath] = true
		for _, c := range f.pr.Migration.Carried {
			p.paths[c.Path] = true
		}
		// The steps of Istio's migration guide a move names: fixed text of
		// the template, not data.
		for _, step := range []string{"", "migrate-policies/#migrate-authorizationpolicy-for-l7-rules", "enable-ambient-mode/#rollback"} {
			p.exact["https://istio.io/latest/docs/ambient/migrate/"+step] = true
		}
	}
	for _, ns := range f.dashboard.Namespaces {
		addWorkloads(ns.Workloads)
		if ns.PRURL != "" {
			p.exact[ns.PRURL] = true
		}
	}
	for _, s := range f.dashboard.Stragglers {
		p.exact[s.PRURL] = true
	}
	// A held migration links the guide's steps: kedge's own addresses
	// (ambient.Step), not the cluster's.
	for _, m := range f.dashboard.Migrations {
		for _, a := range m.Ambient {
			p.exact[a.Step.URL] = true
		}
	}
	for _, c := range f.comments {
		if c.SuccessorURL != "" {
			p.exact[c.SuccessorURL] = true
		}
	}
	for _, r := range f.dashboard.Refused {
		p.paths[r.Path] = true
	}
	return p
}
