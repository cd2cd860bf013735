package templated

import (
	"testing"

	"github.com/stretchr/testify/assert"
	yaml "go.yaml.in/yaml/v3"
)

func TestLine(t *testing.T) {
	tests := []struct {
		name string
		text string
		want int
	}{
		{name: "plain YAML", text: "kind: Deployment\nmetadata:\n  name: web\n"},
		{name: "a quoted template is a string", text: "kind: Deployment\nmetadata:\n  name: \"{{ .Release.Name }}\"\n"},
		{name: "in a comment", text: "# {{ .Values.x }}\nkind: Deployment\n"},
		{name: "in a block scalar", text: "data:\n  tpl: |\n    {{ .Values.x }}\n    {{- end }}\n"},
		{name: "an unquoted template does not parse", text: "kind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\n", want: 3},
		{name: "a control line", text: "{{- if .Values.enabled }}\nkind: Deployment\n{{- end }}\n", want: 1},
		{name: "CRLF", text: "kind: Deployment\r\nmetadata:\r\n  name: {{ .Release.Name }}\r\n", want: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var docs []*yaml.Node
			var n yaml.Node
			err := yaml.Unmarshal([]byte(tt.text), &n)
			if err == nil {
				docs = []*yaml.Node{&n}
			}
			assert.Equal(t, tt.want, Line([]byte(tt.text), docs, err == nil))
		})
	}
}
