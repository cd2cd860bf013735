package mesh

// Summary describes the control plane the data plane drifts from, for
// people: the dashboard and `kedge plan --output markdown` show it.
type Summary struct {
	Revisions []RevisionSummary
	// Tags maps a revision tag to the revision it points at. A tag whose
	// revision is not in Revisions is shown as dangling.
	Tags map[string]string
}

// RevisionSummary is one injecting revision of the mesh.
type RevisionSummary struct {
	Name       string
	Image      string   // proxy image it injects now
	Tags       []string // tags pointing at it
	Namespaces []string // namespaces it injects
}
