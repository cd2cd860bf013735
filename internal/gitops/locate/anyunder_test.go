package locate

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestAnyUnderMatchesAScan(t *testing.T) {
	sorted := []string{"apps/a", "apps/a-b", "apps/a.c", "apps/a/x", "apps/a/y/z", "apps/b", "tenants/t1"}
	cases := []struct {
		dir  string
		want bool
	}{
		{".", true},
		{"apps", true},
		{"apps/a", true},
		{"apps/a/x", true},
		{"apps/a/y", true},
		{"apps/a-", false},
		{"apps/c", false},
		{"tenants", true},
		{"tenants/t", false},
		{"zzz", false},
	}
	for _, tc := range cases {
		scan := false
		for _, p := range sorted {
			scan = scan || under(p, tc.dir)
		}
		assert.Equal(t, tc.want, scan, "the scan for %q", tc.dir)
		assert.Equal(t, tc.want, anyUnder(sorted, tc.dir), "anyUnder(%q)", tc.dir)
	}
	assert.False(t, anyUnder(nil, "."))
}
