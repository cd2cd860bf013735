package cluster

import "sync"

// maxInternedStrings bounds the interner. Past it the table starts afresh:
// strings already shared stay shared, and values that stopped repeating
// (an old pod-template-hash, a retired revision) are forgotten.
const maxInternedStrings = 1 << 16

// interner hands out one copy of each distinct string, so the thousands of
// pods of a cluster share their label keys, label values, owner names and
// injection status instead of holding a copy each.
type interner struct {
	mu    sync.Mutex
	limit int
	table map[string]string
}

func newInterner(limit int) *interner {
	return &interner{limit: limit, table: make(map[string]string)}
}

func (in *interner) get(s string) string {
	if s == "" {
		return ""
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if shared, ok := in.table[s]; ok {
		return shared
	}
	if len(in.table) >= in.limit {
		clear(in.table)
	}
	in.table[s] = s
	return s
}
