package editcheck

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestValuesLinesOfAPatch(t *testing.T) {
	keys := []string{"kedge.io/restart", "kedge.io/restart-target"}
	tests := []struct {
		name  string
		added []string
		chain bool
		param bool
	}{
		{name: "new mappings down to the annotations", chain: true,
			added: []string{"    helm:", "      valuesObject:", "        podAnnotations:", `          kedge.io/restart: "1"`}},
		{name: "two components' values in one tree", chain: true,
			added: []string{"    helm:", "      valuesObject:", "        web:", "          podAnnotations:", `            kedge.io/restart: "1"`,
				"        worker:", "          podAnnotations:", `            kedge.io/restart: "2"`}},
		{name: "a mapping left empty", added: []string{"        web:", "          podAnnotations:", `            kedge.io/restart: "1"`, "        worker:"}},
		{name: "annotations beside the first mapping", added: []string{"        podAnnotations:", `          kedge.io/restart: "1"`, `        kedge.io/restart: "1"`}},
		{name: "a mapping holding another value", added: []string{"        web:", "          replicas: 2", `          kedge.io/restart: "1"`}},
		{name: "a mapping that is not inside the one before", added: []string{"        web:", "        podAnnotations:", `          kedge.io/restart: "1"`}},
		{name: "annotations outside the mapping", added: []string{"        podAnnotations:", `        kedge.io/restart: "1"`}},
		{name: "string parameters of the annotations", param: true,
			added: []string{`  - name: 'podAnnotations.kedge\.io/restart'`, `    value: "1"`, "    forceString: true"}},
		{name: "a parameter that is not a string", added: []string{`  - name: 'podAnnotations.kedge\.io/restart'`, `    value: "1"`}},
		{name: "a parameter of another value", added: []string{"  - name: replicas", `    value: "1"`, "    forceString: true"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.chain, isValuesChain(tt.added, keys))
			assert.Equal(t, tt.param, isParameterEntries(tt.added, keys))
		})
	}
}
