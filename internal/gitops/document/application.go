package document

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"

	yaml "go.yaml.in/yaml/v3"

	"github.com/kedge-io/kedge/internal/objects"
)

// Applications decodes the Application documents of a file whose parse
// found some. The parse has already held the file to the YAML budgets, so
// decoding it whole is safe; a document that is not a valid Application
// stops nothing else.
func Applications(data []byte, docs []Document) []objects.Application {
	wanted := false
	for _, d := range docs {
		wanted = wanted || (IsApplication(d.APIVersion, d.Kind) && !d.List)
	}
	if !wanted {
		return nil
	}
	var out []objects.Application
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var doc map[string]any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) || err != nil {
			return out
		}
		if app, ok := Application(doc); ok {
			out = append(out, app)
		}
	}
}

// Application converts a decoded object into an Application when it is
// one with a name.
func Application(doc map[string]any) (objects.Application, bool) {
	apiVersion, _ := doc["apiVersion"].(string)
	kind, _ := doc["kind"].(string)
	if !IsApplication(apiVersion, kind) {
		return objects.Application{}, false
	}
	data, err := json.Marshal(doc)
	if err != nil {
		return objects.Application{}, false
	}
	var app objects.Application
	if err := json.Unmarshal(data, &app); err != nil || app.Name == "" {
		return objects.Application{}, false
	}
	return app, true
}
