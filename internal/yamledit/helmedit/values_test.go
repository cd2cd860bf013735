package helmedit

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const appHead = "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: web\nspec:\n  source:\n    path: charts/web\n"

var restartSet = map[string]string{"kedge.io/restart": "abc"}

func TestSetChartValues(t *testing.T) {
	tests := []struct {
		name, in, want string
		at             string
		path           []string
		wantErr        string
	}{
		{
			name: "no helm block", at: "spec.source.helm.valuesObject", path: []string{"podAnnotations"},
			in:   appHead,
			want: appHead + "    helm:\n      valuesObject:\n        podAnnotations:\n          kedge.io/restart: \"abc\"\n",
		},
		{
			name: "a component's map among other values, comments kept", at: "spec.source.helm.valuesObject", path: []string{"web", "podAnnotations"},
			in:   appHead + "    helm:\n      valuesObject:\n        web:   # the front end\n          replicas: 2\n\n        db: {}\n",
			want: appHead + "    helm:\n      valuesObject:\n        web:   # the front end\n          replicas: 2\n          podAnnotations:\n            kedge.io/restart: \"abc\"\n\n        db: {}\n",
		},
		{
			name: "a later value replaces the earlier one in place", at: "spec.sources[0].helm.valuesObject", path: []string{"podAnnotations"},
			in:   "kind: Application\nmetadata:\n  name: web\nspec:\n  sources:\n    - path: charts/web\n      helm:\n        valuesObject:\n          podAnnotations:\n            kedge.io/restart: \"old\"\n            team: web\n",
			want: "kind: Application\nmetadata:\n  name: web\nspec:\n  sources:\n    - path: charts/web\n      helm:\n        valuesObject:\n          podAnnotations:\n            kedge.io/restart: \"abc\"\n            team: web\n",
		},
		{
			name: "a value of another shape", at: "spec.source.helm.valuesObject", path: []string{"podAnnotations"},
			in:      appHead + "    helm:\n      valuesObject:\n        podAnnotations: enabled\n",
			wantErr: "podAnnotations",
		},
		{name: "not an Application", at: "spec.source.helm.valuesObject", path: []string{"podAnnotations"}, in: "kind: ConfigMap\n", wantErr: "not a Application document"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, changed, err := SetChartValues([]byte(tt.in), 0, ValuesMap{Kind: "Application", At: tt.at}, tt.path, restartSet)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.True(t, changed)
			assert.Equal(t, tt.want, string(out))
			again, changed, err := SetChartValues(out, 0, ValuesMap{Kind: "Application", At: tt.at}, tt.path, restartSet)
			require.NoError(t, err)
			assert.False(t, changed, "a rerun changes nothing")
			assert.Equal(t, string(out), string(again))
		})
	}
}

func TestSetChartValuesText(t *testing.T) {
	m := ValuesMap{Kind: "Application", At: "spec.source.helm.values"}
	tests := []struct {
		name, in, want string
		path           []string
		wantErr        string
	}{
		{
			name: "a new key in the text, the rest kept byte for byte", path: []string{"podAnnotations"},
			in:   appHead + "    helm:\n      values: |\n        # sizes\n        replicas: 2\n\n        image:\n          tag: 1.2.3\n    targetRevision: main\n",
			want: appHead + "    helm:\n      values: |\n        # sizes\n        replicas: 2\n\n        image:\n          tag: 1.2.3\n        podAnnotations:\n          kedge.io/restart: \"abc\"\n    targetRevision: main\n",
		},
		{
			name: "a component's map, strip chomping, CRLF", path: []string{"web", "podAnnotations"},
			in:   "kind: Application\r\nmetadata:\r\n  name: web\r\nspec:\r\n  source:\r\n    helm:\r\n      values: |-\r\n        web:\r\n          podAnnotations:\r\n            team: a\r\n        db: {}\r\n",
			want: "kind: Application\r\nmetadata:\r\n  name: web\r\nspec:\r\n  source:\r\n    helm:\r\n      values: |-\r\n        web:\r\n          podAnnotations:\r\n            team: a\r\n            kedge.io/restart: \"abc\"\r\n        db: {}\r\n",
		},
		{
			name: "a block that ends the file", path: []string{"podAnnotations"},
			in:   appHead + "    helm:\n      values: |-\n        replicas: 2\n",
			want: appHead + "    helm:\n      values: |-\n        replicas: 2\n        podAnnotations:\n          kedge.io/restart: \"abc\"\n",
		},
		{
			name: "a block that ends the file without a line break", path: []string{"podAnnotations"},
			in:      appHead + "    helm:\n      values: |-\n        replicas: 2",
			wantErr: "without a line break",
		},
		{
			name: "a folded block", path: []string{"podAnnotations"},
			in:      appHead + "    helm:\n      values: >\n        replicas: 2\n",
			wantErr: "not a literal block scalar",
		},
		{
			name: "a block with an explicit indent", path: []string{"podAnnotations"},
			in:      appHead + "    helm:\n      values: |2\n          replicas: 2\n",
			wantErr: "block header",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, changed, err := SetChartValuesText([]byte(tt.in), 0, m, tt.path, restartSet)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.True(t, changed)
			assert.Equal(t, tt.want, string(out))
			_, changed, err = SetChartValuesText(out, 0, m, tt.path, restartSet)
			require.NoError(t, err)
			assert.False(t, changed, "a rerun changes nothing")
		})
	}
}

func TestSetChartParameter(t *testing.T) {
	m := ValuesMap{Kind: "Application", At: "spec.source.helm"}
	params := appHead + "    helm:\n      parameters:\n        - name: image.tag   # pinned\n          value: \"1.2\"\n"
	tests := []struct {
		name, in, want string
		wantErr        string
	}{
		{
			name: "appended after the last item",
			in:   params + "    targetRevision: main\n",
			want: params + "        - name: 'podAnnotations.kedge\\.io/restart'\n          value: \"abc\"\n          forceString: true\n    targetRevision: main\n",
		},
		{
			name: "kedge's item updated in place",
			in:   params + "        - name: 'podAnnotations.kedge\\.io/restart'\n          value: \"old\"\n          forceString: true\n",
			want: params + "        - name: 'podAnnotations.kedge\\.io/restart'\n          value: \"abc\"\n          forceString: true\n",
		},
		{
			name:    "an item of that name the team wrote without forceString",
			in:      params + "        - name: podAnnotations.kedge\\.io/restart\n          value: \"1\"\n",
			wantErr: "not a string parameter",
		},
		{name: "no parameters", in: appHead + "    helm:\n      releaseName: web\n", wantErr: "parameters is missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, changed, err := SetChartParameter([]byte(tt.in), 0, m, `podAnnotations.kedge\.io/restart`, "abc")
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.True(t, changed)
			assert.Equal(t, tt.want, string(out))
			_, changed, err = SetChartParameter(out, 0, m, `podAnnotations.kedge\.io/restart`, "abc")
			require.NoError(t, err)
			assert.False(t, changed, "a rerun changes nothing")
		})
	}
}
