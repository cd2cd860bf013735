package index

import (
	"errors"
	"log/slog"
	"path/filepath"
	"slices"

	"github.com/kedge-io/kedge/internal/yamlguard"
)

// ProblemOverBudget is a file the index refused to parse because it
// exceeds a budget (size, alias expansion, nesting depth): decoding it, as
// kustomize would, could take the whole process down.
const ProblemOverBudget ProblemKind = "over-budget"

// ProblemDeprecated is a kustomization using a field kustomize still
// accepts but has deprecated; kustomize prints a warning for it on every
// build, which kedge keeps off its own output and reports here instead.
const ProblemDeprecated ProblemKind = "deprecated"

// overBudget reports the file at absolute path p when err is a budget's
// refusal, once however many roots read the file.
func (ix *Index) overBudget(p string, err error) {
	var over *yamlguard.Error
	if errors.As(err, &over) {
		ix.overBudgetMessage(p, over.Error())
	}
}

// overBudgetMessage reports the file at p over budget, once.
func (ix *Index) overBudgetMessage(p, why string) {
	pr := Problem{Path: ix.rel(p), Kind: ProblemOverBudget, Err: why}
	if !slices.Contains(ix.Problems, pr) {
		ix.Problems = append(ix.Problems, pr)
	}
}

// deprecations reports the deprecated fields of a kustomization, and logs
// them at debug level where kustomize would have printed them.
func (ix *Index) deprecations(kf *kustomizationFile) {
	file := ix.rel(filepath.Join(kf.dir, kf.name))
	for _, w := range kf.deprecated {
		slog.Debug("kustomization uses a deprecated field", "file", file, "warning", w)
		ix.Problems = append(ix.Problems, Problem{Path: file, Kind: ProblemDeprecated, Err: w})
	}
}
