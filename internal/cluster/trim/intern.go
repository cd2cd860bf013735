package trim

import (
	"encoding/binary"
	"slices"
	"sync"
)

// maxInternedStrings bounds the interner. Past it the table starts afresh:
// strings already shared stay shared, and values that stopped repeating
// (an old pod-template-hash, a retired revision) are forgotten.
const maxInternedStrings = 1 << 16

// sharedTable hands out one value for each key, bounded: past the limit it
// starts afresh. Values already shared stay shared; keys that stopped
// repeating are forgotten.
type sharedTable[V any] struct {
	mu    sync.Mutex
	limit int
	table map[string]V
}

func (t *sharedTable[V]) share(key string, v V) V {
	t.mu.Lock()
	defer t.mu.Unlock()
	if shared, ok := t.table[key]; ok {
		return shared
	}
	if len(t.table) >= t.limit {
		clear(t.table)
	}
	t.table[key] = v
	return v
}

// interner hands out one copy of each distinct string, so the thousands of
// pods of a cluster share their label keys, label values, owner names and
// injection status instead of holding a copy each.
type interner struct{ sharedTable[string] }

func newInterner(limit int) *interner {
	return &interner{sharedTable[string]{limit: limit, table: make(map[string]string)}}
}

func (in *interner) get(s string) string {
	if s == "" {
		return ""
	}
	return in.share(s, s)
}

// maxInternedMaps bounds the map interner the way maxInternedStrings bounds
// the string one.
const maxInternedMaps = 1 << 14

// mapInterner hands out one map for each distinct set of entries.
type mapInterner struct{ sharedTable[map[string]string] }

func newMapInterner(limit int) *mapInterner {
	return &mapInterner{sharedTable[map[string]string]{limit: limit, table: make(map[string]map[string]string)}}
}

// shareBuilt returns the map shared under key, calling build for it only
// when there is none.
func (in *mapInterner) shareBuilt(key string, build func() map[string]string) map[string]string {
	in.mu.Lock()
	shared, ok := in.table[key]
	in.mu.Unlock()
	if ok {
		return shared
	}
	return in.share(key, build())
}

// mapKey spells the entries of m accepted by keep (all when nil) in key
// order, each string after its length, so that no two different maps
// spell the same, and counts them.
func mapKey(m map[string]string, keep func(string) bool) (string, int) {
	keys := make([]string, 0, len(m))
	size := 0
	for k, v := range m {
		if keep == nil || keep(k) {
			keys = append(keys, k)
			size += len(k) + len(v) + 2*binary.MaxVarintLen64
		}
	}
	if len(keys) == 0 {
		return "", 0
	}
	slices.Sort(keys)
	b := make([]byte, 0, size)
	for _, k := range keys {
		b = appendSpelled(b, k, m[k])
	}
	return string(b), len(keys)
}

// appendSpelled appends each string after its length, so that no two
// different lists of strings spell the same.
func appendSpelled(b []byte, values ...string) []byte {
	for _, s := range values {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	return b
}
