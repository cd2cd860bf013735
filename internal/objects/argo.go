package objects

// ApplicationSourceDirectory is how an Argo CD Application reads a source
// of plain manifests: by default only the files at the top of its path, each
// kept or dropped by the include and exclude globs matched against its path
// relative to the source's path.
type ApplicationSourceDirectory struct {
	Recurse bool   `json:"recurse,omitempty"`
	Include string `json:"include,omitempty"`
	Exclude string `json:"exclude,omitempty"`
}
