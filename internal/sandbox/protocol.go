package sandbox

import (
	"encoding/gob"
)

func init() {
	// Chart values are trees of these; gob must know them to carry them
	// through an interface.
	gob.Register(map[string]any{})
	gob.Register([]any{})
}

// request is one job for a worker; exactly one field is set.
type request struct {
	Kustomize *KustomizeJob
	Chart     *ChartJob
}

// response answers a request.
type response struct {
	Kustomize *KustomizeResult
	Chart     *ChartResult
	// Output is what the job printed (kustomize prints its deprecation
	// warnings, Helm its own), line by line.
	Output []string
}

// KustomizeJob builds one kustomize root of a checkout.
type KustomizeJob struct {
	// Root is the checkout's absolute directory.
	Root string
	// Dir is the repo-relative kustomize root.
	Dir string
	// Replace stands in for the content of repo-relative files.
	Replace map[string][]byte
	// Flux, when set, is a Flux Kustomization as JSON: the build is the one
	// kustomize-controller runs for it at Dir, its kustomization written by
	// kustomize-controller's generator first (render.FluxKustomization).
	Flux []byte
}

// KustomizeResult is what a build gave: the objects, or the failure, and
// in both cases what it read.
type KustomizeResult struct {
	// Objects are the rendered objects as JSON, in kustomize's order.
	Objects [][]byte
	// Reads are the repo-relative files the build read.
	Reads []string
	// Listed are the repo-relative directories it listed (false) or walked
	// (true).
	Listed map[string]bool
	// Refused are the files over the repository's budget it tried to read,
	// with the budget's message.
	Refused map[string]string
	Failure *Failure
}

// ChartJob renders one chart with one or several sets of values.
type ChartJob struct {
	// Root and Dir name a chart directory of a checkout; Archive holds a
	// packaged chart instead.
	Root, Dir string
	Archive   []byte
	// MaxBytes bounds the chart uncompressed, subcharts included.
	MaxBytes           int64
	Release, Namespace string
	Values             []map[string]any
	// Replace stands in for the content of chart-relative files of a
	// chart directory.
	Replace map[string][]byte
}

// ChartResult holds a render per set of values, or why the chart did not
// load.
type ChartResult struct {
	// Defaults are the chart's own values (values.yaml).
	Defaults map[string]any
	Renders  []ChartRender
	Failure  *Failure
}

// ChartRender is one render: each object as JSON by "Kind/name".
type ChartRender struct {
	Objects map[string][]byte
	// Templates name the chart's template that rendered each object.
	Templates map[string]string
	Failure   *Failure
}

// FailureKind says why a job gave no result.
type FailureKind string

const (
	// FailOverBudget: the input took more memory, time or bytes than a
	// render may.
	FailOverBudget FailureKind = "over-budget"
	// FailOutside: it reaches a file outside the repository (or a chart
	// outside its directory).
	FailOutside FailureKind = "outside-repo"
	// FailRemote: it names something kedge does not fetch (a remote base,
	// a URL).
	FailRemote FailureKind = "remote"
	// FailBuild: the build or render itself failed.
	FailBuild FailureKind = "failed"
)

// Failure is why a job failed. Message is an excerpt (internal/untrusted):
// it can quote what the repository holds, never more than a line of it.
type Failure struct {
	Kind FailureKind
	// File names the file to blame, when one is.
	File    string
	Message string
}

func (f *Failure) Error() string { return f.Message }
