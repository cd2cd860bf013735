package reconcile

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/kedge-io/kedge/internal/ambient"
	"github.com/kedge-io/kedge/internal/dashboard"
	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/forge"
	"github.com/kedge-io/kedge/internal/objects"
	"github.com/kedge-io/kedge/internal/plan"
	"github.com/kedge-io/kedge/internal/prstate"
)

// commentMarker ends every comment kedge writes, so a comment is written
// once however many cycles see the same situation.
func commentMarker(kind string) string { return "<!-- kedge:comment " + kind + " -->" }

// namespacePR is the data a namespace's PR title, body and commit message
// are rendered from. Nothing in it depends on the clock, so a cycle that
// sees the same drift renders the same bytes and updates nothing.
// workloads are the plan's workloads of the namespace.
func (r *Reconciler) namespacePR(set *objects.Set, res *plan.Result, workloads []drift.Workload, st *nsState, issue *forge.Issue) dashboard.NamespacePR {
	pr := dashboard.NamespacePR{
		Cluster:           r.settings.Cluster,
		Namespace:         st.name,
		Branch:            st.branch,
		RepoWebURL:        st.repo.webURL,
		Workloads:         workloads,
		ProxyVersions:     res.Namespaces[st.name].ProxyVersions,
		Applier:           res.Namespaces[st.name].Applier,
		OptOutAnnotation:  r.settings.Plan.Drift.OptOutAnnotation,
		RestartAnnotation: r.settings.Plan.Annotations.Restart,
		Wave:              r.waveRef(set, st.name),
	}
	if issue != nil {
		pr.DashboardURL = issue.HTMLURL
	}
	if st.facts.work != nil {
		pr.State = st.facts.work.state
	}
	return pr
}

// applyPR carries out a namespace's decision on GitHub.
func (r *Reconciler) applyPR(ctx context.Context, st *nsState, plan drift.Plan, report *Report) error {
	d := st.decision
	if d.pr != nil {
		st.outcome.PR, st.outcome.PRURL = d.pr.Number, d.pr.HTMLURL
	}
	st.outcome.Action = d.action
	if r.settings.DryRun {
		if d.action == ActOpen || d.action == ActUpdate {
			report.Previews = append(report.Previews, Preview{Namespace: st.name, Repo: st.repo.name, Title: st.title, Body: st.body, Files: st.facts.work.files})
		}
		st.outcome.State = stateFor(d.action, st.outcome.State)
		return nil
	}
	for _, dup := range d.duplicates {
		data := r.commentData(st, plan)
		data.Successor, data.SuccessorURL = d.pr.Number, d.pr.HTMLURL
		body, err := r.deps.Renderer.Comment(dashboard.CommentDuplicate, data)
		if err != nil {
			return err
		}
		if err := r.closeWith(ctx, st.repo.forge, dup, dashboard.CommentDuplicate, body); err != nil {
			return err
		}
	}
	switch d.action {
	case ActOpen:
		if err := r.open(ctx, st); err != nil {
			return err
		}
		return r.sayTakenOver(ctx, st, plan)
	case ActUpdate:
		st.outcome.State = prstate.PROpen
		return r.update(ctx, st)
	case ActEdited:
		st.outcome.State = prstate.PREdited
		if d.pr == nil {
			st.outcome.Detail = "branch " + st.branch + " has commits by someone else and no open PR"
			return nil
		}
		return r.commentOnce(ctx, st.repo.forge, d.pr.Number, dashboard.CommentEdited, r.commentData(st, plan))
	case ActClose:
		c := r.closingOf(st, report)
		data := r.commentData(st, plan)
		data.Closed, data.NamespaceOptedOut = c.closed, c.namespaceOptedOut
		body, err := r.deps.Renderer.Comment(c.kind, data)
		if err != nil {
			return err
		}
		st.outcome.State = ""
		r.deps.Log.Info("closing pull request", "namespace", st.name, "pr", d.pr.Number, "why", c.kind)
		return r.closeWith(ctx, st.repo.forge, *d.pr, c.kind, body)
	case ActClosedIgnored:
		st.outcome.State = prstate.PRClosedIgnored
	case ActMerged:
		return r.followRollout(ctx, st, plan, report)
	}
	if st.outcome.State == "" && st.facts.work != nil {
		st.outcome.State = prstate.PRNotYetOpened
	}
	return nil
}

// branchPushed says whether this cycle's push carried the namespace's
// branch.
func branchPushed(st *nsState) bool { return st.change != nil && st.change.Changed }

func stateFor(a Action, current prstate.PRState) prstate.PRState {
	switch a {
	case ActOpen:
		return prstate.PRNotYetOpened
	case ActUpdate:
		return prstate.PROpen
	case ActEdited:
		return prstate.PREdited
	case ActClosedIgnored:
		return prstate.PRClosedIgnored
	case ActMerged:
		return prstate.PRMergedRollingOut
	}
	return current
}

func (r *Reconciler) open(ctx context.Context, st *nsState) error {
	pr, err := st.repo.forge.CreatePR(ctx, forge.NewPR{
		Title: st.title, Head: st.branch, Base: st.baseBranch, Body: st.body,
		Draft: r.settings.Draft, MaintainerCanModify: false,
	})
	if err != nil {
		return err
	}
	st.outcome.PR, st.outcome.PRURL, st.outcome.State = pr.Number, pr.HTMLURL, prstate.PROpen
	// CreatePR adopts a PR that already existed (a cycle that died after
	// opening it); bring its text in line like any open PR.
	if pr.Title != st.title || pr.Body != st.body {
		if err := st.repo.forge.UpdatePR(ctx, pr.Number, &st.title, &st.body, nil); err != nil {
			return err
		}
	}
	return r.finishOpening(ctx, st, pr)
}

// finishOpening asks for reviews, then labels the PR. The order matters:
// a cycle may die between opening a PR and finishing it, and the next one
// only sees an open PR. Labels added last mark an opening that finished,
// so update finishes a PR that lacks them instead of leaving it without
// reviewers. A reviewer GitHub refuses (say, not a collaborator) does not
// keep the labels off, or every cycle would ask again.
func (r *Reconciler) finishOpening(ctx context.Context, st *nsState, pr forge.PR) error {
	var refused error
	users, teams := r.reviewersFor(st.set, st.name)
	if len(users)+len(teams) > 0 {
		err := st.repo.forge.RequestReviewers(ctx, pr.Number, users, teams)
		if err != nil && (isRetryLater(err) || ctx.Err() != nil) {
			return err
		}
		refused = err
	}
	return errors.Join(refused, r.ensureLabels(ctx, st.repo.forge, pr))
}

func (r *Reconciler) update(ctx context.Context, st *nsState) error {
	pr := st.decision.pr
	var title, body *string
	if pr.Title != st.title {
		title = &st.title
	}
	if pr.Body != st.body {
		body = &st.body
	}
	if title != nil || body != nil {
		if err := st.repo.forge.UpdatePR(ctx, pr.Number, title, body, nil); err != nil {
			return err
		}
	}
	missing := len(r.missingLabels(*pr)) > 0
	if title == nil && body == nil && !missing && !branchPushed(st) {
		st.outcome.Action = ActUpToDate
	}
	if missing {
		// Opened by a cycle that died before finishing it (or a person
		// removed a label: asking the same reviewers again is harmless).
		return r.finishOpening(ctx, st, *pr)
	}
	return nil
}

func (r *Reconciler) ensureLabels(ctx context.Context, gh *forge.Client, pr forge.PR) error {
	missing := r.missingLabels(pr)
	if len(missing) == 0 {
		return nil
	}
	return gh.AddLabels(ctx, pr.Number, missing...)
}

func (r *Reconciler) missingLabels(pr forge.PR) []string {
	have := map[string]bool{}
	for _, l := range pr.Labels {
		have[l] = true
	}
	var missing []string
	for _, l := range r.settings.Labels {
		if !have[l] {
			missing = append(missing, l)
		}
	}
	return missing
}

// closingOf works out why the namespace's PR closes, from the targets its
// body recorded and what the cycle read.
func (r *Reconciler) closingOf(st *nsState, report *Report) closing {
	f := closingFacts{namespace: st.name, set: st.set, plan: report.Plan, opts: r.settings.Plan.Drift}
	if s, ok := prstate.ParseState(st.decision.pr.Body); ok {
		f.targets = s.Targets
	}
	if report.Result != nil {
		f.refused = report.Result.Edits.Refused
	}
	return explainClosing(f)
}

// sayTakenOver tells a merged PR whose rollout kedge was following that the
// PR just opened takes over, unless it already rolled out.
func (r *Reconciler) sayTakenOver(ctx context.Context, st *nsState, plan drift.Plan) error {
	old := st.decision.superseded
	if old == nil || st.outcome.PR == 0 {
		return nil
	}
	data := r.commentData(st, plan)
	data.Successor, data.SuccessorURL = st.outcome.PR, st.outcome.PRURL
	body, err := r.deps.Renderer.Comment(dashboard.CommentSuperseded, data)
	if err != nil {
		return err
	}
	return r.commentBodyOnce(ctx, st.repo.forge, old.Number, dashboard.CommentSuperseded, body)
}

// closeWith comments (once) and closes a PR. The comment goes first: a
// cycle dying in between leaves an open PR the next cycle closes, rather
// than a closed PR nobody was told about.
func (r *Reconciler) closeWith(ctx context.Context, gh *forge.Client, pr forge.PR, kind, body string) error {
	if err := r.commentBodyOnce(ctx, gh, pr.Number, kind, body); err != nil {
		return err
	}
	closed := "closed"
	return gh.UpdatePR(ctx, pr.Number, nil, nil, &closed)
}

func (r *Reconciler) commentOnce(ctx context.Context, gh *forge.Client, number int, kind string, data dashboard.CommentData) error {
	body, err := r.deps.Renderer.Comment(kind, data)
	if err != nil {
		return err
	}
	return r.commentBodyOnce(ctx, gh, number, kind, body)
}

func (r *Reconciler) commentBodyOnce(ctx context.Context, gh *forge.Client, number int, kind, body string) error {
	comments, err := gh.ListComments(ctx, number)
	if err != nil {
		return err
	}
	for _, c := range comments {
		for _, said := range saidAlready(kind) {
			if strings.Contains(c.Body, commentMarker(said)) {
				return nil
			}
		}
	}
	return gh.Comment(ctx, number, strings.TrimRight(body, "\n")+"\n\n"+commentMarker(kind)+"\n")
}

// closingKinds are the comments kedge closes a PR with; one of them is
// enough, even if the reason changed between a cycle that commented and
// the one that closes.
var closingKinds = []string{
	dashboard.CommentClosed, dashboard.CommentClosedOptedOut, dashboard.CommentClosedNotSelected,
	dashboard.CommentClosedDeleted, dashboard.CommentClosedNotEditable, dashboard.CommentClosedMixed,
}

// saidAlready lists the comment kinds whose presence makes a comment of
// kind redundant.
func saidAlready(kind string) []string {
	switch {
	case slices.Contains(closingKinds, kind):
		return closingKinds
	case kind == dashboard.CommentSuperseded:
		// A PR that rolled out is done; a newer target is news elsewhere.
		return []string{kind, dashboard.CommentRolledOut}
	}
	return []string{kind}
}

func (r *Reconciler) commentData(st *nsState, plan drift.Plan) dashboard.CommentData {
	data := dashboard.CommentData{
		Cluster: r.settings.Cluster, Namespace: st.name, Branch: st.branch,
		DashboardURL: st.pr.DashboardURL, Grace: r.settings.Grace,
		OptOutAnnotation: optOutAnnotation(r.settings.Plan.Drift),
	}
	if st.decision.pr != nil {
		if s, ok := prstate.ParseState(st.decision.pr.Body); ok {
			data.Targets = s.Targets
		}
		if st.decision.pr.MergedAt != nil {
			data.MergedAt = *st.decision.pr.MergedAt
		}
	}
	if st.outcome.Detail != "" && st.decision.action == ActEdited {
		data.Authors = strings.Split(st.outcome.Detail, ", ")
	}
	return data
}

// followRollout watches a merged PR's workloads: once all run what the PR
// targeted it says so; if some still drift after the grace time it names
// them, once.
func (r *Reconciler) followRollout(ctx context.Context, st *nsState, plan drift.Plan, report *Report) error {
	pr := st.decision.pr
	state, ok := prstate.ParseState(pr.Body)
	if !ok || pr.MergedAt == nil {
		return nil
	}
	targeted := map[string]bool{}
	toAmbient := false
	for _, t := range state.Targets {
		targeted[t.Kind+"/"+t.Name] = true
		toAmbient = toAmbient || (t.Kind == "Namespace" && t.Revision == drift.Ambient)
	}
	var still []drift.Workload
	for _, w := range plan.Workloads {
		if w.Namespace == st.name && targeted[w.Kind+"/"+w.Name] {
			still = append(still, w)
		}
	}
	if toAmbient {
		still = append(still, uncaptured(st.set, st.name)...)
	}
	data := r.commentData(st, plan)
	data.Now = r.deps.Now()
	if len(still) == 0 {
		st.outcome.State = prstate.PRRolledOut
		return r.commentOnce(ctx, st.repo.forge, pr.Number, dashboard.CommentRolledOut, data)
	}
	st.outcome.State = prstate.PRMergedRollingOut
	if r.deps.Now().Sub(*pr.MergedAt) < r.settings.Grace {
		return nil
	}
	report.Stragglers = append(report.Stragglers, dashboard.Straggler{
		Namespace: st.name, PRNumber: pr.Number, PRURL: pr.HTMLURL, MergedAt: *pr.MergedAt, Workloads: still,
	})
	data.Stragglers = still
	return r.commentOnce(ctx, st.repo.forge, pr.Number, dashboard.CommentStalled, data)
}

// uncaptured are the namespace's running pods that ztunnel does not capture
// yet after a move to ambient mode: a sidecar is left, or istio-cni has not
// annotated the pod ambient.istio.io/redirection=enabled. Pods ambient mode
// leaves out (host network, istio.io/dataplane-mode=none) are not waited for.
func uncaptured(set *objects.Set, namespace string) []drift.Workload {
	var out []drift.Workload
	for _, p := range set.Pods {
		if p.Namespace != namespace || !p.Live() {
			continue
		}
		if !ambient.Excluded(p) && !ambient.Captured(p) {
			out = append(out, drift.Workload{Namespace: namespace, Kind: "Pod", Name: p.Name})
		}
	}
	return out
}
