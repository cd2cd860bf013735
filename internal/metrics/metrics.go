// Package metrics holds kedge's Prometheus metrics: what the last cycle
// found (drift, pull requests, refused files), how cycles went, how fast
// mesh changes reached a cycle, what GitHub was asked and how much rate
// limit is left, and how long git pushes take.
//
// Every Metrics has its own registry, so several instances can live in one
// process (tests run two replicas side by side) without sharing series.
package metrics

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/kedge-io/kedge/internal/cluster"
	"github.com/kedge-io/kedge/internal/forge"
	"github.com/kedge-io/kedge/internal/reconcile"
)

const namespace = "kedge"

// Cycle results, the values of the result label.
const (
	ResultSuccess = "success"
	ResultError   = "error"
	// ResultAborted is a cycle ended by shutdown or lost leadership.
	ResultAborted = "aborted"
	// ResultStale is a cycle that read cluster caches that could not
	// refresh (cluster.ErrStale): it is no success.
	ResultStale = "stale"
)

// Metrics records what kedge does. The zero value is not usable; use New.
type Metrics struct {
	registry *prometheus.Registry

	driftedWorkloads *prometheus.GaugeVec
	driftedPods      *prometheus.GaugeVec
	skippedWorkloads *prometheus.GaugeVec
	pullRequests     *prometheus.GaugeVec
	refusedFiles     prometheus.Gauge
	mismatch         *prometheus.GaugeVec

	cycleDuration  *prometheus.HistogramVec
	cycles         *prometheus.CounterVec
	lastSuccess    prometheus.Gauge
	triggers       prometheus.Counter
	triggerLatency prometheus.Histogram
	leader         prometheus.Gauge

	pushDuration *prometheus.HistogramVec
}

// New registers kedge's metrics in a fresh registry, with the Go runtime and
// process collectors. github, if not nil, is read at every scrape for the
// GitHub client's counters (forge.Client.Stats).
func New(github func() forge.Stats) *Metrics {
	m := &Metrics{
		registry: prometheus.NewRegistry(),
		driftedWorkloads: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Name: "drifted_workloads",
			Help: "Workloads with drifted pods in the last plan, by namespace and drift reason (a workload counts once per reason).",
		}, []string{"namespace", "reason"}),
		driftedPods: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Name: "drifted_pods",
			Help: "Drifted pods in the last plan, by namespace and the drift reasons of their workload, comma-separated (each pod counts once).",
		}, []string{"namespace", "reasons"}),
		skippedWorkloads: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Name: "skipped_workloads",
			Help: "Drifted workloads, and drifted pods without an owner, that kedge will not restart in the last plan, by namespace and skip reason.",
		}, []string{"namespace", "reason"}),
		pullRequests: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Name: "pull_requests",
			Help: "Namespaces by the state of their kedge pull request after the last cycle; a namespace applied from several repositories has a pull request, and counts, in each.",
		}, []string{"state"}),
		refusedFiles: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace, Name: "refused_files",
			Help: "Manifest files kedge found but would not edit safely, in the last cycle (a file counts once, however many namespaces it defines workloads of).",
		}),
		mismatch: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Name: "repository_mismatch",
			Help: "Namespaces whose drifted workloads the cluster applies from another repository than the configured one, by that repository, in the last cycle.",
		}, []string{"repository"}),
		cycleDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "cycle_duration_seconds",
			Help:    "Duration of reconcile cycles, by result (success, stale, error, aborted).",
			Buckets: []float64{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600},
		}, []string{"result"}),
		cycles: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "cycles_total",
			Help: "Reconcile cycles run, by what started them (start, mesh, resync) and result (success; stale: it read cluster caches that could not refresh; error; aborted).",
		}, []string{"trigger", "result"}),
		lastSuccess: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace, Name: "last_successful_cycle_timestamp_seconds",
			Help: "When the last successful cycle (no error, not stale) ended, as a Unix time.",
		}),
		triggers: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "mesh_changes_total",
			Help: "Mesh changes reported by the cluster source (injector webhooks, injector ConfigMaps, namespace labels).",
		}),
		triggerLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace, Name: "mesh_change_to_cycle_seconds",
			Help:    "Time from the first mesh change a cycle answers to the start of that cycle (debounce included).",
			Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 30, 60, 120},
		}),
		leader: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace, Name: "leader",
			Help: "1 while this instance holds the leader Lease and may write to Git and GitHub.",
		}),
		pushDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "git_push_duration_seconds",
			Help:    "Duration of each git push to a repository (branch updates and deletions; one observation per push), from connecting to the server's report or the failure, by result (pushed, failed).",
			Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"result"}),
	}
	m.registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.driftedWorkloads, m.driftedPods, m.skippedWorkloads, m.pullRequests, m.refusedFiles, m.mismatch,
		m.cycleDuration, m.cycles, m.lastSuccess, m.triggers, m.triggerLatency, m.leader, m.pushDuration,
	)
	if github != nil {
		m.registry.MustRegister(githubCollector{stats: github})
	}
	return m
}

// Registry is where the metrics live, for tests and extra collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.registry }

// Handler serves the metrics in the Prometheus exposition formats.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{Registry: m.registry})
}

// ObserveCycle records a finished cycle. report may be nil (the cycle
// failed before it had a plan); the last plan's gauges then stay as they
// were, because nothing newer is known.
func (m *Metrics) ObserveCycle(trigger string, report *reconcile.Report, err error, took time.Duration, end time.Time) {
	result := Result(err)
	m.cycles.WithLabelValues(trigger, result).Inc()
	m.cycleDuration.WithLabelValues(result).Observe(took.Seconds())
	if result == ResultSuccess {
		m.lastSuccess.Set(float64(end.UnixNano()) / 1e9)
	}
	if report == nil {
		return
	}
	// Reset first: a namespace that stopped drifting must not keep its
	// last value.
	m.driftedWorkloads.Reset()
	m.driftedPods.Reset()
	for _, w := range report.Plan.Workloads {
		reasons := make([]string, 0, len(w.Reasons))
		for _, r := range w.Reasons {
			m.driftedWorkloads.WithLabelValues(w.Namespace, string(r)).Inc()
			reasons = append(reasons, string(r))
		}
		// A pod drifts once whatever its reasons: summing its workload's
		// count under each reason would count it twice.
		slices.Sort(reasons)
		m.driftedPods.WithLabelValues(w.Namespace, strings.Join(slices.Compact(reasons), ",")).Add(float64(w.Pods.Drifted))
	}
	m.skippedWorkloads.Reset()
	for _, s := range report.Plan.Skipped {
		m.skippedWorkloads.WithLabelValues(s.Namespace, string(s.Reason)).Inc()
	}
	m.pullRequests.Reset()
	for _, o := range report.Outcomes {
		if o.State != "" {
			m.pullRequests.WithLabelValues(string(o.State)).Inc()
		}
	}
	// A file is refused once per namespace whose workloads it defines; it
	// is one file.
	files := map[string]bool{}
	for _, f := range report.Refused {
		files[f.Path] = true
	}
	m.refusedFiles.Set(float64(len(files)))
	m.mismatch.Reset()
	for _, f := range report.Mismatch.Foreign {
		m.mismatch.WithLabelValues(f.Repository).Set(float64(len(f.Namespaces)))
	}
}

// ObservePush records one git push (see gitrepo.Options.ObservePush): a
// cycle that pushes to two repositories makes two observations.
func (m *Metrics) ObservePush(took time.Duration, err error) {
	result := PushSucceeded
	if err != nil {
		result = PushFailed
	}
	m.pushDuration.WithLabelValues(result).Observe(took.Seconds())
}

// Results of a git push.
const (
	PushSucceeded = "pushed"
	PushFailed    = "failed"
)

// Result names how a cycle ended.
func Result(err error) string {
	switch {
	case err == nil:
		return ResultSuccess
	case errors.Is(err, cluster.ErrStale):
		return ResultStale
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return ResultAborted
	default:
		return ResultError
	}
}

// ObserveMeshChange counts a mesh change reported by the cluster source.
func (m *Metrics) ObserveMeshChange() { m.triggers.Inc() }

// ObserveMeshChangeLatency records how long after the first mesh change it
// answers a cycle started.
func (m *Metrics) ObserveMeshChangeLatency(d time.Duration) { m.triggerLatency.Observe(d.Seconds()) }

// SetLeader records whether this instance leads.
func (m *Metrics) SetLeader(leading bool) {
	if leading {
		m.leader.Set(1)
		return
	}
	m.leader.Set(0)
}

// githubCollector turns the GitHub client's counters into metrics at
// scrape time, so they are never stale and never double counted.
type githubCollector struct {
	stats func() forge.Stats
}

var (
	githubRequestsDesc = prometheus.NewDesc(namespace+"_github_requests_total",
		"HTTP requests sent to GitHub by method, retries and token mints included; answers from the ETag cache count as the 304 they were.",
		[]string{"method"}, nil)
	githubMutatingDesc = prometheus.NewDesc(namespace+"_github_mutating_requests_total",
		"Requests that changed something on GitHub.", nil, nil)
	githubNotModifiedDesc = prometheus.NewDesc(namespace+"_github_not_modified_total",
		"Conditional requests GitHub answered 304 Not Modified (free of rate limit).", nil, nil)
	githubTokenMintsDesc = prometheus.NewDesc(namespace+"_github_token_mints_total",
		"GitHub App installation tokens requested.", nil, nil)
	githubRetriesDesc = prometheus.NewDesc(namespace+"_github_retries_total",
		"GitHub calls repeated after a rate limit, a 5xx or a timeout.", nil, nil)
	githubRetryLaterDesc = prometheus.NewDesc(namespace+"_github_retry_later_total",
		"GitHub calls given up until the next cycle (rate limited for longer than kedge waits).", nil, nil)
	githubRateLimitDesc = prometheus.NewDesc(namespace+"_github_rate_limit",
		"GitHub's primary rate limit per window, as of the last answer that carried it.", nil, nil)
	githubRateRemainingDesc = prometheus.NewDesc(namespace+"_github_rate_limit_remaining",
		"Requests left in GitHub's primary rate limit window, as of the last answer that carried it.", nil, nil)
	githubRateResetDesc = prometheus.NewDesc(namespace+"_github_rate_limit_reset_timestamp_seconds",
		"When GitHub's primary rate limit window resets, as a Unix time.", nil, nil)
)

func (githubCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{
		githubRequestsDesc, githubMutatingDesc, githubNotModifiedDesc, githubTokenMintsDesc,
		githubRetriesDesc, githubRetryLaterDesc, githubRateLimitDesc, githubRateRemainingDesc, githubRateResetDesc,
	} {
		ch <- d
	}
}

func (c githubCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	for method, n := range s.Calls {
		ch <- prometheus.MustNewConstMetric(githubRequestsDesc, prometheus.CounterValue, float64(n), method)
	}
	ch <- prometheus.MustNewConstMetric(githubMutatingDesc, prometheus.CounterValue, float64(s.Mutating))
	ch <- prometheus.MustNewConstMetric(githubNotModifiedDesc, prometheus.CounterValue, float64(s.NotModified))
	ch <- prometheus.MustNewConstMetric(githubTokenMintsDesc, prometheus.CounterValue, float64(s.TokenMints))
	ch <- prometheus.MustNewConstMetric(githubRetriesDesc, prometheus.CounterValue, float64(s.Retries))
	ch <- prometheus.MustNewConstMetric(githubRetryLaterDesc, prometheus.CounterValue, float64(s.RetryLater))
	// Before GitHub has answered once the limit is unknown; a made-up
	// value would fire alerts.
	if s.RateLimit >= 0 {
		ch <- prometheus.MustNewConstMetric(githubRateLimitDesc, prometheus.GaugeValue, float64(s.RateLimit))
		ch <- prometheus.MustNewConstMetric(githubRateRemainingDesc, prometheus.GaugeValue, float64(s.RateRemaining))
		if !s.RateReset.IsZero() {
			ch <- prometheus.MustNewConstMetric(githubRateResetDesc, prometheus.GaugeValue, float64(s.RateReset.Unix()))
		}
	}
}
