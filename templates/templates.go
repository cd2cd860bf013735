// Package templates holds kedge's built-in Markdown templates (Go
// text/template). internal/dashboard renders them; `templates.dir` in the
// configuration names a directory whose files of the same names replace
// them one by one. README.md lists the data and helpers each file gets.
package templates

import (
	"embed"
	"io/fs"
)

//go:embed *.tmpl
var files embed.FS

// Default returns the built-in template files.
func Default() fs.FS { return files }
