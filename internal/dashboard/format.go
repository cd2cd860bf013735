package dashboard

import (
	"fmt"
	"sort"
	"time"

	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/image"
	"github.com/kedge-io/kedge/internal/prstate"
)

// noSidecar is how an empty revision or image (no sidecar) reads.
const noSidecar = "no sidecar"

// ProxyVersion is the short version of a proxy image (see image.Ref's
// Version); the empty image (no sidecar) gives "".
func ProxyVersion(img string) string {
	return image.Parse(img).Version()
}

// proxyVersions is the distinct versions of images, sorted.
func proxyVersions(images []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, img := range images {
		v := ProxyVersion(img)
		if v == "" {
			v = noSidecar
		}
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	sort.Strings(out)
	return out
}

// age is how long ago start was, in its two largest units ("3d 4h",
// "5h 12m", "7m"). Without a reference time (PR bodies, which must not
// change from one cycle to the next) it is the start date instead;
// "–" when the start is unknown.
func age(now time.Time, start *time.Time) string {
	if start == nil || start.IsZero() {
		return "–"
	}
	if now.IsZero() {
		return "since " + start.UTC().Format("2006-01-02")
	}
	return span(now.Sub(*start))
}

// since is age for a non-pointer time.
func since(now, t time.Time) string {
	return age(now, &t)
}

// span writes a duration the way people read ages, in its two largest
// units; anything under a minute is "under 1m".
func span(d time.Duration) string {
	if d < time.Minute {
		return "under 1m"
	}
	days := int(d / (24 * time.Hour))
	hours := int(d % (24 * time.Hour) / time.Hour)
	minutes := int(d % time.Hour / time.Minute)
	switch {
	case days > 0 && hours > 0:
		return fmt.Sprintf("%dd %dh", days, hours)
	case days > 0:
		return fmt.Sprintf("%dd", days)
	case hours > 0 && minutes > 0:
		return fmt.Sprintf("%dh %dm", hours, minutes)
	case hours > 0:
		return fmt.Sprintf("%dh", hours)
	default:
		return fmt.Sprintf("%dm", minutes)
	}
}

// took formats how long a cycle ran: sub-second precision matters for
// short cycles, not for long ones.
func took(d time.Duration) string {
	switch {
	case d <= 0:
		return "–"
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	default:
		return d.Round(time.Second).String()
	}
}

// utc formats a timestamp unambiguously for readers in any time zone.
func utc(t time.Time) string {
	if t.IsZero() {
		return "–"
	}
	return t.UTC().Format("2006-01-02 15:04 UTC")
}

// plural writes "1 workload" or "3 workloads".
func plural(n int, singular string) string {
	if n == 1 {
		return "1 " + singular
	}
	return fmt.Sprintf("%d %ss", n, singular)
}

// revisionName reads "" as no sidecar.
func revisionName(rev string) string {
	if rev == "" {
		return noSidecar
	}
	return rev
}

var reasonMeaning = map[drift.Reason]string{
	drift.ReasonRevision:        "injected by another revision than the one that injects the namespace now",
	drift.ReasonProxyImage:      "the proxy image differs from the one its revision injects now",
	drift.ReasonMissingSidecar:  "a sidecar would be injected now, but the pods have none",
	drift.ReasonUnwantedSidecar: "the pods have a sidecar, but none would be injected now",
}

var skipMeaning = map[drift.SkipReason]string{
	drift.SkipNotRestartable: "a template edit restarts none of its pods; a Job's or CronJob's next run picks up the mesh",
	drift.SkipNoOwner:        "a bare pod: nothing recreates it, so delete it when convenient",
	drift.SkipConflict:       "several revisions would inject it: fix the webhooks first",
	drift.SkipOptedOut:       "opted out by annotation",
	drift.SkipOnDelete:       "updated OnDelete: a template edit restarts none of its pods; delete them, one at a time, to restart them",
}

var manifestMeaning = map[string]string{
	drift.ManifestNotFound:  "no manifest in the repository defines it",
	drift.ManifestHelm:      "rendered by a Helm release: bump a pod annotation through the chart's values",
	drift.ManifestAmbiguous: "several files could define it",
	drift.ManifestNoRepo:    "in no repository kedge can write to",
}

var editMeaning = map[string]string{
	drift.EditInPlace:          "annotation in place",
	drift.EditOverlayPatch:     "patch in the namespace's overlay",
	drift.EditAlreadyBumped:    "already bumped, waiting for the rollout",
	drift.EditHelmPostRenderer: "post-renderer patch in its HelmRelease; helm-controller upgrades the release",
	drift.EditHelmValues:       "chart value in its HelmRelease or Argo CD Application; helm-controller upgrades the release, Argo CD syncs the Application",
	drift.EditHelmTemplate:     "annotation in the chart's template in the repository; Argo CD syncs the Application",
}

var fateMeaning = map[prstate.Fate]string{
	prstate.FateResolved:    "runs what the mesh injects now",
	prstate.FateOptedOut:    "opted out",
	prstate.FateNotSelected: "no longer selected by kedge's configuration",
	prstate.FateDeleted:     "deleted from the cluster",
	prstate.FateNotEditable: "still drifts, kedge has no edit for it",
}

var stateMeaning = map[prstate.PRState]string{
	prstate.PROpen:             "open, awaiting review",
	prstate.PRMergedRollingOut: "merged, rolling out",
	prstate.PRRolledOut:        "merged and rolled out",
	prstate.PRClosedIgnored:    "closed unmerged: kedge leaves this target alone",
	prstate.PREdited:           "edited by someone else: kedge stopped updating it",
	prstate.PRRateLimited:      "waiting: PR limits reached",
	prstate.PRNotYetOpened:     "not opened yet",
	prstate.PRRefused:          "refused: kedge will not edit its files",
	prstate.PROtherRepository:  "applied from another repository: kedge cannot edit it",
	prstate.PRWaitingForWave:   "waiting for its rollout wave",
}

var stateLabel = map[prstate.PRState]string{
	prstate.PROpen:             "open",
	prstate.PRMergedRollingOut: "rolling out",
	prstate.PRRolledOut:        "rolled out",
	prstate.PRClosedIgnored:    "closed unmerged",
	prstate.PREdited:           "edited by someone else",
	prstate.PRRateLimited:      "rate-limited",
	prstate.PRNotYetOpened:     "not opened yet",
	prstate.PRRefused:          "refused",
	prstate.PROtherRepository:  "other repository",
	prstate.PRWaitingForWave:   "waiting for wave",
}

// short is a PR state's label for counts.
func short(s prstate.PRState) string {
	if l, ok := stateLabel[s]; ok {
		return l
	}
	return string(s)
}

// meaning looks a code up in one of the tables above; unknown codes show
// as themselves, so a new value is never hidden.
func meaning(code any) string {
	var (
		m  string
		ok bool
	)
	switch c := code.(type) {
	case drift.Reason:
		m, ok = reasonMeaning[c]
	case drift.SkipReason:
		m, ok = skipMeaning[c]
	case prstate.PRState:
		m, ok = stateMeaning[c]
	case prstate.Fate:
		m, ok = fateMeaning[c]
	case string:
		if m, ok = manifestMeaning[c]; !ok {
			m, ok = editMeaning[c]
		}
	}
	if !ok {
		return fmt.Sprint(code)
	}
	return m
}
