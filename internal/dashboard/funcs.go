package dashboard

import (
	"fmt"
	"reflect"
	"strings"
	"text/template"
	"time"
)

// funcs are the helpers templates get. Everything that writes a
// cluster-controlled string into Markdown escapes it; templates use md,
// cell, code and link for any other string they print.
func funcs() template.FuncMap {
	return template.FuncMap{
		// Escaping.
		"md":       func(v any) string { return EscapeMarkdown(str(v)) },
		"cell":     func(v any) string { return EscapeCell(str(v)) },
		"plain":    func(v any) string { return EscapePlain(str(v)) },
		"code":     func(v any) string { return codeSpan(str(v)) },
		"pieLabel": func(v any) string { return pieLabel(str(v)) },
		"url":      safeURL,
		"link":     link,
		"prLink":   prLink,
		"fileURL":  fileURL,
		"fileLink": func(repoWebURL, branch, file, text string) string {
			return link(text, fileURL(repoWebURL, branch, file))
		},
		// Escaped compound values.
		"change":      change,
		"proxyChange": proxyChange,
		"plainChange": plainChange,
		"codes":       codes,
		"names":       names,
		"revisions": func(list []string) string {
			shown := make([]string, len(list))
			for i, r := range list {
				shown[i] = revisionName(r)
			}
			return names(shown, 8)
		},
		// Plain values; escape them when printing.
		"version":  versionOf,
		"versions": proxyVersions,
		"revision": revisionName,
		"meaning":  meaning,
		"short":    short,
		"dict":     dict,
		"age":      age,
		"since":    since,
		"ago": func(now, t time.Time) string {
			if t.IsZero() || now.IsZero() {
				return "–"
			}
			return span(now.Sub(t)) + " ago"
		},
		"span":   span,
		"took":   took,
		"utc":    utc,
		"plural": plural,
		"add":    func(a, b int) int { return a + b },
	}
}

func versionOf(image string) string {
	if v := ProxyVersion(image); v != "" {
		return v
	}
	return noSidecar
}

// change writes "a, b → **c**", or just "c" when nothing changes; empty
// values read as no sidecar.
func change(current []string, desired string) string {
	desired = revisionName(desired)
	cur := make([]string, 0, len(current))
	for _, c := range current {
		cur = append(cur, EscapeMarkdown(revisionName(c)))
	}
	if len(cur) == 0 {
		cur = append(cur, noSidecar)
	}
	if len(cur) == 1 && cur[0] == EscapeMarkdown(desired) {
		return cur[0]
	}
	return strings.Join(cur, ", ") + " → **" + EscapeMarkdown(desired) + "**"
}

// proxyChange is change of the proxy versions the pods run and the one
// they should, or of the images as the pods run them when the versions
// read the same: a pod on an undeclared mirror, or on another digest than
// the one the injector pins, runs another image under the same version.
func proxyChange(images []string, desired string) string {
	current, want := proxyVersions(images), versionOf(desired)
	if desired == "" || len(current) != 1 || current[0] != want {
		return change(current, want)
	}
	for _, img := range images {
		if img != desired {
			return change(images, desired)
		}
	}
	return change(current, want)
}

// codes writes a list of string-like values (reasons, states) as inline
// code, comma separated.
func codes(list any) (string, error) {
	v := reflect.ValueOf(list)
	if v.Kind() != reflect.Slice {
		return "", fmt.Errorf("codes: want a list, got %T", list)
	}
	parts := make([]string, 0, v.Len())
	for i := 0; i < v.Len(); i++ {
		e := v.Index(i)
		if e.Kind() != reflect.String {
			return "", fmt.Errorf("codes: want a list of strings, got %T", list)
		}
		parts = append(parts, codeSpan(e.String()))
	}
	return strings.Join(parts, ", "), nil
}

// names writes at most max escaped names, then how many more there are.
func names(list []string, max int) string {
	if len(list) == 0 {
		return "–"
	}
	shown := list
	if max >= 0 && len(list) > max {
		shown = list[:max]
	}
	parts := make([]string, 0, len(shown))
	for _, n := range shown {
		parts = append(parts, EscapeMarkdown(n))
	}
	out := strings.Join(parts, ", ")
	if rest := len(list) - len(shown); rest > 0 {
		out += fmt.Sprintf(" and %d more", rest)
	}
	return out
}

// dict builds a map from key/value pairs, to hand a partial several values.
func dict(pairs ...any) (map[string]any, error) {
	if len(pairs)%2 != 0 {
		return nil, fmt.Errorf("dict: odd number of arguments")
	}
	m := make(map[string]any, len(pairs)/2)
	for i := 0; i < len(pairs); i += 2 {
		k, ok := pairs[i].(string)
		if !ok {
			return nil, fmt.Errorf("dict: key %v is not a string", pairs[i])
		}
		m[k] = pairs[i+1]
	}
	return m, nil
}

// str lets templates hand the escapers any value: named string types
// (drift.Reason, PRState) and numbers print as themselves.
func str(v any) string {
	switch s := v.(type) {
	case nil:
		return ""
	case string:
		return s
	case fmt.Stringer:
		return s.String()
	}
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.String {
		return rv.String()
	}
	return fmt.Sprint(v)
}

// prLink links a pull request by number; "–" when there is none.
func prLink(number int, prURL string) string {
	if number <= 0 {
		return "–"
	}
	if u := safeURL(prURL); u != "" {
		return fmt.Sprintf("[#%d](%s)", number, u)
	}
	return fmt.Sprintf("#%d", number)
}

// plainChange is change for plain text: "a, b -> c", or "c" when nothing
// changes.
func plainChange(current []string, desired string) string {
	desired = EscapePlain(revisionName(desired))
	cur := make([]string, 0, len(current))
	for _, c := range current {
		cur = append(cur, EscapePlain(revisionName(c)))
	}
	if len(cur) == 0 {
		cur = append(cur, noSidecar)
	}
	if len(cur) == 1 && cur[0] == desired {
		return desired
	}
	return strings.Join(cur, ", ") + " -> " + desired
}
