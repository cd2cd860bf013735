package forge_test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/go-github/v66/github"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kedge-io/kedge/internal/forge"
	"github.com/kedge-io/kedge/internal/testing/ghemu"
)

type outcome int

const (
	succeeds outcome = iota
	retryLater
	fails // a final error, not worth retrying in a later cycle as is
)

func TestRetryPolicy(t *testing.T) {
	getRepo := func(ctx context.Context, c *forge.Client, _ *ghemu.Server) error {
		_, err := c.DefaultBranch(ctx)
		return err
	}
	createIssue := func(ctx context.Context, c *forge.Client, _ *ghemu.Server) error {
		_, err := c.CreateIssue(ctx, forge.NewIssue{Title: "dash", Body: "b"})
		return err
	}
	createPR := func(ctx context.Context, c *forge.Client, emu *ghemu.Server) error {
		_, err := c.CreatePR(ctx, forge.NewPR{Title: "t", Head: "kedge/shop", Base: "main"})
		return err
	}
	postPulls := "/repos/*/*/pulls"
	postIssues := "/repos/*/*/issues"

	cases := []struct {
		name      string
		cfg       func(*forge.Config)
		prepare   func(t *testing.T, emu *ghemu.Server)
		faults    []ghemu.Fault
		run       func(context.Context, *forge.Client, *ghemu.Server) error
		ctxLimit  time.Duration
		want      outcome
		wantAfter time.Duration // of the RetryLaterError, to the second
		statuses  []int         // answers the emulator gave, in order
		minTime   time.Duration
		maxTime   time.Duration
	}{
		{
			name:     "5xx then success",
			faults:   []ghemu.Fault{ghemu.ServerError(http.StatusBadGateway)},
			run:      getRepo,
			statuses: []int{502, 200},
		},
		{
			name:     "5xx until retries run out",
			cfg:      func(c *forge.Config) { c.MaxRetries = 2 },
			faults:   []ghemu.Fault{ghemu.ServerError(503), ghemu.ServerError(503), ghemu.ServerError(503)},
			run:      getRepo,
			want:     retryLater,
			statuses: []int{503, 503, 503},
		},
		{
			name:     "timeout then success",
			cfg:      func(c *forge.Config) { c.RequestTimeout = 100 * time.Millisecond },
			faults:   []ghemu.Fault{ghemu.Delay(2 * time.Second)},
			run:      getRepo,
			statuses: []int{0, 200},
			maxTime:  time.Second,
		},
		{
			name:     "429 with a short Retry-After is waited out",
			faults:   []ghemu.Fault{ghemu.TooManyRequests(1)},
			run:      getRepo,
			statuses: []int{429, 200},
			minTime:  time.Second,
		},
		{
			name:      "429 with a long Retry-After is left to the next cycle",
			cfg:       func(c *forge.Config) { c.MaxRetryAfter = 2 * time.Second },
			faults:    []ghemu.Fault{ghemu.TooManyRequests(120)},
			run:       getRepo,
			want:      retryLater,
			wantAfter: 120 * time.Second,
			statuses:  []int{429},
			maxTime:   500 * time.Millisecond,
		},
		{
			name:     "secondary limit with a short Retry-After is waited out",
			faults:   []ghemu.Fault{ghemu.SecondaryRateLimit(1)},
			run:      getRepo,
			statuses: []int{403, 200},
			minTime:  time.Second,
		},
		{
			name:      "secondary limit with a long Retry-After",
			faults:    []ghemu.Fault{ghemu.SecondaryRateLimit(300)},
			run:       getRepo,
			want:      retryLater,
			wantAfter: 300 * time.Second,
			statuses:  []int{403},
			maxTime:   500 * time.Millisecond,
		},
		{
			name:      "primary limit exhausted for an hour",
			faults:    []ghemu.Fault{ghemu.PrimaryRateLimit(time.Now().Add(time.Hour))},
			run:       getRepo,
			want:      retryLater,
			wantAfter: time.Hour,
			statuses:  []int{403},
			maxTime:   500 * time.Millisecond,
		},
		{
			name:     "5xx on a create that is not idempotent is not repeated",
			faults:   []ghemu.Fault{ghemu.ServerError(502).For(http.MethodPost, postIssues)},
			run:      createIssue,
			want:     retryLater,
			statuses: []int{502},
		},
		{
			name:     "a rate limit on a create is repeated: nothing was created",
			faults:   []ghemu.Fault{ghemu.TooManyRequests(1).For(http.MethodPost, postIssues)},
			run:      createIssue,
			statuses: []int{429, 201},
			minTime:  time.Second,
		},
		{
			name: "5xx on create pull request is repeated; one already made is adopted",
			prepare: func(t *testing.T, emu *ghemu.Server) {
				// GitHub made it, but the answer was lost.
				_, _, err := ghClient(t, emu).PullRequests.Create(context.Background(), owner, repo, &github.NewPullRequest{
					Title: ptr("t"), Head: ptr("kedge/shop"), Base: ptr("main"),
				})
				require.NoError(t, err)
				emu.ResetCalls()
			},
			faults:   []ghemu.Fault{ghemu.ServerError(502).For(http.MethodPost, postPulls)},
			run:      createPR,
			statuses: []int{502, 422, 200},
		},
		{
			name: "validation error is final",
			run: func(ctx context.Context, c *forge.Client, _ *ghemu.Server) error {
				_, err := c.CreateIssue(ctx, forge.NewIssue{})
				return err
			},
			want:     fails,
			statuses: []int{422},
		},
		{
			name:     "bad credentials are final",
			cfg:      func(c *forge.Config) { c.Token = "ghp_revoked" },
			run:      getRepo,
			want:     fails,
			statuses: []int{401},
		},
		{
			name:     "the caller's deadline ends a wait",
			cfg:      func(c *forge.Config) { c.MaxRetryAfter = time.Minute },
			faults:   []ghemu.Fault{ghemu.TooManyRequests(30)},
			run:      getRepo,
			ctxLimit: 200 * time.Millisecond,
			want:     fails,
			statuses: []int{429},
			maxTime:  time.Second,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			emu, c := setup(t, nil, tc.cfg)
			emu.SetBranch("kedge/shop", sha("shop"))
			if tc.prepare != nil {
				tc.prepare(t, emu)
			}
			emu.QueueFault(tc.faults...)
			ctx := context.Background()
			if tc.ctxLimit > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.ctxLimit)
				defer cancel()
			}

			start := time.Now()
			err := tc.run(ctx, c, emu)
			elapsed := time.Since(start)

			var later *forge.RetryLaterError
			switch tc.want {
			case succeeds:
				require.NoError(t, err)
			case retryLater:
				require.True(t, errors.As(err, &later), "want *RetryLaterError, got %v", err)
				assert.Equal(t, tc.wantAfter.Round(time.Minute), later.After.Round(time.Minute))
				assert.InDelta(t, tc.wantAfter.Seconds(), later.After.Seconds(), 2)
			case fails:
				require.Error(t, err)
				assert.False(t, errors.As(err, &later), "%v", err)
			}
			// The emulator may still be recording a request the client
			// abandoned.
			require.Eventually(t, func() bool { return len(emu.Calls()) == len(tc.statuses) }, 3*time.Second, 10*time.Millisecond,
				"calls: %v", emu.Calls())
			var statuses []int
			for _, call := range emu.Calls() {
				statuses = append(statuses, call.Status)
			}
			assert.Equal(t, tc.statuses, statuses)
			assert.GreaterOrEqual(t, elapsed, tc.minTime)
			if tc.maxTime > 0 {
				assert.Less(t, elapsed, tc.maxTime)
			}
			assert.Equal(t, 0, emu.PendingFaults())
			if tc.name == "5xx on a create that is not idempotent is not repeated" {
				assert.Empty(t, emu.Issues())
			}
		})
	}
}

func TestTokenMintFailureIsRetried(t *testing.T) {
	key, keyFile := appKey(t)
	emu, _ := setup(t, func(o *ghemu.Options) {
		o.AppID, o.AppPublicKey, o.InstallationID = 1, &key.PublicKey, 2
	}, nil)
	emu.QueueFault(ghemu.ServerError(http.StatusInternalServerError).For(http.MethodPost, "/app/installations/*/access_tokens"))
	c, err := forge.New(context.Background(), forge.Config{
		APIURL: emu.URL, Owner: owner, Repo: repo, AppID: 1, InstallationID: 2, PrivateKeyFile: keyFile,
		HTTPClient: emu.Client(), RetryBackoff: 10 * time.Millisecond,
	})
	require.NoError(t, err)

	_, err = c.DefaultBranch(context.Background())
	require.NoError(t, err)
	var statuses []int
	for _, call := range emu.Calls() {
		statuses = append(statuses, call.Status)
	}
	assert.Equal(t, []int{500, 201, 200}, statuses)
	assert.Equal(t, int64(2), c.Stats().TokenMints)

	// A key GitHub refuses is final.
	_, otherFile := appKey(t)
	bad, err := forge.New(context.Background(), forge.Config{
		APIURL: emu.URL, Owner: owner, Repo: repo, AppID: 1, InstallationID: 2, PrivateKeyFile: otherFile, HTTPClient: emu.Client(),
	})
	require.NoError(t, err)
	_, err = bad.GitToken(context.Background())
	require.Error(t, err)
	var later *forge.RetryLaterError
	assert.False(t, errors.As(err, &later))
}

func TestMutationsAreSerialisedAndSpaced(t *testing.T) {
	const gap = 120 * time.Millisecond
	emu, c := setup(t, func(o *ghemu.Options) {
		// GitHub's secondary limit, scaled down: it refuses writes closer
		// than this.
		o.SecondaryMutationGap = 100 * time.Millisecond
	}, func(c *forge.Config) { c.MinMutationGap = gap })
	ctx := context.Background()
	n := emu.CreateIssueAsHuman("x", "")

	var wg sync.WaitGroup
	errs := make(chan error, 12)
	for i := range 4 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			errs <- c.Comment(ctx, n, "c")
		}()
		go func() {
			defer wg.Done()
			errs <- c.AddLabels(ctx, n, "l"+string(rune('a'+i)))
			// Reads are not held back by writes.
			_, err := c.ListComments(ctx, n)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}

	mutating := emu.MutatingCalls()
	require.Len(t, mutating, 8)
	for i := range mutating {
		assert.Less(t, mutating[i].Status, 300, "call %d was refused: %d", i, mutating[i].Status)
		if i == 0 {
			continue
		}
		assert.GreaterOrEqual(t, mutating[i].At.Sub(mutating[i-1].At), gap-5*time.Millisecond, "call %d", i)
	}
	assert.Len(t, emu.Comments(n), 4)
}
