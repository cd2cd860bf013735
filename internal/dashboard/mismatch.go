package dashboard

import "strings"

// Sentence names what the cluster applies from where, and what kedge edits:
// "the cluster applies namespaces a, b from github.com/acme/platform;
// kedge is configured for acme/gitops". It is "" without a foreign
// repository. The log and the dashboard say the same words.
func (m Mismatch) Sentence() string {
	if len(m.Foreign) == 0 {
		return ""
	}
	parts := make([]string, 0, len(m.Foreign))
	for _, f := range m.Foreign {
		word := "namespaces "
		if len(f.Namespaces) == 1 {
			word = "namespace "
		}
		parts = append(parts, word+strings.Join(f.Namespaces, ", ")+" from "+f.Repository)
	}
	return "the cluster applies " + joinAnd(parts) + "; kedge is configured for " + m.Configured
}

// joinAnd writes "a", "a and b", "a, b and c".
func joinAnd(parts []string) string {
	if len(parts) <= 1 {
		return strings.Join(parts, "")
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}
