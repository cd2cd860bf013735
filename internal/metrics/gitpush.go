package metrics

import (
	"context"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
)

// pushObserverKey carries the function a push reports its duration to.
type pushObserverKey struct{}

// WithPushObserver returns a context under which every git push made
// through an instrumented transport (InstrumentGitTransports) reports its
// duration to observe. The git layer passes the cycle's context down to the
// push, so each service instance sees its own pushes only.
func WithPushObserver(ctx context.Context, observe func(time.Duration)) context.Context {
	return context.WithValue(ctx, pushObserverKey{}, observe)
}

var instrumentOnce sync.Once

// InstrumentGitTransports wraps go-git's transports for http, https and
// file so that pushes can be timed. Fetches and clones pass through
// untouched. go-git keeps its transports in a process-wide table read
// without locks, so this must run before any git operation starts; later
// calls do nothing.
func InstrumentGitTransports() {
	instrumentOnce.Do(func() {
		for _, scheme := range []string{"http", "https", "file"} {
			if next, ok := client.Protocols[scheme]; ok && next != nil {
				client.InstallProtocol(scheme, timedTransport{next: next})
			}
		}
	})
}

// timedTransport times receive-pack sessions, i.e. pushes.
type timedTransport struct {
	next transport.Transport
}

func (t timedTransport) NewUploadPackSession(ep *transport.Endpoint, auth transport.AuthMethod) (transport.UploadPackSession, error) {
	return t.next.NewUploadPackSession(ep, auth)
}

func (t timedTransport) NewReceivePackSession(ep *transport.Endpoint, auth transport.AuthMethod) (transport.ReceivePackSession, error) {
	sess, err := t.next.NewReceivePackSession(ep, auth)
	if err != nil {
		return nil, err
	}
	return &timedSession{ReceivePackSession: sess, started: time.Now()}, nil
}

// timedSession measures from the start of the session (before the ref
// advertisement) to the server's report, which is what a push costs.
type timedSession struct {
	transport.ReceivePackSession
	started time.Time
}

func (s *timedSession) ReceivePack(ctx context.Context, req *packp.ReferenceUpdateRequest) (*packp.ReportStatus, error) {
	status, err := s.ReceivePackSession.ReceivePack(ctx, req)
	if observe, ok := ctx.Value(pushObserverKey{}).(func(time.Duration)); ok && observe != nil {
		observe(time.Since(s.started))
	}
	return status, err
}
