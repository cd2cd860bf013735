package cluster

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
)

func TestCollectionOf(t *testing.T) {
	cases := []struct {
		path string
		want cachedResource
		ok   bool
	}{
		{path: "/api/v1/pods", want: cachedResource{resource: "pods"}, ok: true},
		{path: "/api/v1/namespaces", want: cachedResource{resource: "namespaces"}, ok: true},
		{path: "/api/v1/namespaces/istio-system/configmaps", want: cachedResource{resource: "configmaps", namespace: "istio-system"}, ok: true},
		{path: "/apis/apps/v1/replicasets", want: cachedResource{group: "apps", resource: "replicasets"}, ok: true},
		{path: "/apis/argoproj.io/v1alpha1/namespaces/shop/rollouts", want: cachedResource{group: "argoproj.io", resource: "rollouts", namespace: "shop"}, ok: true},
		{path: "/api/v1/configmaps?fieldSelector=metadata.name%3Distio-cni-config&watch=true", want: cachedResource{resource: "configmaps", name: "istio-cni-config"}, ok: true},
		{path: "/api/v1/configmaps?fieldSelector=metadata.name%3Dx%2Cmetadata.namespace%3Dy", want: cachedResource{resource: "configmaps"}, ok: true},
		{path: "/api/v1/configmaps?fieldSelector=metadata.name%21%3Dx", want: cachedResource{resource: "configmaps"}, ok: true},
		{path: "/api/v1/namespaces/shop"},
		{path: "/apis/apps/v1/namespaces/shop/deployments/cart"},
		{path: "/apis"},
		{path: "/apis/apps/v1"},
		{path: "/version"},
	}
	for _, tc := range cases {
		u, err := url.Parse(tc.path)
		require.NoError(t, err)
		got, ok := collectionOf(u)
		assert.Equal(t, tc.ok, ok, tc.path)
		assert.Equal(t, tc.want, got, tc.path)
	}
}

func TestStaleNamesWhatCannotRefresh(t *testing.T) {
	l := &Live{failures: map[cachedResource]failure{}}
	var told int
	l.OnHealthChange(func() { told++ })
	replicaSets := cachedResource{group: "apps", resource: "replicasets"}
	pods := cachedResource{resource: "pods"}
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "replicasets"}, "", errors.New(`User "system:serviceaccount:kedge:kedge" cannot watch resource "replicasets"`))
	refused := errors.New("dial tcp 127.0.0.1:6443: connect: connection refused")

	now := time.Now()
	require.NoError(t, l.Stale(time.Minute, now))

	l.failed(pods, refused)
	assert.NoError(t, l.Stale(time.Minute, now), "an API server away for less than the bound is no stale cache")
	err := l.Stale(time.Minute, now.Add(2*time.Minute))
	var stale *StaleError
	require.ErrorAs(t, err, &stale)
	assert.False(t, stale.Forbidden())
	assert.Contains(t, err.Error(), "the cluster caches cannot refresh: pods cluster-wide: failing since ")
	assert.Contains(t, err.Error(), "connection refused")

	l.failed(replicaSets, forbidden)
	err = l.Stale(time.Minute, now)
	require.ErrorAs(t, err, &stale)
	assert.True(t, stale.Forbidden(), "forbidden is stale at once")
	require.Len(t, stale.Caches, 1)
	assert.Equal(t, "replicasets.apps cluster-wide", stale.Caches[0].Resource)

	l.succeeded(replicaSets)
	l.succeeded(pods)
	assert.NoError(t, l.Stale(time.Minute, now.Add(time.Hour)), "one answered list or watch and the cache refreshes")
	assert.Equal(t, 4, told, "told of each failure and each recovery")
	l.succeeded(pods)
	assert.Equal(t, 4, told, "a cache that was not failing changes nothing")
}

// TestAnsweredListsAreSeenOnTheWire: the transport tells a successful list
// of a collection from the rest.
func TestAnsweredListsAreSeenOnTheWire(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/apis/apps/v1/replicasets" && r.URL.Query().Get("denied") != "" {
			http.Error(w, "forbidden", http.StatusForbidden)
			return
		}
		_, _ = w.Write([]byte("{}"))
	}))
	defer srv.Close()
	l := &Live{failures: map[cachedResource]failure{}}
	replicaSets := cachedResource{group: "apps", resource: "replicasets"}
	cfg := &rest.Config{Host: srv.URL}
	cfg.Wrap(l.observeAnswers)
	rt, err := rest.TransportFor(cfg)
	require.NoError(t, err)
	get := func(path string) {
		req, err := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		require.NoError(t, err)
		resp, err := rt.RoundTrip(req)
		require.NoError(t, err)
		resp.Body.Close()
	}

	l.failed(replicaSets, errors.New("forbidden"))
	get("/apis/apps/v1/replicasets?denied=1")
	get("/apis/apps/v1/namespaces/shop/replicasets/x")
	assert.Contains(t, l.failures, replicaSets, "a refused list and a single object's read are not a refreshed cache")
	get("/apis/apps/v1/replicasets?watch=1")
	assert.NotContains(t, l.failures, replicaSets)
}
