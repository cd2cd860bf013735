// Package migrate moves namespaces from one Istio revision (or tag) to
// another through Git: it decides which namespaces a migration policy
// selects and whether each can move now, computes the plan as if the move
// had happened (so restarts land on the target revision), and finds and
// edits the istio.io/rev label of the Namespace in the GitOps checkout with
// the same exactness guarantees as the restart annotation.
//
// Everything but the checkout reading is pure. The rules follow Istio's
// webhooks as the mesh model evaluates them: a namespace moves only when,
// with the new label, the target revision's webhook alone would answer it
// (istio-injection=enabled, which wins over istio.io/rev, is taken off in
// the same edit).
package migrate

import (
	"fmt"
	"sort"
	"strings"

	"github.com/kedge-io/kedge/internal/drift"
	"github.com/kedge-io/kedge/internal/mesh"
)

// Policy moves the namespaces whose istio.io/rev label is From to To.
type Policy struct {
	// Key names the policy in the configuration ("migrations[0]"), so
	// errors point at the entry to fix.
	Key string
	// From is the label value namespaces carry now. "default" also selects
	// namespaces the default revision injects through istio-injection=enabled,
	// which move by losing that label.
	From string
	// To is a revision or a revision tag, or "ambient" to leave sidecars
	// for ambient mode. From "ambient" moves namespaces in ambient mode back
	// to sidecars injected by To; To "sidecar" is the same way back, to the
	// revision From names (the forward policy with one word changed).
	To string
	// NamespaceSelector limits the policy to namespaces carrying every one
	// of these labels; empty selects every namespace.
	NamespaceSelector map[string]string
	// OptOutLabel, when a namespace carries it with any value but "false",
	// keeps the namespace where it is.
	OptOutLabel string
	// Waypoint, when To is ambient, is the waypoint the namespace uses.
	Waypoint string
}

// PolicyError is a policy that cannot apply to this mesh. Key is the
// configuration key at fault ("migrations[0].to").
type PolicyError struct {
	Key string
	Msg string
}

func (e *PolicyError) Error() string { return e.Key + ": " + e.Msg }

// Validate checks every policy against the mesh: To must name a revision
// or a tag the mesh knows. From may name a revision that is gone, since
// moving namespaces away from a removed revision is a migration too.
func Validate(model *mesh.Model, policies []Policy) error {
	for i, p := range policies {
		key := p.Key
		if key == "" {
			key = fmt.Sprintf("migrations[%d]", i)
		}
		switch {
		case p.From == "":
			return &PolicyError{Key: key + ".from", Msg: "required"}
		case p.To == "":
			return &PolicyError{Key: key + ".to", Msg: "required"}
		case p.From == p.To:
			return &PolicyError{Key: key + ".to", Msg: fmt.Sprintf("%q is also the policy's from", p.To)}
		}
		if p.To == drift.Ambient {
			continue
		}
		if p.To == Sidecar {
			if p.From == drift.Ambient {
				return &PolicyError{Key: key + ".from", Msg: "with to: sidecar, from names the revision or tag the namespaces go back to"}
			}
			if _, ok := TargetRevision(model, p.From); !ok {
				return &PolicyError{Key: key + ".from", Msg: fmt.Sprintf("%q is neither a revision nor a revision tag of the mesh (%s)", p.From, known(model))}
			}
			continue
		}
		if _, ok := TargetRevision(model, p.To); !ok {
			return &PolicyError{Key: key + ".to", Msg: fmt.Sprintf("%q is neither a revision nor a revision tag of the mesh (%s)", p.To, known(model))}
		}
	}
	return nil
}

// Sidecar is the To of a policy that takes namespaces in ambient mode back
// to sidecars injected by its From.
const Sidecar = "sidecar"

// normalized spells a way back one way: from ambient, to the revision.
func (p Policy) normalized() Policy {
	if p.To == Sidecar {
		p.From, p.To = drift.Ambient, p.From
	}
	return p
}

// TargetRevision is the revision a label value selects: a tag's revision
// when a tag of that name exists (tag "default" takes over the default
// revision's label value), else the revision of that name.
func TargetRevision(model *mesh.Model, value string) (string, bool) {
	if rev, ok := model.ResolveTag(value); ok {
		return rev, true
	}
	if model.HasRevision(value) {
		return value, true
	}
	return "", false
}

func known(model *mesh.Model) string {
	var revs []string
	for _, r := range model.Revisions() {
		revs = append(revs, r.Name)
	}
	tags := make([]string, 0)
	for t := range model.Tags() {
		tags = append(tags, t)
	}
	sort.Strings(tags)
	if len(revs) == 0 && len(tags) == 0 {
		return "no injector webhook or ConfigMap was found"
	}
	out := "revisions: " + orNone(revs)
	return out + "; tags: " + orNone(tags)
}

func orNone(list []string) string {
	if len(list) == 0 {
		return "none"
	}
	return strings.Join(list, ", ")
}
