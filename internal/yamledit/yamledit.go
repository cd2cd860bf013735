// Package yamledit changes Kubernetes YAML files that people own while keeping every byte it does not have to
// touch. A YAML parser only reads and locates; the write is a splice of whole lines at file-absolute
// positions, and every result is parsed again and compared with the original: when anything but the intended
// value changed, the edit is refused and the caller keeps the file as it was.
package yamledit

import (
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/validation"
)

// AnyDocument accepts a matching object wherever it sits in the file.
const AnyDocument = -1

// Target selects one object in a file by kind and name, and by namespace when the object names one.
type Target struct {
	Kind, Name string
	// Namespace is compared only when both the target and the object carry one: manifests often leave the
	// namespace to kustomize or to the GitOps controller.
	Namespace string
	// Document is the object's position in the file, counting from 0, skipping empty documents and counting
	// every item of a `kind: List` as one object (the order kyaml's readers see); AnyDocument accepts any.
	Document int
}

func (t Target) String() string {
	s := t.Kind + "/" + t.Name
	if t.Namespace != "" {
		s = t.Kind + "/" + t.Namespace + "/" + t.Name
	}
	if t.Document != AnyDocument {
		s += fmt.Sprintf(" (object %d)", t.Document)
	}
	return s
}

// RefusalCode lets callers sort refusals without parsing the reason.
type RefusalCode string

const (
	// CodeUnparsable: the file is not YAML this package can read (syntax error, not UTF-8, odd line breaks).
	CodeUnparsable RefusalCode = "unparsable"
	// CodeOverBudget: the file exceeds a size, alias-expansion or nesting budget (yamlguard), so no part of
	// it is walked.
	CodeOverBudget RefusalCode = "over-budget"
	// CodeTemplate: the file holds template text such as Helm's `{{`, so its YAML is not what gets applied.
	CodeTemplate RefusalCode = "template"
	// CodeTab: a tab where indentation is read.
	CodeTab RefusalCode = "tab"
	// CodeAnchor: an anchor, alias or merge key on the way to the edit, which would change other places too.
	CodeAnchor RefusalCode = "anchor"
	// CodeNotFound: no object matches the target, or the kustomization does not set the label.
	CodeNotFound RefusalCode = "not-found"
	// CodeAmbiguous: several objects match the target, or a key appears twice.
	CodeAmbiguous RefusalCode = "ambiguous"
	// CodeUnsupported: a layout that cannot be spliced safely (multi-line or block values, tagged values,
	// a non-mapping where a mapping is needed).
	CodeUnsupported RefusalCode = "unsupported"
	// CodeInvalidInput: the requested key, value or kind is not valid for Kubernetes.
	CodeInvalidInput RefusalCode = "invalid-input"
	// CodeVerification: the spliced file did not re-parse to exactly the intended change.
	CodeVerification RefusalCode = "verification"
)

// RefusedError names why a file was left untouched.
type RefusedError struct {
	Code   RefusalCode
	Reason string
}

func (e *RefusedError) Error() string { return "refused: " + e.Reason }

func refuse(code RefusalCode, format string, args ...any) *RefusedError {
	return &RefusedError{Code: code, Reason: fmt.Sprintf(format, args...)}
}

// podTemplateKinds have their pod template at spec.template; a restart annotation there rolls the pods.
var podTemplateKinds = map[string]bool{"Deployment": true, "StatefulSet": true, "DaemonSet": true, "Rollout": true}

var podTemplateAnnotationsPath = keys("spec", "template", "metadata", "annotations")

// SetPodTemplateAnnotations sets each key=value on spec.template.metadata.annotations of the target
// (Deployment, StatefulSet, DaemonSet, argoproj Rollout, or a strategic-merge patch of one), creating the
// missing mappings on the way. It reports changed=false, with src returned as is, when every value is already
// set. Keys are applied in sorted order; new keys go after the existing annotations.
func SetPodTemplateAnnotations(src []byte, t Target, set map[string]string) (out []byte, changed bool, err error) {
	if !podTemplateKinds[t.Kind] {
		return nil, false, refuse(CodeInvalidInput, "kind %q has no restartable pod template at spec.template", t.Kind)
	}
	names := make([]string, 0, len(set))
	for k := range set {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return nil, false, refuse(CodeInvalidInput, "annotation key %q is invalid: %s", k, errs[0])
		}
		if !utf8.ValidString(set[k]) {
			return nil, false, refuse(CodeInvalidInput, "the value of annotation %q is not valid UTF-8", k)
		}
		if strings.Contains(set[k], "{{") {
			return nil, false, refuse(CodeInvalidInput, "the value of annotation %q holds template text ({{), which would make the file look like a template", k)
		}
		names = append(names, k)
	}
	sort.Strings(names)
	out = src
	for _, k := range names {
		next, ch, err := setOnObject(out, t, podTemplateAnnotationsPath, k, set[k], checkPodTemplate)
		if err != nil {
			return nil, false, err
		}
		if ch {
			out, changed = next, true
		}
	}
	return out, changed, nil
}

// PodTemplateAnnotations reads spec.template.metadata.annotations of the target; the map is nil when there are
// none. Aliases are followed; a merge key on the way is refused because its keys would be read incompletely.
func PodTemplateAnnotations(src []byte, t Target) (map[string]string, error) {
	_, obj, err := loadTarget(src, t)
	if err != nil {
		return nil, err
	}
	return readStringMap(obj.node, podTemplateAnnotationsPath)
}

// SetMetadataLabel sets metadata.labels[key]=value on the target (for example istio.io/rev on a Namespace).
func SetMetadataLabel(src []byte, t Target, key, value string) ([]byte, bool, error) {
	if err := validateLabel(key, value); err != nil {
		return nil, false, err
	}
	return setOnObject(src, t, keys("metadata", "labels"), key, value, nil)
}

func validateLabel(key, value string) error {
	if errs := validation.IsQualifiedName(key); len(errs) > 0 {
		return refuse(CodeInvalidInput, "label key %q is invalid: %s", key, errs[0])
	}
	if errs := validation.IsValidLabelValue(value); len(errs) > 0 {
		return refuse(CodeInvalidInput, "label value %q is invalid: %s", value, errs[0])
	}
	return nil
}

// checkPodTemplate refuses a pod template kedge cannot restart by annotation: one it borrows from elsewhere,
// or whose annotations are not all strings (no valid Kubernetes object, and no reading back the result).
func checkPodTemplate(obj *object) error {
	if err := refuseWorkloadRef(obj); err != nil {
		return err
	}
	_, err := readStringMap(obj.node, podTemplateAnnotationsPath)
	return err
}

// refuseWorkloadRef stops a Rollout that borrows its pod template from a Deployment: a template created here
// would replace the referenced one.
func refuseWorkloadRef(obj *object) error {
	if obj.kind != "Rollout" {
		return nil
	}
	if spec := lookupValue(obj.node, "spec"); spec != nil && lookupValue(spec, "workloadRef") != nil {
		return refuse(CodeUnsupported, "Rollout %s takes its pod template from spec.workloadRef; edit the referenced workload", obj.name)
	}
	return nil
}

// setOnObject locates the target and sets one key in the mapping at path below it.
func setOnObject(src []byte, t Target, path []step, key, value string, check func(*object) error) ([]byte, bool, error) {
	s, obj, err := loadTarget(src, t)
	if err != nil {
		return nil, false, err
	}
	if check != nil {
		if err := check(obj); err != nil {
			return nil, false, err
		}
	}
	full := append(append([]step{}, obj.path...), path...)
	return s.setScalar(obj.doc, full, key, value)
}
