package cluster

// Streaming, as ReadSnapshot takes it for a large file, for tests outside
// the package: the generated fleets are written by a package that imports
// this one.
var (
	ReadSnapshotStream = readSnapshotStream
	DecodeSnapshot     = decodeSnapshot
)
