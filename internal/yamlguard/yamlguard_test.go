package yamlguard

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const laughs = `a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
`

const deployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: cart
  annotations:
    traffic.sidecar.istio.io/includeOutboundIPRanges: "*"
spec:
  template:
    spec:
      containers:
        - name: a
          resources: &res {limits: {cpu: "1"}}
        - name: b
          resources: *res
        - name: c
          env:
            - <<: &env {name: X, value: "*/5 * * * *"}
            - *env
`

func nested(depth int, open, close string) string {
	return "a: " + strings.Repeat(open, depth) + "x" + strings.Repeat(close, depth) + "\n"
}

func blockNested(depth int) string {
	var b strings.Builder
	for i := range depth {
		b.WriteString(strings.Repeat(" ", i) + "k:\n")
	}
	b.WriteString(strings.Repeat(" ", depth) + "v\n")
	return b.String()
}

// manyLaughs repeats a small expansion in n documents: each stays under the
// slack alone, together they would not.
func manyLaughs(n int) string {
	doc := "a: &a [" + strings.Repeat(`"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",`, 40) + "x]\n" +
		"b: &b [" + strings.Repeat("*a,", 29) + "*a]\n" +
		"c: [*b,*b,*b]\n"
	return strings.Repeat("---\n"+doc, n)
}

func TestCheck(t *testing.T) {
	cases := []struct {
		name   string
		data   string
		limits Limits
		budget string // empty: within budget
	}{
		{name: "a manifest with a few anchors", data: deployment, limits: Repository},
		{name: "billion laughs", data: laughs, limits: Repository, budget: "aliasing"},
		{name: "billion laughs, aliases only", data: laughs, limits: AliasesOnly, budget: "aliasing"},
		{name: "small expansions adding up over documents", data: manyLaughs(20), limits: Repository, budget: "aliasing"},
		{name: "one small expansion", data: manyLaughs(1), limits: Repository},
		// The mapping, the sequences and the scalar: MaxDepth levels.
		{name: "flow nesting at the budget", data: nested(MaxDepth-2, "[", "]"), limits: Repository},
		{name: "flow nesting beyond the budget", data: nested(MaxDepth+1, "{a: ", "}"), limits: Repository, budget: "depth"},
		{name: "block nesting beyond the budget", data: blockNested(MaxDepth + 1), limits: Repository, budget: "depth"},
		{name: "deep nesting without a depth budget", data: nested(MaxDepth+1, "[", "]"), limits: AliasesOnly},
		{name: "too large", data: strings.Repeat("# comment\n", MaxFileBytes/10+1), limits: Repository, budget: "size"},
		{name: "large without a size budget", data: strings.Repeat("# comment\n", MaxFileBytes/10+1), limits: AliasesOnly},
		{name: "not YAML is not judged", data: "a: [\nb: {", limits: Repository},
		{name: "an alias of an unknown anchor is not judged", data: "a: *nowhere\n", limits: Repository},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := Check([]byte(c.data), c.limits)
			if c.budget == "" {
				require.NoError(t, err)
				return
			}
			var e *Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, c.budget, e.Budget)
			assert.Greater(t, e.Found, e.Limit)
			assert.True(t, IsOverBudget(err))
		})
	}
}

func TestErrorNamesTheBudget(t *testing.T) {
	cases := []struct {
		err  *Error
		want string
	}{
		{&Error{Budget: "size", Found: 9, Limit: 8}, "file of 9 bytes exceeds the budget of 8 bytes"},
		{&Error{Budget: "aliasing", Found: 9, Limit: 8}, "excessive aliasing: aliases expand the content to 9 bytes, beyond the budget of 8"},
		{&Error{Budget: "depth", Found: 9, Limit: 8}, "nesting depth 9 exceeds the budget of 8"},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, c.err.Error())
	}
}

func TestMayHaveAlias(t *testing.T) {
	cases := []struct {
		data string
		want bool
	}{
		{"a: *b\n", true},
		{"[*a,*a]", true},
		{"{\"k\":*a}", true},
		{"*a", true},
		{"\xef\xbb\xbf*a", true},
		{"a: \"*\"\n", false},
		{"a: '*.example.com'\n", false},
		{"a: b*c\n", false},
		{"a: b\n", false},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, MayHaveAlias([]byte(c.data)), "%q", c.data)
	}
}

func TestReadAll(t *testing.T) {
	data, err := ReadAll(strings.NewReader("12345678"), 8)
	require.NoError(t, err)
	assert.Equal(t, "12345678", string(data))
	_, err = ReadAll(strings.NewReader("123456789"), 8)
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, "size", e.Budget)
	data, err = ReadAll(bytes.NewReader(make([]byte, 100)), 0)
	require.NoError(t, err)
	assert.Len(t, data, 100)
}

// BenchmarkCheck measures the guard on an ordinary manifest, the price every
// file of a repository pays once.
func BenchmarkCheck(b *testing.B) {
	data := []byte(strings.Repeat("---\n"+deployment, 10))
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if err := Check(data, Repository); err != nil {
			b.Fatal(err)
		}
	}
}
