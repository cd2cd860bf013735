package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestParseBenchmarks(t *testing.T) {
	tests := []struct {
		name string
		out  string
		want benchResults
	}{
		{
			name: "one line per run",
			out:  "goos: linux\nBenchmarkCycleUnchanged-2   \t       1\t2599202907 ns/op\t         0 pushes\t 6 reads\nPASS\n",
			want: benchResults{"BenchmarkCycleUnchanged": {{"ns/op": 2599202907, "pushes": 0, "reads": 6}}},
		},
		{
			name: "a run whose log splits the line",
			out: "BenchmarkMeshChangeToPR-2   \tI1122 08:20:01 shared_informer.go:1011] resync period\n" +
				"W1122 08:20:02 something else\n" +
				"       1\t47452905960 ns/op\t        10.00 debounce-s\n" +
				"BenchmarkMeshChangeToPR-2   \t       1\t47393594037 ns/op\t        10.00 debounce-s\n",
			want: benchResults{"BenchmarkMeshChangeToPR": {
				{"ns/op": 47452905960, "debounce-s": 10},
				{"ns/op": 47393594037, "debounce-s": 10},
			}},
		},
		{
			name: "log lines alone are not results",
			out:  "I1122 08:20:01 shared_informer.go:1011] 1 2 3\nok  \tpkg\t12.3s\n",
			want: benchResults{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, parseBenchmarks([]byte(tt.out)))
		})
	}
}
