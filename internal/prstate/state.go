package prstate

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sort"
	"strings"

	"github.com/kedge-io/kedge/internal/drift"
)

// State is what a PR body records, hidden, about what the PR was opened
// for. kedge reads it back to tell whether the PR still matches the drift
// and which target owns it.
type State struct {
	Cluster   string `json:"cluster"`
	Namespace string `json:"namespace"`
	// Repo ("owner/name") and Base are the repository and base branch the
	// PR was opened against. Bodies written before kedge recorded them
	// carry neither; GitHub's own base of the PR then says.
	Repo    string   `json:"repo,omitempty"`
	Base    string   `json:"base,omitempty"`
	Targets []Target `json:"targets"`
	// Hash covers everything above, so a changed target is one string
	// comparison and a hand-edited block is detected.
	Hash string `json:"hash"`
}

// Target is the desired sidecar of one workload the PR restarts.
type Target struct {
	Namespace string `json:"ns"`
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	Revision  string `json:"revision"`
	Image     string `json:"image"`
}

const (
	stateOpen  = "<!-- kedge:state "
	stateClose = " -->"
)

// NewState records the targets of the given workloads, sorted, with their
// hash.
func NewState(cluster, namespace string, workloads []drift.Workload) State {
	s := State{Cluster: cluster, Namespace: namespace, Targets: make([]Target, 0, len(workloads))}
	for _, w := range workloads {
		s.Targets = append(s.Targets, Target{
			Namespace: w.Namespace, Kind: w.Kind, Name: w.Name,
			Revision: w.Desired.Revision, Image: w.Desired.Image,
		})
	}
	return s.Normalized()
}

// For is the state of a PR against base of repo ("owner/name").
func (s State) For(repo, base string) State {
	s.Repo, s.Base = repo, base
	return s.Normalized()
}

// Normalized sorts the targets and recomputes the hash, so equal content
// always gives the same block whoever built the State.
func (s State) Normalized() State {
	targets := append([]Target(nil), s.Targets...)
	if targets == nil {
		targets = []Target{}
	}
	sort.Slice(targets, func(i, j int) bool {
		a, b := targets[i], targets[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		return a.Name < b.Name
	})
	s.Targets = targets
	s.Hash = s.contentHash()
	return s
}

// SameTargets reports whether two states are for the same cluster,
// namespace and targets, wherever the PRs were opened: a PR a person closed
// for these targets before kedge recorded its repository and base is still
// that PR.
func (s State) SameTargets(o State) bool {
	return s.targetsHash() == o.targetsHash()
}

func (s State) targetsHash() string {
	s.Repo, s.Base = "", ""
	return s.Normalized().Hash
}

// contentHash is the hash of the block's content. Repo and Base are left
// out when empty, so a block written before they existed keeps its hash.
func (s State) contentHash() string {
	content, err := json.Marshal(struct {
		Cluster   string   `json:"cluster"`
		Namespace string   `json:"namespace"`
		Repo      string   `json:"repo,omitempty"`
		Base      string   `json:"base,omitempty"`
		Targets   []Target `json:"targets"`
	}{s.Cluster, s.Namespace, s.Repo, s.Base, s.Targets})
	if err != nil {
		// Only strings are marshalled; this cannot fail.
		panic(err)
	}
	sum := sha256.Sum256(content)
	return hex.EncodeToString(sum[:])
}

// Block is the hidden HTML comment carrying the state. encoding/json
// escapes '<', '>' and '&', so the JSON can never close the comment early.
func (s State) Block() string {
	n := s.Normalized()
	js, err := json.Marshal(n)
	if err != nil {
		panic(err)
	}
	return stateOpen + string(js) + stateClose
}

// ParseState reads the state block back from a PR body. It takes the last
// block (kedge writes it at the end; a quoted copy above does not count) and
// reports false when there is none, it is not valid JSON, or its hash does
// not match its content.
func ParseState(body string) (*State, bool) {
	start := strings.LastIndex(body, stateOpen)
	if start < 0 {
		return nil, false
	}
	rest := body[start+len(stateOpen):]
	end := strings.Index(rest, stateClose)
	if end < 0 {
		return nil, false
	}
	var s State
	if err := json.Unmarshal([]byte(rest[:end]), &s); err != nil {
		return nil, false
	}
	if s.Targets == nil {
		s.Targets = []Target{}
	}
	if s.Hash != s.contentHash() {
		return nil, false
	}
	return &s, true
}
