package dashboard

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kedge-io/kedge/internal/prstate"
)

func TestPRBodyStateReadsBack(t *testing.T) {
	r, err := NewRenderer("")
	require.NoError(t, err)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.fixture()
			body, err := r.PRBody(f.pr)
			require.NoError(t, err)
			s, ok := prstate.ParseState(body)
			require.True(t, ok)
			assert.Equal(t, f.pr.State.Normalized(), *s)
		})
	}
}

func TestZeroStateIsDerivedFromTheFixableWorkloads(t *testing.T) {
	r, err := NewRenderer("")
	require.NoError(t, err)
	f := typical()
	want := f.pr.State
	f.pr.State = prstate.State{}
	body, err := r.PRBody(f.pr)
	require.NoError(t, err)
	s, ok := prstate.ParseState(body)
	require.True(t, ok)
	assert.Equal(t, want, *s)
}
