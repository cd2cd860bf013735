package service

import (
	"bufio"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"
)

func logLines(t *testing.T, b *lockedBuffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(b.String()))
	for sc.Scan() {
		var line map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &line))
		out = append(out, line)
	}
	return out
}

func TestQuietAPIErrorsSummarisesAnOutage(t *testing.T) {
	const quiet = time.Minute
	cases := []struct {
		name string
		// errors are logged a second apart, then the clock moves on.
		errors    int
		wantLines []string // level and message of each line, in order
		wantCount float64
		wantLast  string
	}{
		{
			name:   "twenty-five retries during an outage are two lines",
			errors: 25,
			wantLines: []string{
				"WARN Kubernetes API errors: Failed to watch; further errors are counted until they stop",
				"INFO Attempting to acquire leader lease...",
				"WARN Kubernetes API errors stopped",
			},
			wantCount: 25, wantLast: "24s",
		},
		{
			name:   "a single error is one warning and its summary",
			errors: 1,
			wantLines: []string{
				"WARN Kubernetes API errors: Failed to watch; further errors are counted until they stop",
				"INFO Attempting to acquire leader lease...",
				"WARN Kubernetes API errors stopped",
			},
			wantCount: 1, wantLast: "0s",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fake := clocktesting.NewFakeClock(epoch)
			buf := &lockedBuffer{}
			log := slog.New(QuietAPIErrors(slog.NewJSONHandler(buf, nil), quiet, fake)).With("component", "client-go")
			for i := range tc.errors {
				if i > 0 {
					fake.Step(time.Second)
				}
				log.Error("Failed to watch", "err", errors.New("connection refused"), "reflector", "pods")
				if i == 0 {
					log.Info("Attempting to acquire leader lease...")
				}
			}
			fake.Step(quiet - time.Nanosecond)
			assert.Len(t, logLines(t, buf), 2, "no summary before the quiet time is over")
			fake.Step(time.Nanosecond)

			lines := logLines(t, buf)
			var got []string
			for _, l := range lines {
				got = append(got, l["level"].(string)+" "+l["msg"].(string))
			}
			assert.Equal(t, tc.wantLines, got)
			assert.Equal(t, "connection refused", lines[0]["err"], "the first error says what failed")
			assert.Equal(t, "client-go", lines[0]["component"])
			assert.Equal(t, tc.wantCount, lines[2]["errors"])
			assert.Equal(t, tc.wantLast, lines[2]["lasted"])

			// The next outage is reported afresh.
			log.Error("Failed to watch", "err", errors.New("connection refused"))
			assert.Len(t, logLines(t, buf), 4)
		})
	}
}
