// Package waves decides, for each new target (a proxy image or revision),
// which namespaces may get their pull request now: those of the first wave
// not done. It is pure and keeps no state of its own: whether a wave is done
// is worked out every cycle from the pull requests' state on GitHub (open,
// merged with merged_at, closed unmerged) and the cluster's objects (pod
// Ready conditions and their lastTransitionTime, proxy restart counts,
// available replicas), so a restarted kedge carries on where it was.
package waves

import (
	"crypto/sha256"
	"encoding/hex"
	"path"
	"sort"
	"time"
)

// Wave is one step of the rollout.
type Wave struct {
	Name string
	// Names are namespace globs and Labels a label selector; both must
	// match, and an empty one matches everything.
	Names            []string
	Labels           map[string]string
	Soak             time.Duration
	MaxUnhealthy     int
	MaxProxyRestarts int32
}

// RestName is the wave of the namespaces no configured wave selects; it
// comes after every configured wave.
const RestName = "(unselected namespaces)"

// Of returns the index of the first wave that selects the namespace, or
// len(waves) for the implicit last wave.
func Of(waves []Wave, namespace string, labels map[string]string) int {
	for i, w := range waves {
		if selects(w, namespace, labels) {
			return i
		}
	}
	return len(waves)
}

func selects(w Wave, namespace string, labels map[string]string) bool {
	for k, v := range w.Labels {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	if len(w.Names) == 0 {
		return true
	}
	for _, g := range w.Names {
		if ok, _ := path.Match(g, namespace); ok {
			return true
		}
	}
	return false
}

// Name is the name of wave i, the implicit last one included.
func Name(waves []Wave, i int) string {
	if i < len(waves) {
		return waves[i].Name
	}
	return RestName
}

// at returns wave i, the implicit last one being the zero Wave: no soak,
// no tolerance.
func at(waves []Wave, i int) Wave {
	if i < len(waves) {
		return waves[i]
	}
	return Wave{Name: RestName}
}

// TargetKey names a target as the restart annotation's value does:
// revision@image.
func TargetKey(revision, image string) string { return revision + "@" + image }

// TargetID is a short form of a target key that fits a label value, for
// rollout.resumeLabel.
func TargetID(key string) string {
	sum := sha256.Sum256([]byte(key))
	return "t-" + hex.EncodeToString(sum[:5])
}

// Progress is where one namespace's PR for a target stands.
type Progress string

const (
	// Pending: the namespace drifts to the target and has no PR for it.
	Pending Progress = "pending"
	// Open: its PR for the target is open.
	Open Progress = "open"
	// Skipped: its PR for the target was closed unmerged; the namespace
	// counts as done.
	Skipped Progress = "skipped"
	// Merged: its PR for the target was merged; its workloads are gated.
	Merged Progress = "merged"
)

// Member is one namespace taking part in a target's rollout.
type Member struct {
	Namespace string
	Wave      int
	Progress  Progress
	// MergedAt is the PR's merged_at (Merged only).
	MergedAt time.Time
	// Resumed is set when the namespace carries rollout.resumeLabel with
	// the target's id: its unhealthy workloads no longer block.
	Resumed bool
	// Workloads are the merged PR's workloads for the target.
	Workloads []Workload
}

// State is where a wave stands.
type State string

const (
	// StateDone: every PR merged or closed, every merged workload healthy
	// for the soak time (or none to do).
	StateDone State = "done"
	// StateInProgress: PRs to open or open.
	StateInProgress State = "in-progress"
	// StateSoaking: all merged; workloads rolling out or soaking.
	StateSoaking State = "soaking"
	// StateBlocked: more unhealthy workloads than maxUnhealthy.
	StateBlocked State = "blocked"
	// StateWaiting: an earlier wave is not done.
	StateWaiting State = "waiting"
)

// Blocker is an unhealthy workload.
type Blocker struct {
	Namespace, Kind, Name, Why string
}

// Status is one wave of a target's rollout.
type Status struct {
	Index      int
	Name       string
	State      State
	Namespaces []string
	// Skipped are namespaces whose PR was closed unmerged.
	Skipped []string
	// SoakEnds is when the last soaking workload of the wave has soaked,
	// zero while one is still rolling out.
	SoakEnds time.Time
	// RollingOut counts merged workloads not yet on the desired proxy or
	// not yet Ready and available.
	RollingOut int
	// Blocking are the unhealthy workloads that block the wave; Tolerated
	// those within maxUnhealthy or resumed by label.
	Blocking  []Blocker
	Tolerated []Blocker
}

// Rollout is a target's wave plan.
type Rollout struct {
	Target string
	ID     string
	Waves  []Status
	// Active is the index of the first wave not done (len(Waves) when all
	// are).
	Active int
}

// MayOpen tells whether a namespace of wave i may get its PR: one of a done
// wave or of the active one, unless the active wave is blocked, which stops
// the target's rollout for its own namespaces still without a PR too.
func (r Rollout) MayOpen(i int) bool {
	if _, blocked := r.Blocked(); blocked && i == r.Active {
		return false
	}
	return i <= r.Active
}

// Blocked is the wave that stops the rollout, if any.
func (r Rollout) Blocked() (Status, bool) {
	if r.Active < len(r.Waves) && r.Waves[r.Active].State == StateBlocked {
		return r.Waves[r.Active], true
	}
	return Status{}, false
}

// Evaluate is the wave plan of one target, from its members and the clock.
// Every configured wave is listed, and the implicit last one when a member
// falls in it.
func Evaluate(target string, waves []Wave, members []Member, grace time.Duration, now time.Time) Rollout {
	n := len(waves)
	for _, m := range members {
		if m.Wave >= n {
			n = len(waves) + 1
		}
	}
	byWave := make([][]Member, n)
	for _, m := range members {
		byWave[m.Wave] = append(byWave[m.Wave], m)
	}
	r := Rollout{Target: target, ID: TargetID(target), Active: n}
	for i := 0; i < n; i++ {
		s := evaluateWave(at(waves, i), byWave[i], grace, now)
		s.Index, s.Name = i, Name(waves, i)
		if r.Active < i {
			s.State = StateWaiting
		} else if s.State != StateDone {
			r.Active = i
		}
		r.Waves = append(r.Waves, s)
	}
	return r
}

func evaluateWave(w Wave, members []Member, grace time.Duration, now time.Time) Status {
	sort.Slice(members, func(i, j int) bool { return members[i].Namespace < members[j].Namespace })
	var s Status
	pending := false
	for _, m := range members {
		s.Namespaces = append(s.Namespaces, m.Namespace)
		switch m.Progress {
		case Pending, Open:
			pending = true
		case Skipped:
			s.Skipped = append(s.Skipped, m.Namespace)
		case Merged:
			judgeMember(w, m, grace, now, &s)
		}
	}
	switch {
	case len(s.Blocking) > w.MaxUnhealthy:
		s.State = StateBlocked
	case pending:
		s.State = StateInProgress
	case s.RollingOut > 0 || !s.SoakEnds.IsZero() && now.Before(s.SoakEnds):
		s.State = StateSoaking
	default:
		s.State = StateDone
	}
	if s.State != StateBlocked {
		s.Tolerated = append(s.Tolerated, s.Blocking...)
		s.Blocking = nil
	}
	if s.RollingOut > 0 || s.State == StateDone {
		s.SoakEnds = time.Time{}
	}
	return s
}

// judgeMember adds a merged namespace's workloads to the wave's status.
func judgeMember(w Wave, m Member, grace time.Duration, now time.Time, s *Status) {
	for _, wl := range m.Workloads {
		v := Judge(w, grace, m.MergedAt, now, wl)
		switch v.Health {
		case Unhealthy:
			b := Blocker{Namespace: m.Namespace, Kind: wl.Kind, Name: wl.Name, Why: v.Why}
			if m.Resumed {
				s.Tolerated = append(s.Tolerated, b)
			} else {
				s.Blocking = append(s.Blocking, b)
			}
		case RollingOut:
			s.RollingOut++
		case Soaking:
			if v.SoakEnds.After(s.SoakEnds) {
				s.SoakEnds = v.SoakEnds
			}
		}
	}
}
