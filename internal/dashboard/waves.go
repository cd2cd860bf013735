package dashboard

import (
	"fmt"
	"strings"
	"time"

	"github.com/kedge-io/kedge/internal/waves"
)

// RolloutView is one target's wave plan on the dashboard.
type RolloutView struct {
	Target string
	Rows   []WaveRow
	// Blocked is set when a wave stops the rollout; Resume says how a
	// person lets it go on.
	Blocked *WaveRow
	Resume  string
}

// WaveRow is one wave. Status is Markdown, escaped.
type WaveRow struct {
	Number     string
	Name       string
	Namespaces []string
	Status     string
	Blocking   []waves.Blocker
}

// rolloutViews renders each wave's state. Soak time left is counted from
// the last cycle, and only once it is known: the content that decides
// whether the issue is rewritten is rendered without it, so a soak ticking
// down alone rewrites nothing.
func rolloutViews(rollouts []waves.Rollout, now time.Time, resumeLabel string) []RolloutView {
	out := make([]RolloutView, 0, len(rollouts))
	for _, r := range rollouts {
		v := RolloutView{Target: targetLabel(r.Target)}
		for _, w := range r.Waves {
			row := WaveRow{Number: fmt.Sprint(w.Index + 1), Name: w.Name, Namespaces: w.Namespaces, Status: waveStatus(w, now), Blocking: w.Blocking}
			if w.Name == waves.RestName {
				row.Number = "last"
			}
			v.Rows = append(v.Rows, row)
		}
		if b, ok := r.Blocked(); ok {
			v.Blocked = &v.Rows[b.Index]
			v.Resume = resumeLabel + "=" + r.ID
		}
		out = append(out, v)
	}
	return out
}

// targetLabel shows a target key; the target of workloads that should
// lose their sidecar has neither revision nor image.
func targetLabel(key string) string {
	if key == waves.TargetKey("", "") {
		return "no sidecar"
	}
	return key
}

func waveStatus(w waves.Status, now time.Time) string {
	var s string
	switch w.State {
	case waves.StateDone:
		s = "done"
	case waves.StateInProgress:
		s = "in progress: pull requests open"
	case waves.StateSoaking:
		s = soakStatus(w, now)
	case waves.StateWaiting:
		s = "waiting for the waves before it"
	case waves.StateBlocked:
		s = "**blocked** by " + blockers(w.Blocking)
	}
	if len(w.Skipped) > 0 {
		s += "; skipped (closed unmerged): " + names(w.Skipped, 10)
	}
	if len(w.Tolerated) > 0 {
		s += "; unhealthy but tolerated: " + blockers(w.Tolerated)
	}
	return s
}

func soakStatus(w waves.Status, now time.Time) string {
	if w.SoakEnds.IsZero() {
		return fmt.Sprintf("merged, %s rolling out", plural(w.RollingOut, "workload"))
	}
	s := "soaking until " + utc(w.SoakEnds)
	if !now.IsZero() && w.SoakEnds.After(now) {
		s += " (" + span(w.SoakEnds.Sub(now)) + " left)"
	}
	return s
}

func blockers(list []waves.Blocker) string {
	parts := make([]string, 0, len(list))
	for _, b := range list {
		parts = append(parts, EscapeCell(b.Namespace+"/"+b.Kind+"/"+b.Name)+" ("+EscapeCell(b.Why)+")")
	}
	return strings.Join(parts, ", ")
}
