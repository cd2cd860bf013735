package cluster

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
)

// ErrStale marks what was built from cluster caches that could not
// refresh: a cycle that ran on them did not fail, but it is no success
// either.
var ErrStale = errors.New("built on cluster caches that cannot refresh")

// cachedResource is what one informer lists and watches: a resource,
// cluster-wide or in one namespace, or only the objects of one name.
type cachedResource struct {
	group, resource, namespace, name string
}

func (r cachedResource) String() string {
	s := r.resource
	if r.group != "" {
		s += "." + r.group
	}
	if r.name != "" {
		s += " named " + r.name
	}
	if r.namespace != "" {
		return s + " in namespace " + r.namespace
	}
	return s + " cluster-wide"
}

// failure is a cache whose lists and watches fail: since when, and the
// last error.
type failure struct {
	since time.Time
	err   error
}

// StaleError names the caches that cannot refresh: a list or watch the
// API server forbids, or one that has failed for longer than the bound.
type StaleError struct {
	Caches []StaleCache
}

// StaleCache is one cache that cannot refresh.
type StaleCache struct {
	// Resource is what it lists and watches, e.g. "replicasets.apps
	// cluster-wide".
	Resource string
	// Since is when its lists and watches began to fail.
	Since time.Time
	// Forbidden is set when the API server refused them for lack of a
	// permission.
	Forbidden bool
	Err       error
}

func (e *StaleError) Error() string {
	parts := make([]string, len(e.Caches))
	for i, c := range e.Caches {
		why := "failing"
		if c.Forbidden {
			why = "forbidden"
		}
		parts[i] = fmt.Sprintf("%s: %s since %s: %v", c.Resource, why, c.Since.UTC().Format(time.RFC3339), c.Err)
	}
	return "the cluster caches cannot refresh: " + strings.Join(parts, "; ")
}

// Forbidden reports whether a cache cannot refresh for lack of a
// permission.
func (e *StaleError) Forbidden() bool {
	return slices.ContainsFunc(e.Caches, func(c StaleCache) bool { return c.Forbidden })
}

// Stale reports the caches that cannot refresh after their first sync: at
// once when the API server forbids their lists or watches (a permission
// was taken away while kedge ran), and when they have failed for longer
// than bound for any other reason (an API server away, a CRD removed). A
// cache refreshes again as soon as one of its lists or watches succeeds.
// Nil means every cache is being kept up to date.
func (l *Live) Stale(bound time.Duration, now time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var stale []StaleCache
	for r, f := range l.failures {
		forbidden := apierrors.IsForbidden(f.err) || apierrors.IsUnauthorized(f.err)
		if forbidden || now.Sub(f.since) > bound {
			stale = append(stale, StaleCache{Resource: r.String(), Since: f.since, Forbidden: forbidden, Err: f.err})
		}
	}
	if len(stale) == 0 {
		return nil
	}
	slices.SortFunc(stale, func(a, b StaleCache) int { return strings.Compare(a.Resource, b.Resource) })
	return &StaleError{Caches: stale}
}

// OnHealthChange registers fn to be called when a cache's lists or watches
// begin to fail or succeed again, so its user need not wait for its next
// check. fn runs on an informer or HTTP goroutine and must not block.
func (l *Live) OnHealthChange(fn func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.healthListeners = append(l.healthListeners, fn)
}

// failed records a failed list or watch of r.
func (l *Live) failed(r cachedResource, err error) {
	l.mu.Lock()
	f, was := l.failures[r]
	if !was {
		f.since = time.Now()
	}
	f.err = err
	l.failures[r] = f
	listeners := slices.Clone(l.healthListeners)
	l.mu.Unlock()
	for _, fn := range listeners {
		fn()
	}
}

// succeeded records that the API server answered a list or watch of r.
func (l *Live) succeeded(r cachedResource) {
	l.mu.Lock()
	_, was := l.failures[r]
	delete(l.failures, r)
	listeners := slices.Clone(l.healthListeners)
	l.mu.Unlock()
	if was {
		for _, fn := range listeners {
			fn()
		}
	}
}

// observeAnswers wraps the informers' transport: an answered list or watch
// of a collection is how a failing cache is known to refresh again. The
// informers' own error handler sees failures, never successes.
func (l *Live) observeAnswers(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		if err == nil && req.Method == http.MethodGet && resp.StatusCode >= 200 && resp.StatusCode < 300 {
			if r, ok := collectionOf(req.URL); ok {
				l.succeeded(r)
			}
		}
		return resp, err
	})
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// collectionOf is the collection a request lists or watches: /api/v1/pods,
// /api/v1/namespaces/NS/configmaps, /apis/GROUP/VERSION/RESOURCE,
// /apis/GROUP/VERSION/namespaces/NS/RESOURCE, narrowed to one name by a
// fieldSelector of metadata.name alone, as a named cache's informer asks.
// A single object's path, discovery and anything else is not one.
func collectionOf(u *url.URL) (cachedResource, bool) {
	var r cachedResource
	s := strings.Split(strings.Trim(u.Path, "/"), "/")
	switch {
	case len(s) == 3 && s[0] == "api":
		r = cachedResource{resource: s[2]}
	case len(s) == 5 && s[0] == "api" && s[2] == "namespaces":
		r = cachedResource{namespace: s[3], resource: s[4]}
	case len(s) == 4 && s[0] == "apis":
		r = cachedResource{group: s[1], resource: s[3]}
	case len(s) == 6 && s[0] == "apis" && s[3] == "namespaces":
		r = cachedResource{group: s[1], namespace: s[4], resource: s[5]}
	default:
		return cachedResource{}, false
	}
	if selector, err := fields.ParseSelector(u.Query().Get("fieldSelector")); err == nil {
		if name, ok := selector.RequiresExactMatch("metadata.name"); ok && len(selector.Requirements()) == 1 {
			r.name = name
		}
	}
	return r, true
}
