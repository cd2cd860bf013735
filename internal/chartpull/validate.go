package chartpull

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/Masterminds/semver/v3"

	"github.com/kedge-io/kedge/internal/untrusted"
)

// chartNamePattern and maxChartNameLength are the rule `helm create`
// holds a chart's name to (helm.sh/helm/v3 pkg/chartutil/create.go,
// validateChartName); Helm's chart metadata check adds that the name is
// neither "." nor ".." and is its own base name (pkg/chart/metadata.go,
// Validate). A name passing both is one path element that cannot climb out
// of the directory it is joined to.
var chartNamePattern = regexp.MustCompile(`^[a-zA-Z0-9._-]+$`)

const maxChartNameLength = 250

// maxShown bounds how much of a value a repository wrote is quoted in a
// message.
const maxShown = 80

// shown quotes a value a repository's writers control, bounded.
func shown(v string) string { return fmt.Sprintf("%q", untrusted.Excerpt(v, maxShown)) }

// InputError refuses a chart name or version that is not one.
type InputError struct{ Msg string }

func (e *InputError) Error() string { return e.Msg }

// Refused reports whether a pull was refused by policy (a host nothing
// admits, an address of a forbidden class) or for a name or version that
// is not one, rather than failed at a repository.
func Refused(err error) bool {
	var input *InputError
	var host *HostError
	var addr *AddressError
	return errors.As(err, &input) || errors.As(err, &host) || errors.As(err, &addr)
}

// validChartName says what is wrong with a chart's name, "" when nothing
// is.
func validChartName(name string) string {
	switch {
	case name == "":
		return "the chart has no name"
	case len(name) > maxChartNameLength:
		return fmt.Sprintf("chart name %s is longer than Helm's %d characters", shown(name), maxChartNameLength)
	case name == "." || name == "..", !chartNamePattern.MatchString(name):
		return fmt.Sprintf("chart name %s is not a Helm chart name (letters, digits, '.', '_' and '-', not . or ..)", shown(name))
	}
	return ""
}

// version is a chart version as asked: one semver version, or a semver
// range (empty: the latest stable version, as Helm's "*").
type version struct {
	exact      *semver.Version
	constraint *semver.Constraints
	asked      string
}

// parseVersion reads a HelmRelease's spec.chart.spec.version or an
// Application source's targetRevision. Helm, helm-controller and Argo CD
// all read it as a semver constraint; kedge reads a strict X.Y.Z[-pre][+build]
// as the one version it names, and refuses what is neither, so that
// nothing but a version ever becomes part of a cache path or a tag.
func parseVersion(v string) (version, error) {
	if v == "" {
		c, _ := semver.NewConstraint("*")
		return version{constraint: c}, nil
	}
	if exact, err := semver.StrictNewVersion(v); err == nil {
		return version{exact: exact, asked: v}, nil
	}
	if c, err := semver.NewConstraint(v); err == nil && !strings.ContainsAny(v, `/\`) {
		return version{constraint: c, asked: v}, nil
	}
	return version{}, &InputError{Msg: fmt.Sprintf("version %s is neither a semver version nor a semver range", shown(v))}
}

func (v version) String() string {
	if v.asked == "" {
		return "latest"
	}
	return v.asked
}

// allows reports whether candidate is the version asked, or in its range.
func (v version) allows(candidate *semver.Version) bool {
	if v.exact != nil {
		return candidate.Equal(v.exact) && (v.exact.Metadata() == "" || candidate.Metadata() == v.exact.Metadata())
	}
	return v.constraint.Check(candidate)
}
