package yamledit

import (
	"sort"
	"strings"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/validation"
)

// ValuesMap names a mapping of chart values in an object of a file: the
// object's kind, and the dot path ([i] indexing a sequence) of the mapping
// below which the chart's value sits ("spec.source.helm.valuesObject",
// "spec.values").
type ValuesMap struct {
	Kind string
	At   string
}

// SetChartValues makes object doc of the file (counted as Target.Document
// counts), of the map's kind, carry each key=value in the mapping that
// valuePath reaches below the map, creating the mappings it lacks. Keys are
// written in sorted order, after the existing ones; every other line stays
// byte for byte and the result must re-parse to exactly that change.
func SetChartValues(src []byte, doc int, m ValuesMap, valuePath []string, set map[string]string) (out []byte, changed bool, err error) {
	at, err := parseListPath(m.At)
	if err != nil {
		return nil, false, err
	}
	names := make([]string, 0, len(set))
	for k, v := range set {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return nil, false, refuse(CodeInvalidInput, "annotation key %q is invalid: %s", k, errs[0])
		}
		if !utf8.ValidString(v) || strings.Contains(v, "{{") {
			return nil, false, refuse(CodeInvalidInput, "the value of annotation %q is not plain text", k)
		}
		names = append(names, k)
	}
	sort.Strings(names)
	out = src
	for _, k := range names {
		s, err := load(out)
		if err != nil {
			return nil, false, err
		}
		objs := s.objects()
		if doc < 0 || doc >= len(objs) || objs[doc].path != nil || objs[doc].kind != m.Kind {
			return nil, false, refuse(CodeNotFound, "object %d of the file is not a %s document", doc, m.Kind)
		}
		full := append(append(append([]step{}, objs[doc].path...), at...), keys(valuePath...)...)
		next, ch, err := s.setScalar(objs[doc].doc, full, k, set[k])
		if err != nil {
			return nil, false, err
		}
		if ch {
			out, changed = next, true
		}
	}
	return out, changed, nil
}

// SetChartValuesText is SetChartValues for values written as YAML text in
// a literal block scalar (values: |): the text is edited as its own
// document, exactly, and put back with the block's indentation.
func SetChartValuesText(src []byte, doc int, m ValuesMap, valuePath []string, set map[string]string) (out []byte, changed bool, err error) {
	return nil, false, refuse(CodeUnsupported, "%s is YAML text", m.At)
}
