package service

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kedge-io/kedge/internal/cluster"
	"github.com/kedge-io/kedge/internal/server"
)

// DefaultStaleAfter is how long a cache's lists and watches may fail for
// a reason other than a permission (an API server restarting, a network
// partition) before the service says its caches are stale. A forbidden
// list or watch is stale at once: it does not heal by waiting.
const DefaultStaleAfter = time.Minute

// The state of the cluster caches once they have synced, as the last
// health check found it. Guarded by Service.healthMu.
type healthState struct {
	// reported are the permissions logged as missing, each once until
	// granted again.
	reported map[cluster.Permission]bool
	// checkFailed is set while the permission check itself fails (the API
	// server away), so that is logged once.
	checkFailed bool
	// staleCaches is the last Source.Stale answer that was logged.
	staleCaches error
}

// watchHealth checks the caches and the permissions until ctx ends: each
// permission every PermissionRecheck, as at startup, and the caches at
// once when the source says one began to fail or refreshed, and at least
// four times per StaleAfter so a failure that outlasts it is seen.
func (s *Service) watchHealth(ctx context.Context) {
	nextPermissions := s.clock.Now().Add(s.cfg.PermissionRecheck)
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.healthChanged:
		case <-s.clock.After(min(s.cfg.PermissionRecheck, s.cfg.StaleAfter/4)):
		}
		recheck := !s.clock.Now().Before(nextPermissions)
		if recheck {
			nextPermissions = s.clock.Now().Add(s.cfg.PermissionRecheck)
		}
		s.checkHealth(ctx, recheck)
	}
}

// checkHealth updates /readyz, the log and the service's stale cause from
// what the caches report and, with permissions, from a new permission
// check. It returns why cycles would now be stale, nil when they would
// not.
func (s *Service) checkHealth(ctx context.Context, permissions bool) error {
	s.healthMu.Lock()
	defer s.healthMu.Unlock()
	h := &s.health
	if permissions {
		s.recheckPermissions(ctx, h)
	}

	var caches error
	if s.cfg.Source != nil {
		caches = s.cfg.Source.Stale(s.cfg.StaleAfter, time.Now())
	}
	s.ready.Set(server.CheckInformers, caches)
	switch {
	case caches != nil && (h.staleCaches == nil || caches.Error() != h.staleCaches.Error()):
		s.log.Warn("the cluster caches cannot refresh: cycles are stale until they do", "error", caches.Error())
	case caches == nil && h.staleCaches != nil:
		s.log.Info("the cluster caches refresh again")
	}
	h.staleCaches = caches

	var missing []cluster.Permission
	for p := range h.reported {
		if p.GrantedBy == cluster.ReadRBAC {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		return &cluster.MissingPermissionsError{Missing: sortedPermissions(missing)}
	}
	return caches
}

// recheckPermissions asks again for every permission kedge needs, as at
// startup, with the same words: each newly missing one is logged once,
// and their return.
func (s *Service) recheckPermissions(ctx context.Context, h *healthState) {
	missing, err := s.missingPermissions(ctx)
	if err != nil {
		if !h.checkFailed && ctx.Err() == nil {
			s.log.Warn("cannot check kedge's permissions; retrying", "error", err.Error(), "retryIn", s.cfg.PermissionRecheck.String())
		}
		h.checkFailed = ctx.Err() == nil
		return
	}
	h.checkFailed = false
	s.reportPermissions(h, missing, true)
}

// reportPermissions records a permission check in /readyz and logs each
// permission the first time it is found missing, with what kedge cannot
// do without it (wait, at startup; refresh its caches or keep the Lease,
// once running), and once all are granted again. Callers hold
// s.healthMu.
func (s *Service) reportPermissions(h *healthState, missing []cluster.Permission, running bool) {
	if len(missing) == 0 {
		s.ready.Set(server.CheckPermissions, nil)
		if len(h.reported) > 0 {
			s.log.Info("the missing permissions were granted")
		}
		clear(h.reported)
		return
	}
	s.ready.Set(server.CheckPermissions, &cluster.MissingPermissionsError{Missing: missing})
	now := map[cluster.Permission]bool{}
	for _, p := range missing {
		now[p] = true
		if !h.reported[p] {
			why := "missing permission: kedge waits until it is granted"
			switch {
			case running && p.GrantedBy == cluster.ReadRBAC:
				why = "missing permission: kedge's cluster caches cannot refresh and its cycles are stale until it is granted"
			case running:
				why = "missing permission: this replica cannot take or keep the Lease until it is granted"
			}
			s.log.Error(why, "permission", p.String())
		}
	}
	for p := range h.reported {
		if !now[p] {
			s.log.Info("a permission kedge lacked was granted", "permission", p.String())
		}
	}
	h.reported = now
}

// staleCycle is the error a cycle that otherwise succeeded ends with when
// it read caches that could not refresh: cause says why.
func staleCycle(cause error) error {
	return fmt.Errorf("%w: %w", cluster.ErrStale, cause)
}

// isStale reports whether a cycle ended on stale caches.
func isStale(err error) bool { return errors.Is(err, cluster.ErrStale) }

func sortedPermissions(ps []cluster.Permission) []cluster.Permission {
	return slices.SortedFunc(slices.Values(ps), func(a, b cluster.Permission) int { return strings.Compare(a.String(), b.String()) })
}
