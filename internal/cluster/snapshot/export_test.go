package snapshot

// Streaming, as Read takes it for a large file, for tests outside the
// package: the generated fleets are written by a package that imports this
// one.
var (
	ReadStream = readSnapshotStream
	Decode     = decodeSnapshot
)
