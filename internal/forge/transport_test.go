package forge

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestKeptListingsReplayWithoutTheirBytes(t *testing.T) {
	var version atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		etag := fmt.Sprintf(`"v%d"`, version.Load())
		if r.Header.Get("If-None-Match") == etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("ETag", etag)
		fmt.Fprintf(w, `[{"number":%d}]`, version.Load())
	}))
	defer srv.Close()
	cache := newETagCache(http.DefaultTransport)
	get := func() *http.Response {
		req, err := http.NewRequest(http.MethodGet, srv.URL+"/pulls?page=1", nil)
		require.NoError(t, err)
		resp, err := cache.RoundTrip(req)
		require.NoError(t, err)
		return resp
	}
	read := func(resp *http.Response) string {
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return string(body)
	}

	first := get()
	assert.Equal(t, `[{"number":0}]`, read(first))
	_, kept := replayed(first)
	assert.False(t, kept, "a fresh answer carries its bytes")

	cache.keepDecoded(first, []int{0})
	entry := cache.entries[srv.URL+"/pulls?page=1"]
	assert.Nil(t, entry.body, "the bytes are let go once the decoded form is kept")

	again := get()
	value, kept := replayed(again)
	require.True(t, kept, "a 304 replays the decoded form")
	assert.Equal(t, []int{0}, value)
	assert.Empty(t, read(again))
	assert.Equal(t, `"v0"`, again.Header.Get("ETag"))

	version.Store(1)
	changed := get()
	_, kept = replayed(changed)
	assert.False(t, kept, "a changed listing is read again")
	assert.Equal(t, `[{"number":1}]`, read(changed))

	cache.keepDecoded(first, []int{0})
	assert.Equal(t, `[{"number":1}]`, string(cache.entries[srv.URL+"/pulls?page=1"].body),
		"a decoded form of an answer no longer stored is not kept")
}
