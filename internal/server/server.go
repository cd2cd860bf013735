// Package server is kedge's operations endpoint: /healthz (the process
// answers), /readyz (the named readiness checks have all passed: first
// informer sync, GitHub authentication) and /metrics.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// Readiness checks the service must pass before /readyz answers 200.
const (
	// CheckPermissions fails while the cluster credentials lack a
	// permission kedge needs; it exists once first checked.
	CheckPermissions = "permissions"
	CheckInformers   = "informers"
	CheckGitHub      = "github"
)

// Readiness tracks named checks. A check is pending until Set records its
// outcome; the service is ready when every check has passed.
type Readiness struct {
	mu     sync.Mutex
	checks map[string]checkState
}

type checkState struct {
	done bool
	err  error
}

// NewReadiness returns a Readiness with the named checks pending.
func NewReadiness(checks ...string) *Readiness {
	r := &Readiness{checks: map[string]checkState{}}
	for _, c := range checks {
		r.checks[c] = checkState{}
	}
	return r
}

// Set records the outcome of a check: nil passes it, an error fails it.
func (r *Readiness) Set(check string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.checks[check] = checkState{done: true, err: err}
}

// Ready reports whether every check passed and, if not, one line per check
// that has not, sorted.
func (r *Readiness) Ready() (bool, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var failing []string
	for name, c := range r.checks {
		switch {
		case !c.done:
			failing = append(failing, name+": pending")
		case c.err != nil:
			failing = append(failing, name+": "+c.err.Error())
		}
	}
	slices.Sort(failing)
	return len(failing) == 0, failing
}

// Server serves the operations endpoint.
type Server struct {
	ready   *Readiness
	metrics http.Handler
	log     *slog.Logger
}

// New returns a Server; metrics serves /metrics (nil: not found).
func New(ready *Readiness, metrics http.Handler, log *slog.Logger) *Server {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Server{ready: ready, metrics: metrics, log: log}
}

// Handler routes the three endpoints.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeText(w, http.StatusOK, "ok\n")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		ok, failing := s.ready.Ready()
		if !ok {
			writeText(w, http.StatusServiceUnavailable, "not ready\n"+strings.Join(failing, "\n")+"\n")
			return
		}
		writeText(w, http.StatusOK, "ok\n")
	})
	if s.metrics != nil {
		mux.Handle("GET /metrics", s.metrics)
	}
	return mux
}

func writeText(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body))
}

// shutdownTimeout bounds how long in-flight scrapes may delay exit.
const shutdownTimeout = 5 * time.Second

// Listen binds addr (":8080", "127.0.0.1:0"). The listener is returned so
// callers, tests above all, learn the port before serving.
func Listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("server.address %q: %w", addr, err)
	}
	return ln, nil
}

// Serve answers on ln until ctx ends, then shuts down gracefully.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	s.log.Info("serving /healthz, /readyz and /metrics", "address", ln.Addr().String())
	select {
	case err := <-errc:
		return fmt.Errorf("server: %w", err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("server: shutdown: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("server: %w", err)
	}
	return nil
}
