package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestReposSection(t *testing.T) {
	run := map[string]float64{
		"new-PRs": 1000, "first-pushes/repo-min": 1, "first-pushes/repo-max": 1,
		"first-reads/repo": 1.15, "first-reads/repo-max": 3, "first-reads-304/repo": 0,
		"first-mutating/repo": 100.1, "first-mutating/repo-max": 102, "first-app-calls": 2, "first-s": 20,
		"second-pushes/repo-min": 0, "second-pushes/repo-max": 0, "second-reads/repo": 1.05, "second-reads/repo-max": 2,
		"second-mutating/repo": 0, "second-mutating/repo-max": 0, "second-app-calls": 0, "second-s": 15,
		"floor-push-s": 4,
	}
	tests := []struct {
		name   string
		report report
		want   []string
	}{
		{
			name:   "not measured",
			report: report{Bench: benchResults{}},
		},
		{
			name: "measured",
			report: report{
				Bench: benchResults{reposBenchmark: {run}},
				Repos: &reposRun{LoadBefore: "1.00 / 2.00 / 3.00", LoadAfter: "4.00 / 5.00 / 6.00"},
			},
			want: []string{
				"whose 1000 namespaces",
				"| first: clones, opens 1000 PRs | 1–1 | 1.15 / 3 (0.00) | 100.1 / 102 | 2 | 20.0 s |",
				"| second: nothing changed | 0–0 | 1.05 / 2 (0.00) | 0.0 / 0 | 0 | 15.0 s |",
				"one push per repository: 4.0 s; the first cycle takes 5.0× that",
				"Runs (first cycle / second cycle / floor): 20.0 s / 15.0 s / 4.0 s.",
				"before: 1.00 / 2.00 / 3.00; after: 4.00 / 5.00 / 6.00",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.report.reposSection()
			if tt.want == nil {
				assert.Empty(t, got)
			}
			for _, want := range tt.want {
				assert.Contains(t, got, want)
			}
		})
	}
}
