package reconcile

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"time"

	"github.com/kedge-io/kedge/internal/dashboard"
	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/forge"
	"github.com/kedge-io/kedge/internal/plan"
	"github.com/kedge-io/kedge/internal/prstate"
)

// DashboardLabel marks kedge's dashboard issues; the hidden marker in the
// body tells the clusters apart.
const DashboardLabel = "kedge-dashboard"

func dashboardMarker(cluster string) string { return "<!-- kedge:dashboard cluster=" + cluster + " " }

var contentHashRE = regexp.MustCompile(`<!-- kedge:dashboard cluster=\S+ content=([0-9a-f]+) -->`)

// findDashboard finds the cluster's dashboard issue, opening it on the very
// first cycle: PR bodies link to it, and a link that appears only in the
// second cycle would rewrite every PR once more.
func (r *Reconciler) findDashboard(ctx context.Context) (*forge.Issue, error) {
	marker := dashboardMarker(r.settings.Cluster)
	issue, err := r.deps.Forge.FindIssue(ctx, DashboardLabel, marker)
	if err != nil {
		return nil, fmt.Errorf("find dashboard issue: %w", err)
	}
	if issue != nil || r.settings.DryRun {
		return issue, nil
	}
	created, err := r.deps.Forge.CreateIssue(ctx, forge.NewIssue{
		Title:  r.dashboardTitle(),
		Body:   "kedge is computing the first drift report of " + r.settings.Cluster + ".\n\n" + marker + "content=none -->\n",
		Labels: []string{DashboardLabel},
	})
	if err != nil {
		return nil, fmt.Errorf("open dashboard issue: %w", err)
	}
	return &created, nil
}

func (r *Reconciler) dashboardTitle() string {
	return "kedge: Istio data-plane drift in " + r.settings.Cluster
}

// updateDashboard rewrites the cluster's dashboard issue when what it shows
// changed. The cycle's time and duration change every cycle and are left
// out of the comparison, so a cycle that changed nothing writes nothing.
// rs are the cycle's namespaces and outcomes theirs, in the same order.
func (r *Reconciler) updateDashboard(ctx context.Context, issue *forge.Issue, res *plan.Result, rs []rendered, outcomes []Outcome, report *Report) error {
	data := dashboard.ClusterDashboard{
		Cluster:    r.settings.Cluster,
		Mesh:       res.Mesh,
		RepoWebURL: r.settings.RepoWebURL,
		Skipped:    res.Plan.Skipped,
		Refused:    report.Refused,
		Stragglers: report.Stragglers,
		Mismatch:   report.Mismatch,
		Rollouts:   report.Rollouts,
		Migrations: res.Plan.Migrations,
	}
	if len(report.Rollouts) > 0 {
		data.ResumeLabel = r.settings.ResumeLabel
	}
	foreign := foreignNamespaces(report.Mismatch)
	if len(rs) > 0 && rs[0].held == nil {
		data.BaseBranch = rs[0].checkout.base()
	}
	byNamespace := map[string][]drift.Workload{}
	for _, w := range res.Plan.Workloads {
		byNamespace[w.Namespace] = append(byNamespace[w.Namespace], w)
	}
	rows := workloadsByRow(rs, byNamespace)
	for i, t := range rs {
		o := outcomes[i]
		if len(rows[i]) == 0 && o.State == "" {
			continue
		}
		state, detail := namespaceState(t, o), o.Detail
		if state == prstate.PRRefused && foreign[t.name] != "" {
			state, detail = prstate.PROtherRepository, "applied from "+foreign[t.name]
		}
		data.Namespaces = append(data.Namespaces, dashboard.NamespaceStatus{
			Namespace: t.name, State: state, PRNumber: o.PR, PRURL: o.PRURL, Workloads: rows[i], Detail: detail,
		})
	}
	for _, t := range rs {
		delete(byNamespace, t.name)
	}
	// Drifted namespaces kedge has nothing to commit for (every manifest
	// missing, Helm-rendered or refused) still belong on the dashboard.
	for ns, ws := range byNamespace {
		state, detail := prstate.PRRefused, ""
		if repo := foreign[ns]; repo != "" {
			state, detail = prstate.PROtherRepository, "applied from "+repo
		}
		data.Namespaces = append(data.Namespaces, dashboard.NamespaceStatus{Namespace: ns, State: state, Workloads: ws, Detail: detail})
	}
	sort.SliceStable(data.Namespaces, func(i, j int) bool { return data.Namespaces[i].Namespace < data.Namespaces[j].Namespace })

	stable, err := r.stableDashboard(data)
	if err != nil {
		return err
	}
	sum := sha256.Sum256([]byte(stable))
	content := hex.EncodeToString(sum[:8])
	if issue != nil && issue.State == "open" {
		if m := contentHashRE.FindStringSubmatch(issue.Body); m != nil && m[1] == content {
			return nil
		}
	}
	data.LastCycle = report.Started.UTC().Truncate(time.Second)
	data.LastCycleDuration = r.deps.Now().Sub(report.Started)
	body, err := r.deps.Renderer.DashboardIssue(data)
	if err != nil {
		return err
	}
	body += "\n" + dashboardMarker(r.settings.Cluster) + "content=" + content + " -->\n"
	if r.settings.DryRun {
		return nil
	}
	title := r.dashboardTitle()
	if issue == nil {
		_, err = r.deps.Forge.CreateIssue(ctx, forge.NewIssue{Title: title, Body: body, Labels: []string{DashboardLabel}})
		return err
	}
	var state *string
	if issue.State != "open" {
		open := "open"
		state = &open
	}
	return r.deps.Forge.UpdateIssue(ctx, issue.Number, &title, &body, state)
}

// workloadsByRow shares each namespace's drifted workloads among its rows,
// one per target that has the namespace, in rs's order. A namespace with
// one row shows them all there. One applied from several branches of a
// repository shows each workload on the row of the branch it is applied
// from, and those applied from none of them on its first row with work (or
// its first row), so that no row claims another branch's workload.
func workloadsByRow(rs []rendered, byNamespace map[string][]drift.Workload) [][]drift.Workload {
	out := make([][]drift.Workload, len(rs))
	rowsOf := map[string][]int{}
	for i, t := range rs {
		rowsOf[t.name] = append(rowsOf[t.name], i)
	}
	for ns, rows := range rowsOf {
		if len(rows) == 1 {
			out[rows[0]] = byNamespace[ns]
			continue
		}
		rest := rows[0]
		byLabel := map[string]int{}
		for _, i := range slices.Backward(rows) {
			if rs[i].work != nil {
				rest = i
			}
			byLabel[plan.RepositoryFor(rs[i].checkout.target, "", nil).Label()] = i
		}
		for _, w := range byNamespace[ns] {
			i, ok := byLabel[w.Manifest.Repository]
			if !ok {
				i = rest
			}
			out[i] = append(out[i], w)
		}
	}
	return out
}

func namespaceState(t rendered, o Outcome) prstate.PRState {
	if o.State != "" {
		return o.State
	}
	if t.work == nil {
		return prstate.PRRefused
	}
	return prstate.PRNotYetOpened
}

func refusedFiles(res *plan.Result) []dashboard.RefusedFile {
	out := make([]dashboard.RefusedFile, 0, len(res.Edits.Refused))
	for _, ref := range res.Edits.Refused {
		f := dashboard.RefusedFile{Namespace: ref.Namespace, Path: ref.Path, Reason: ref.Reason}
		for _, w := range ref.Workloads {
			f.Workloads = append(f.Workloads, w.Kind+"/"+w.Name)
		}
		out = append(out, f)
	}
	return out
}
