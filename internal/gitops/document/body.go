package document

import (
	"encoding/json"
	"fmt"
	"reflect"
)

// A body is a rendered object decoded from JSON: maps of strings to
// values, lists, strings, float64s, bools and nils.

// String reads a string field of a body.
func String(body map[string]any, fields ...string) string {
	var v any = body
	for _, f := range fields {
		m, ok := v.(map[string]any)
		if !ok {
			return ""
		}
		v = m[f]
	}
	s, _ := v.(string)
	return s
}

// Strings reads a map of strings of a body, as kustomize reads labels and
// annotations.
func Strings(body map[string]any, fields ...string) map[string]string {
	var v any = body
	for _, f := range fields {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[f]
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = fmt.Sprint(v)
	}
	return out
}

// TemplateMetadata is spec.template.metadata of a workload's body.
func TemplateMetadata(body map[string]any) map[string]any {
	spec, _ := body["spec"].(map[string]any)
	tpl, _ := spec["template"].(map[string]any)
	md, _ := tpl["metadata"].(map[string]any)
	return md
}

// TemplateAnnotations are a workload's pod template annotations.
func TemplateAnnotations(body map[string]any) map[string]string {
	out := map[string]string{}
	ann, _ := TemplateMetadata(body)["annotations"].(map[string]any)
	for k, v := range ann {
		out[k] = fmt.Sprint(v)
	}
	return out
}

// StripTemplateAnnotations removes keys from a body's pod template
// annotations, and the mappings an edit may have created to hold them once
// they are empty.
func StripTemplateAnnotations(body map[string]any, keys []string) {
	spec, _ := body["spec"].(map[string]any)
	tpl, _ := spec["template"].(map[string]any)
	md, _ := tpl["metadata"].(map[string]any)
	ann, _ := md["annotations"].(map[string]any)
	if ann == nil {
		return
	}
	for _, k := range keys {
		delete(ann, k)
	}
	if len(ann) == 0 {
		delete(md, "annotations")
	}
	if len(md) == 0 {
		delete(tpl, "metadata")
	}
}

// WithoutTemplateAnnotations is a copy of body without its pod template
// annotations.
func WithoutTemplateAnnotations(body map[string]any) map[string]any {
	out := CopyValues(body)
	spec, _ := out["spec"].(map[string]any)
	tmpl, _ := spec["template"].(map[string]any)
	if meta, ok := tmpl["metadata"].(map[string]any); ok {
		delete(meta, "annotations")
		if len(meta) == 0 {
			delete(tmpl, "metadata")
		}
	}
	return out
}

// NormalJSON gives a body the types a JSON round trip gives it, so that a
// decoded render and a rendered one compare by value.
func NormalJSON(body map[string]any) any {
	data, err := json.Marshal(body)
	if err != nil {
		return body
	}
	var out any
	if json.Unmarshal(data, &out) != nil {
		return body
	}
	return out
}

// JSONEqual reports whether two bodies are equal as JSON.
func JSONEqual(a, b map[string]any) bool { return reflect.DeepEqual(NormalJSON(a), NormalJSON(b)) }

// CopyMap copies the maps of a body, sharing everything else.
func CopyMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if sub, ok := v.(map[string]any); ok {
			v = CopyMap(sub)
		}
		out[k] = v
	}
	return out
}

// CopyValues deep-copies a tree of maps and lists.
func CopyValues(in map[string]any) map[string]any {
	if in == nil {
		return nil
	}
	out := make(map[string]any, len(in))
	for k, v := range in {
		out[k] = copyValue(v)
	}
	return out
}

func copyValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		return CopyValues(t)
	case []any:
		out := make([]any, len(t))
		for i := range t {
			out[i] = copyValue(t[i])
		}
		return out
	default:
		return v
	}
}

// MergeValues lays over on top of base, as Helm merges values files: maps
// merge key by key, anything else is replaced.
func MergeValues(base, over map[string]any) map[string]any {
	out := CopyValues(base)
	if out == nil {
		out = map[string]any{}
	}
	for k, v := range over {
		if om, ok := v.(map[string]any); ok {
			if bm, ok := out[k].(map[string]any); ok {
				out[k] = MergeValues(bm, om)
				continue
			}
		}
		out[k] = copyValue(v)
	}
	return out
}

// WithValue returns a copy of values with key=value set in the map at key
// path p, created where missing; false when something that is not a map
// stands on the way.
func WithValue(values map[string]any, p []string, key, value string) (map[string]any, bool) {
	out := CopyValues(values)
	if out == nil {
		out = map[string]any{}
	}
	m := out
	for _, k := range p {
		switch next := m[k].(type) {
		case map[string]any:
			m = next
		case nil:
			created := map[string]any{}
			m[k] = created
			m = created
		default:
			return nil, false
		}
	}
	m[key] = value
	return out, true
}
