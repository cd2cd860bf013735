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
	"github.com/kedge-io/kedge/internal/reconcile/decide"
)

// commentMarker ends every comment kedge writes, so a comment is written
// once however many cycles see the same situation.
func commentMarker(kind string) string { return "<!-- kedge:comment " + kind + " -->" }

// applied is what carrying out one namespace's decision did: its outcome,
// and, when so, the merged PR whose workloads still drift after the grace
// time, and the PR a dry run would open or update.
type applied struct {
	outcome   Outcome
	straggler *dashboard.Straggler
	preview   *Preview
}

// read is what the cycle read that carrying out decisions needs: the
// cluster and the plan.
type read struct {
	set *objects.Set
	res *plan.Result
}

// apply carries out a namespace's decision on GitHub, unless its push says
// otherwise, and returns what it did. An error leaves its detail (and a
// rate limit its state) on the outcome.
func (r *Reconciler) apply(ctx context.Context, t rendered, d decide.Decision, pushed pushResult, in read) (applied, error) {
	a, err := r.carryOut(ctx, t, d, pushed, in)
	o := a.outcome
	o.Namespace, o.Repo = t.name, t.checkout.name
	if err != nil {
		o.Detail = errorDetail(err)
		if isRetryLater(err) {
			o.State = prstate.PRRateLimited
		}
	}
	return applied{outcome: o, straggler: a.straggler, preview: a.preview}, err
}

func (r *Reconciler) carryOut(ctx context.Context, t rendered, d decide.Decision, pushed pushResult, in read) (applied, error) {
	o := Outcome{Action: d.Action(), State: d.State(), Detail: d.Detail()}
	if pr := d.PR(); pr != nil {
		o.PR, o.PRURL = pr.Number, pr.HTMLURL
	}
	blocked, isBlocked := pushed.blocks(d, t.branch, t.checkout.name)
	if isBlocked {
		o.Action, o.State, o.Detail = blocked.Action, blocked.State, blocked.Detail
	}
	if r.settings.DryRun {
		var preview *Preview
		if d.Action() == ActOpen || d.Action() == ActUpdate {
			preview = &Preview{Namespace: t.name, Repo: t.checkout.name, Title: t.title, Body: t.body, Files: t.work.files}
		}
		o.State = stateFor(d.Action(), o.State)
		return applied{outcome: o, preview: preview}, nil
	}
	for _, dup := range d.Duplicates() {
		data := r.commentData(t, d, in.res.Plan)
		data.Successor, data.SuccessorURL = d.PR().Number, d.PR().HTMLURL
		body, err := r.deps.Renderer.Comment(dashboard.CommentDuplicate, data)
		if err != nil {
			return applied{outcome: o}, err
		}
		if err := r.closeWith(ctx, t.checkout.forge, dup, dashboard.CommentDuplicate, body); err != nil {
			return applied{outcome: o}, err
		}
	}
	if isBlocked {
		return applied{outcome: o}, nil
	}
	switch d.Action() {
	case ActOpen:
		opened, err := r.open(ctx, t, in.set, o)
		if err != nil {
			return applied{outcome: opened}, err
		}
		return applied{outcome: opened}, r.sayTakenOver(ctx, t, d, opened, in.res.Plan)
	case ActUpdate:
		o.State = prstate.PROpen
		upToDate, err := r.update(ctx, t, d, in.set)
		if upToDate {
			o.Action = ActUpToDate
		}
		return applied{outcome: o}, err
	case ActEdited:
		o.State = prstate.PREdited
		if d.PR() == nil {
			o.Detail = "branch " + t.branch + " has commits by someone else and no open PR"
			return applied{outcome: o}, nil
		}
		return applied{outcome: o}, r.commentOnce(ctx, t.checkout.forge, d.PR().Number, dashboard.CommentEdited, r.commentData(t, d, in.res.Plan))
	case ActClose:
		c := r.closingOf(t, d, in)
		data := r.commentData(t, d, in.res.Plan)
		data.Closed, data.NamespaceOptedOut = c.closed, c.namespaceOptedOut
		body, err := r.deps.Renderer.Comment(c.kind, data)
		if err != nil {
			return applied{outcome: o}, err
		}
		o.State = ""
		r.deps.Log.Info("closing pull request", "namespace", t.name, "pr", d.PR().Number, "why", c.kind)
		return applied{outcome: o}, r.closeWith(ctx, t.checkout.forge, *d.PR(), c.kind, body)
	case ActClosedIgnored:
		o.State = prstate.PRClosedIgnored
	case ActMerged:
		state, straggler, err := r.followRollout(ctx, t, d, in)
		o.State = state
		return applied{outcome: o, straggler: straggler}, err
	}
	if o.State == "" && t.work != nil {
		o.State = prstate.PRNotYetOpened
	}
	return applied{outcome: o}, nil
}

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

// open opens the namespace's PR and returns o completed with it, as far
// as it got.
func (r *Reconciler) open(ctx context.Context, t rendered, set *objects.Set, o Outcome) (Outcome, error) {
	pr, err := t.checkout.forge.CreatePR(ctx, forge.NewPR{
		Title: t.title, Head: t.branch, Base: t.checkout.base(), Body: t.body,
		Draft: r.settings.Draft, MaintainerCanModify: false,
	})
	if err != nil {
		return o, err
	}
	o.PR, o.PRURL, o.State = pr.Number, pr.HTMLURL, prstate.PROpen
	// CreatePR adopts a PR that already existed (a cycle that died after
	// opening it); bring its text in line like any open PR.
	if pr.Title != t.title || pr.Body != t.body {
		title, body := t.title, t.body
		if err := t.checkout.forge.UpdatePR(ctx, pr.Number, &title, &body, nil); err != nil {
			return o, err
		}
	}
	return o, r.finishOpening(ctx, t, pr, set)
}

// finishOpening asks for reviews, then labels the PR. The order matters:
// a cycle may die between opening a PR and finishing it, and the next one
// only sees an open PR. Labels added last mark an opening that finished,
// so update finishes a PR that lacks them instead of leaving it without
// reviewers. A reviewer GitHub refuses (say, not a collaborator) does not
// keep the labels off, or every cycle would ask again.
func (r *Reconciler) finishOpening(ctx context.Context, t rendered, pr forge.PR, set *objects.Set) error {
	var refused error
	users, teams := r.reviewersFor(set, t.name)
	if len(users)+len(teams) > 0 {
		err := t.checkout.forge.RequestReviewers(ctx, pr.Number, users, teams)
		if err != nil && (isRetryLater(err) || ctx.Err() != nil) {
			return err
		}
		refused = err
	}
	return errors.Join(refused, r.ensureLabels(ctx, t.checkout.forge, pr))
}

// update brings the open PR's title, body and labels in line, and tells
// whether nothing needed to change, its branch included.
func (r *Reconciler) update(ctx context.Context, t rendered, d decide.Decision, set *objects.Set) (bool, error) {
	pr := d.PR()
	var title, body *string
	if pr.Title != t.title {
		title = &t.title
	}
	if pr.Body != t.body {
		body = &t.body
	}
	if title != nil || body != nil {
		if err := t.checkout.forge.UpdatePR(ctx, pr.Number, title, body, nil); err != nil {
			return false, err
		}
	}
	missing := len(r.missingLabels(*pr)) > 0
	upToDate := title == nil && body == nil && !missing && !t.changed()
	if missing {
		// Opened by a cycle that died before finishing it (or a person
		// removed a label: asking the same reviewers again is harmless).
		return upToDate, r.finishOpening(ctx, t, *pr, set)
	}
	return upToDate, nil
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
func (r *Reconciler) closingOf(t rendered, d decide.Decision, in read) closing {
	f := closingFacts{namespace: t.name, repository: plan.RepositoryFor(t.checkout.target, "", nil).Label(), set: in.set, plan: in.res.Plan,
		opts: r.settings.Plan.Drift, refused: in.res.Edits.Refused}
	if s, ok := prstate.ParseState(d.PR().Body); ok {
		f.targets = s.Targets
	}
	return explainClosing(f)
}

// sayTakenOver tells a merged PR whose rollout kedge was following that the
// PR just opened takes over, unless it already rolled out.
func (r *Reconciler) sayTakenOver(ctx context.Context, t rendered, d decide.Decision, opened Outcome, plan drift.Plan) error {
	old := d.Superseded()
	if old == nil || opened.PR == 0 {
		return nil
	}
	data := r.commentData(t, d, plan)
	data.Successor, data.SuccessorURL = opened.PR, opened.PRURL
	body, err := r.deps.Renderer.Comment(dashboard.CommentSuperseded, data)
	if err != nil {
		return err
	}
	return r.commentBodyOnce(ctx, t.checkout.forge, old.Number, dashboard.CommentSuperseded, body)
}

// closeWith comments (once) and closes a PR, its body marked as closed by
// kedge (prstate.ClosedBody). The comment goes first: a
// cycle dying in between leaves an open PR the next cycle closes, rather
// than a closed PR nobody was told about.
func (r *Reconciler) closeWith(ctx context.Context, gh *forge.Client, pr forge.PR, kind, body string) error {
	if err := r.commentBodyOnce(ctx, gh, pr.Number, kind, body); err != nil {
		return err
	}
	closed, marked := "closed", prstate.ClosedBody(pr.Body, kind)
	return gh.UpdatePR(ctx, pr.Number, nil, &marked, &closed)
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

func (r *Reconciler) commentData(t rendered, d decide.Decision, plan drift.Plan) dashboard.CommentData {
	data := dashboard.CommentData{
		Cluster: r.settings.Cluster, Namespace: t.name, Branch: t.branch,
		DashboardURL: t.pr.DashboardURL, Grace: r.settings.Grace,
		OptOutAnnotation: optOutAnnotation(r.settings.Plan.Drift),
	}
	if pr := d.PR(); pr != nil {
		if s, ok := prstate.ParseState(pr.Body); ok {
			data.Targets = s.Targets
		}
		if pr.MergedAt != nil {
			data.MergedAt = *pr.MergedAt
		}
	}
	if d.Detail() != "" && d.Action() == ActEdited {
		data.Authors = strings.Split(d.Detail(), ", ")
	}
	return data
}

// followRollout watches a merged PR's workloads: once all run what the PR
// targeted it says so; if some still drift after the grace time it names
// them, once. It returns the namespace's state, and the straggling PR.
func (r *Reconciler) followRollout(ctx context.Context, t rendered, d decide.Decision, in read) (prstate.PRState, *dashboard.Straggler, error) {
	pr := d.PR()
	state, ok := prstate.ParseState(pr.Body)
	if !ok || pr.MergedAt == nil {
		return d.State(), nil, nil
	}
	targeted := map[string]bool{}
	toAmbient := false
	for _, t := range state.Targets {
		targeted[t.Kind+"/"+t.Name] = true
		toAmbient = toAmbient || (t.Kind == "Namespace" && t.Revision == drift.Ambient)
	}
	var still []drift.Workload
	for _, w := range in.res.Plan.Workloads {
		if w.Namespace == t.name && targeted[w.Kind+"/"+w.Name] {
			still = append(still, w)
		}
	}
	if toAmbient {
		still = append(still, uncaptured(in.set, t.name)...)
	}
	data := r.commentData(t, d, in.res.Plan)
	data.Now = r.deps.Now()
	if len(still) == 0 {
		return prstate.PRRolledOut, nil, r.commentOnce(ctx, t.checkout.forge, pr.Number, dashboard.CommentRolledOut, data)
	}
	if r.deps.Now().Sub(*pr.MergedAt) < r.settings.Grace {
		return prstate.PRMergedRollingOut, nil, nil
	}
	straggler := &dashboard.Straggler{Namespace: t.name, PRNumber: pr.Number, PRURL: pr.HTMLURL, MergedAt: *pr.MergedAt, Workloads: still}
	data.Stragglers = still
	return prstate.PRMergedRollingOut, straggler, r.commentOnce(ctx, t.checkout.forge, pr.Number, dashboard.CommentStalled, data)
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
