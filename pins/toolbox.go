package pins

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// toolboxSpecs are the build variables toolbox/toolbox.env may define: the
// box's directories and GPU targets. The file is read by the same strict
// parser as versions.env, against these names only, so that nothing in it
// ever runs (the step scripts used to eval it).
var toolboxSpecs = []Spec{
	{Name: "WORK_DIR", Kind: KindPath, Help: "sources and build trees inside the box (an absolute path)"},
	{Name: "VENV_DIR", Kind: KindPath, Help: "the Python venv inside the box (an absolute path)"},
	{Name: "GPU_TARGET", Kind: KindGFX, Help: "LLVM target of the GPU (the pin wins)"},
	{Name: "PYTORCH_ROCM_ARCH", Kind: KindGFX, Help: "architectures PyTorch extensions are built for (the pin wins)"},
	{Name: "GPU_ARCHS", Kind: KindGFX, Help: "vLLM's and AITER's kernel targets"},
}

// ToolboxSpecs returns the names toolbox.env may define.
func ToolboxSpecs() []Spec { return append([]Spec(nil), toolboxSpecs...) }

func lookupToolbox(name string) (Spec, bool) {
	for _, s := range toolboxSpecs {
		if s.Name == name {
			return s, true
		}
	}
	return Spec{}, false
}

// ParseToolbox parses toolbox.env: versions.env's grammar (NAME=value,
// quotes, ${REF} to an earlier line; nothing that runs), the names of
// ToolboxSpecs only, directories absolute.
func ParseToolbox(path string, data []byte) (*File, error) {
	f, err := parse(path, data, lookupToolbox)
	if err != nil {
		return nil, toolboxErrors(err)
	}
	for _, p := range f.Pins {
		if p.Kind == KindPath && !strings.HasPrefix(p.Value, "/") {
			return nil, &Error{Path: path, Line: p.Line, Col: p.Col, Reason: fmt.Sprintf("%s=%q: want an absolute path", p.Name, p.Value)}
		}
	}
	return f, nil
}

// toolboxErrors names toolbox.env's own names where the parser points at
// the pins'.
func toolboxErrors(err error) error {
	names := make([]string, len(toolboxSpecs))
	for i, s := range toolboxSpecs {
		names[i] = s.Name
	}
	fix := func(e error) error {
		var pe *Error
		if errors.As(e, &pe) && strings.HasPrefix(pe.Reason, "unknown name ") {
			c := *pe
			name, _, _ := strings.Cut(strings.TrimPrefix(pe.Reason, "unknown name "), " ")
			c.Reason = fmt.Sprintf("unknown name %s: toolbox.env defines only %s (the pins belong in versions.env)", name, strings.Join(names, ", "))
			return &c
		}
		return e
	}
	var joined interface{ Unwrap() []error }
	if errors.As(err, &joined) {
		var out []error
		for _, e := range joined.Unwrap() {
			out = append(out, fix(e))
		}
		return errors.Join(out...)
	}
	return fix(err)
}

var reRefText = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// Over resolves a toolbox.env as the step scripts see it: a name the pins
// already set (pins: the step's environment, "" meaning unset) keeps the
// pin's value, and ${REF}s take the pins' values before the file's own.
// Every value is validated again by its kind. The result is in file order.
func (f *File) Over(pins map[string]string) ([]Pin, error) {
	values := map[string]string{}
	for k, v := range pins {
		if v != "" {
			values[k] = v
		}
	}
	var out []Pin
	var errs []error
	for _, p := range f.Pins {
		if v := pins[p.Name]; v != "" {
			p.Value = v
			out = append(out, p)
			continue
		}
		v := reRefText.ReplaceAllStringFunc(p.Raw, func(ref string) string {
			return values[reRefText.FindStringSubmatch(ref)[1]]
		})
		spec, _ := f.spec(p.Name)
		if _, err := validate(spec, v); err != nil {
			errs = append(errs, &Error{Path: f.Path, Line: p.Line, Col: p.Col, Reason: fmt.Sprintf("%s=%q (with the pins): %v", p.Name, v, err)})
			continue
		}
		p.Value = v
		values[p.Name] = v
		out = append(out, p)
	}
	return out, errors.Join(errs...)
}
