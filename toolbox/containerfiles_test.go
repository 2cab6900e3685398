package toolbox_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"github.com/moby/buildkit/frontend/dockerfile/shell"

	"github.com/haloforge/haloforge/pins"
)

// requiredOCILabels are the annotation keys every image haloforge builds
// carries (OCI image-spec annotations.md), so `podman inspect` tells where an
// image came from without haloforge.
var requiredOCILabels = []string{
	"org.opencontainers.image.title",
	"org.opencontainers.image.description",
	"org.opencontainers.image.source",
	"org.opencontainers.image.base.name",
}

// pinLabelPrefix prefixes the label recording one versions.env pin.
const pinLabelPrefix = "io.haloforge.pin."

var digestRef = regexp.MustCompile(`@sha256:[0-9a-f]{64}$`)

// containerfile is one parsed definition: its stages and the ARGs before the
// first FROM, as buildkit's own parser reads them.
type containerfile struct {
	name   string
	stages []instructions.Stage
	meta   []instructions.ArgCommand
}

func parseContainerfile(name string, data []byte) (*containerfile, error) {
	res, err := parser.Parse(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	stages, meta, err := instructions.Parse(res.AST, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(stages) == 0 {
		return nil, fmt.Errorf("%s: no FROM", name)
	}
	return &containerfile{name: name, stages: stages, meta: meta}, nil
}

// env is the variables visible to one instruction, with the names that came
// from an ARG (Docker scopes ARGs per stage; ENV is inherited from the base).
type env map[string]string

func (e env) slice() []string {
	out := make([]string, 0, len(e))
	for k, v := range e {
		out = append(out, k+"="+v)
	}
	return out
}

var lex = shell.NewLex('\\')

// expand resolves a word the way buildkit does and returns the names it used
// that had no value.
func expand(word string, e env) (string, []string, error) {
	res, err := lex.ProcessWordWithMatches(word, shell.EnvsFromSlice(e.slice()))
	if err != nil {
		return "", nil, err
	}
	var unmatched []string
	for name := range res.Unmatched {
		unmatched = append(unmatched, name)
	}
	sort.Strings(unmatched)
	return res.Result, unmatched, nil
}

// checker holds the pins a Containerfile must agree with.
type checker struct {
	pins map[string]string
}

// check returns every problem of one Containerfile, one line each.
func (c checker) check(cf *containerfile) []string {
	var probs []string
	report := func(format string, args ...any) {
		probs = append(probs, cf.name+": "+fmt.Sprintf(format, args...))
	}
	meta := env{}
	for _, a := range cf.meta {
		for _, kv := range a.Args {
			if kv.Value == nil {
				report("ARG %s before FROM has no default: a plain `podman build` would not reproduce the pins", kv.Key)
				continue
			}
			v, _, err := expand(*kv.Value, meta)
			if err != nil {
				report("ARG %s: %v", kv.Key, err)
			}
			meta[kv.Key] = v
			c.checkPinValue(kv.Key, v, "ARG "+kv.Key, report)
		}
	}
	stageLabels := map[string]map[string]string{}
	stageEnv := map[string]env{}
	declared := map[string]bool{}
	var final map[string]string
	for _, st := range cf.stages {
		labels, envOnly := c.checkFrom(st, meta, stageLabels, stageEnv, report)
		senv := envCopy(envOnly)
		for _, cmd := range st.Commands {
			switch cmd := cmd.(type) {
			case *instructions.ArgCommand:
				c.stageArgs(cmd, meta, senv, declared, report)
			case *instructions.EnvCommand:
				for _, kv := range cmd.Env {
					v, _, _ := expand(kv.Value, senv)
					senv[kv.Key] = v
					envOnly[kv.Key] = v
				}
			case *instructions.LabelCommand:
				c.stageLabels(cmd, senv, labels, report)
			}
		}
		if st.Name != "" {
			stageLabels[strings.ToLower(st.Name)] = labels
			stageEnv[strings.ToLower(st.Name)] = envOnly
		}
		final = labels
	}
	for name := range meta {
		declared[name] = true
	}
	probs = append(probs, c.checkFinalLabels(cf.name, final, declared)...)
	return probs
}

// checkFrom checks one FROM: another stage, a digest, or ARGs that hold
// versions.env pins. It returns the labels and ENV the stage starts with.
func (c checker) checkFrom(st instructions.Stage, meta env, labels map[string]map[string]string, envs map[string]env, report func(string, ...any)) (map[string]string, env) {
	base, unmatched, err := expand(st.BaseName, meta)
	if err != nil {
		report("FROM %s: %v", st.BaseName, err)
	}
	for _, name := range unmatched {
		report("FROM %s: ARG %s is not declared before FROM", st.BaseName, name)
	}
	if inherited, ok := labels[strings.ToLower(base)]; ok {
		return maps(inherited), envCopy(envs[strings.ToLower(base)])
	}
	used := referencedNames(st.BaseName, meta)
	switch {
	case base == "scratch":
	case len(used) == 0 && !digestRef.MatchString(base):
		report("FROM %s is neither pinned by digest nor taken from a versions.env pin through an ARG", st.BaseName)
	default:
		for _, name := range used {
			if _, ok := c.pins[name]; !ok && !digestRef.MatchString(base) {
				report("FROM %s uses ARG %s, which is not a versions.env pin", st.BaseName, name)
			}
		}
	}
	return map[string]string{}, env{}
}

// stageArgs records the ARGs a stage declares; a redeclared ARG without a
// value takes the default from before the first FROM, as in buildkit.
func (c checker) stageArgs(cmd *instructions.ArgCommand, meta, senv env, declared map[string]bool, report func(string, ...any)) {
	for _, kv := range cmd.Args {
		declared[kv.Key] = true
		if kv.Value == nil {
			if v, ok := meta[kv.Key]; ok {
				senv[kv.Key] = v
			} else {
				senv[kv.Key] = ""
			}
			continue
		}
		v, _, _ := expand(*kv.Value, senv)
		senv[kv.Key] = v
		c.checkPinValue(kv.Key, v, "ARG "+kv.Key, report)
	}
}

func (c checker) stageLabels(cmd *instructions.LabelCommand, senv env, labels map[string]string, report func(string, ...any)) {
	for _, kv := range cmd.Labels {
		key, _, _ := expand(kv.Key, senv)
		v, unmatched, err := expand(kv.Value, senv)
		if err != nil {
			report("LABEL %s: %v", key, err)
		}
		for _, name := range unmatched {
			report("LABEL %s uses %s, which is not an ARG or ENV of this stage (it would be empty)", key, name)
		}
		labels[key] = v
	}
}

// checkPinValue reports a default that disagrees with versions.env.
func (c checker) checkPinValue(name, value, what string, report func(string, ...any)) {
	want, ok := c.pins[name]
	if ok && value != "" && value != want {
		report("%s default %q differs from versions.env %q", what, value, want)
	}
}

// checkFinalLabels checks the labels of the image the file produces.
func (c checker) checkFinalLabels(name string, labels map[string]string, declared map[string]bool) []string {
	var probs []string
	for _, key := range requiredOCILabels {
		if strings.TrimSpace(labels[key]) == "" {
			probs = append(probs, fmt.Sprintf("%s: final image lacks label %s", name, key))
		}
	}
	var pinNames []string
	for n := range declared {
		if _, ok := c.pins[n]; ok {
			pinNames = append(pinNames, n)
		}
	}
	sort.Strings(pinNames)
	for _, n := range pinNames {
		got, ok := labels[pinLabelPrefix+n]
		switch {
		case !ok:
			probs = append(probs, fmt.Sprintf("%s: pin %s is used but the final image has no label %s%s", name, n, pinLabelPrefix, n))
		case got != c.pins[n]:
			probs = append(probs, fmt.Sprintf("%s: label %s%s is %q, versions.env says %q", name, pinLabelPrefix, n, got, c.pins[n]))
		}
	}
	for key, v := range labels {
		n, ok := strings.CutPrefix(key, pinLabelPrefix)
		if !ok {
			continue
		}
		if _, known := pins.Lookup(n); !known {
			probs = append(probs, fmt.Sprintf("%s: label %s names no known pin", name, key))
		} else if want, ok := c.pins[n]; ok && v != want {
			if !slices.Contains(pinNames, n) {
				probs = append(probs, fmt.Sprintf("%s: label %s is %q, versions.env says %q", name, key, v, want))
			}
		}
	}
	sort.Strings(probs)
	return probs
}

// referencedNames lists the variables a word refers to.
func referencedNames(word string, e env) []string {
	res, err := lex.ProcessWordWithMatches(word, shell.EnvsFromSlice(e.slice()))
	if err != nil {
		return nil
	}
	var names []string
	for n := range res.Matched {
		names = append(names, n)
	}
	for n := range res.Unmatched {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func maps(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// envCopy copies a stage's ENV; the caller keeps ARGs out of it because
// buildkit scopes ARGs to the stage that declares them.
func envCopy(e env) env {
	out := make(env, len(e))
	for k, v := range e {
		out[k] = v
	}
	return out
}

// containerfiles lists every Containerfile/Dockerfile in this directory.
func containerfiles(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		n := e.Name()
		if e.Type().IsRegular() && (strings.HasPrefix(n, "Containerfile") || strings.HasPrefix(n, "Dockerfile")) {
			out = append(out, n)
		}
	}
	return out
}

func loadPins(t *testing.T) map[string]string {
	t.Helper()
	pf, err := pins.Load(filepath.Join("..", "versions.env"))
	if err != nil {
		t.Fatal(err)
	}
	return pf.Values()
}

// TestContainerfilesPinnedAndLabelled parses every container definition in
// toolbox/ with buildkit's parser and checks FROM pins and labels against
// versions.env.
func TestContainerfilesPinnedAndLabelled(t *testing.T) {
	files := containerfiles(t)
	if len(files) == 0 {
		t.Fatal("no Containerfile or Dockerfile in toolbox/")
	}
	c := checker{pins: loadPins(t)}
	for _, name := range files {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			cf, err := parseContainerfile(name, data)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range c.check(cf) {
				t.Error(p)
			}
		})
	}
}

// TestSeedContainerfilesExist guards the seed file names the tracks' scripts build.
func TestSeedContainerfilesExist(t *testing.T) {
	files := containerfiles(t)
	for _, want := range []string{
		"Dockerfile.spoof_locked", "Dockerfile.vulkan", "Containerfile.source-stable",
		"Dockerfile_rocm64_base", "Dockerfile_rocm64_pytorch",
	} {
		if !slices.Contains(files, want) {
			t.Errorf("toolbox/%s is missing", want)
		}
	}
}

// TestSpoofLockedBakesTheSpoof checks the locked image is the seed's digest
// with the gfx1100 spoof set as ENV, since that is the whole track.
func TestSpoofLockedBakesTheSpoof(t *testing.T) {
	data, err := os.ReadFile("Dockerfile.spoof_locked")
	if err != nil {
		t.Fatal(err)
	}
	cf, err := parseContainerfile("Dockerfile.spoof_locked", data)
	if err != nil {
		t.Fatal(err)
	}
	p := loadPins(t)
	meta := env{}
	for _, a := range cf.meta {
		for _, kv := range a.Args {
			if kv.Value != nil {
				meta[kv.Key] = *kv.Value
			}
		}
	}
	last := cf.stages[len(cf.stages)-1]
	base, _, err := expand(last.BaseName, meta)
	if err != nil {
		t.Fatal(err)
	}
	if want := p["SPOOF_BASE_IMAGE"] + "@" + p["SPOOF_BASE_DIGEST"]; base != want {
		t.Errorf("FROM resolves to %q, want %q", base, want)
	}
	senv := env{}
	for _, cmd := range last.Commands {
		switch cmd := cmd.(type) {
		case *instructions.ArgCommand:
			for _, kv := range cmd.Args {
				if kv.Value == nil {
					senv[kv.Key] = meta[kv.Key]
				} else {
					senv[kv.Key] = *kv.Value
				}
			}
		case *instructions.EnvCommand:
			for _, kv := range cmd.Env {
				v, _, _ := expand(kv.Value, senv)
				senv[kv.Key] = v
			}
		}
	}
	if got := senv["HSA_OVERRIDE_GFX_VERSION"]; got != p["SPOOF_GFX_VERSION"] {
		t.Errorf("ENV HSA_OVERRIDE_GFX_VERSION = %q, want the pin %q", got, p["SPOOF_GFX_VERSION"])
	}
}

// TestCheckerCatches runs the checker on small broken definitions, so a
// checker that accepts everything fails here.
func TestCheckerCatches(t *testing.T) {
	c := checker{pins: map[string]string{
		"SOURCE_BASE_IMAGE": "registry.fedoraproject.org/fedora:43",
		"SOURCE_VLLM_REF":   "01efc7ef781391e744ed08c3292817a773d654e6",
	}}
	oci := `LABEL org.opencontainers.image.title="t" \
      org.opencontainers.image.description="d" \
      org.opencontainers.image.source="https://example.invalid/x" \
      org.opencontainers.image.base.name="${SOURCE_BASE_IMAGE}"
`
	tests := []struct {
		name, file string
		want       []string // substrings, one per expected problem; nil: clean
	}{
		{"good", "ARG SOURCE_BASE_IMAGE=registry.fedoraproject.org/fedora:43\nFROM ${SOURCE_BASE_IMAGE}\nARG SOURCE_BASE_IMAGE\nARG SOURCE_VLLM_REF=01efc7ef781391e744ed08c3292817a773d654e6\n" + oci +
			"LABEL io.haloforge.pin.SOURCE_BASE_IMAGE=\"${SOURCE_BASE_IMAGE}\" io.haloforge.pin.SOURCE_VLLM_REF=\"${SOURCE_VLLM_REF}\"\n", nil},
		{"digest literal is pinned", "FROM docker.io/library/alpine@sha256:" + strings.Repeat("a", 64) + "\nARG SOURCE_BASE_IMAGE=x\n" + oci, []string{
			"no label io.haloforge.pin.SOURCE_BASE_IMAGE", "ARG SOURCE_BASE_IMAGE default \"x\" differs"}},
		{"floating literal", "FROM registry.fedoraproject.org/fedora:43\n" + oci, []string{"neither pinned by digest", "uses SOURCE_BASE_IMAGE", "lacks label org.opencontainers.image.base.name"}},
		{"default disagrees", "ARG SOURCE_BASE_IMAGE=registry.fedoraproject.org/fedora:42\nFROM ${SOURCE_BASE_IMAGE}\nARG SOURCE_BASE_IMAGE\n" + oci +
			"LABEL io.haloforge.pin.SOURCE_BASE_IMAGE=\"${SOURCE_BASE_IMAGE}\"\n", []string{"differs from versions.env", "label io.haloforge.pin.SOURCE_BASE_IMAGE is"}},
		{"label of an undeclared arg", "ARG SOURCE_BASE_IMAGE=registry.fedoraproject.org/fedora:43\nFROM ${SOURCE_BASE_IMAGE}\nARG SOURCE_BASE_IMAGE\n" + oci +
			"LABEL io.haloforge.pin.SOURCE_BASE_IMAGE=\"${SOURCE_BASE_IMAGE}\" io.haloforge.pin.SOURCE_VLLM_REF=\"${SOURCE_VLLM_REF}\"\n", []string{"uses SOURCE_VLLM_REF", "label io.haloforge.pin.SOURCE_VLLM_REF is \"\""}},
		{"pin arg without label", "ARG SOURCE_BASE_IMAGE=registry.fedoraproject.org/fedora:43\nFROM ${SOURCE_BASE_IMAGE}\nARG SOURCE_BASE_IMAGE\nARG SOURCE_VLLM_REF=01efc7ef781391e744ed08c3292817a773d654e6\n" + oci +
			"LABEL io.haloforge.pin.SOURCE_BASE_IMAGE=\"${SOURCE_BASE_IMAGE}\"\n", []string{"pin SOURCE_VLLM_REF is used but"}},
		{"unknown pin label", "ARG SOURCE_BASE_IMAGE=registry.fedoraproject.org/fedora:43\nFROM ${SOURCE_BASE_IMAGE}\nARG SOURCE_BASE_IMAGE\n" + oci +
			"LABEL io.haloforge.pin.SOURCE_BASE_IMAGE=\"${SOURCE_BASE_IMAGE}\" io.haloforge.pin.NOT_A_PIN=1\n", []string{"names no known pin"}},
		{"arg from an undeclared name", "FROM ${NOWHERE}\n" + oci, []string{"ARG NOWHERE is not declared", "NOWHERE, which is not a versions.env pin", "uses SOURCE_BASE_IMAGE", "lacks label org.opencontainers.image.base.name"}},
		{"multi-stage inherits labels", "ARG SOURCE_BASE_IMAGE=registry.fedoraproject.org/fedora:43\nFROM ${SOURCE_BASE_IMAGE} AS build\nARG SOURCE_BASE_IMAGE\n" + oci +
			"LABEL io.haloforge.pin.SOURCE_BASE_IMAGE=\"${SOURCE_BASE_IMAGE}\"\nFROM build AS final\nRUN true\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cf, err := parseContainerfile(tt.name, []byte(tt.file))
			if err != nil {
				t.Fatal(err)
			}
			got := c.check(cf)
			if len(got) != len(tt.want) {
				t.Fatalf("got %d problems, want %d:\n%s", len(got), len(tt.want), strings.Join(got, "\n"))
			}
			for _, w := range tt.want {
				if !slices.ContainsFunc(got, func(p string) bool { return strings.Contains(p, w) }) {
					t.Errorf("no problem mentions %q in:\n%s", w, strings.Join(got, "\n"))
				}
			}
		})
	}
}

// FuzzContainerfileCheck feeds arbitrary definitions through buildkit's parser and the
// checker: whatever parses must be checked without a panic, and the same way twice.
func FuzzContainerfileCheck(f *testing.F) {
	entries, err := os.ReadDir(".")
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		n := e.Name()
		if strings.HasPrefix(n, "Containerfile") || strings.HasPrefix(n, "Dockerfile") {
			data, err := os.ReadFile(n)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
	f.Add([]byte("FROM scratch\n"))
	f.Add([]byte("ARG A=${B:-x}\nFROM ${A}@sha256:" + strings.Repeat("0", 64) + " AS a\nFROM a\nLABEL io.haloforge.pin.GPU_TARGET=$GPU_TARGET\n"))
	c := checker{pins: map[string]string{"GPU_TARGET": "gfx1151", "SOURCE_BASE_IMAGE": "registry.fedoraproject.org/fedora:43"}}
	f.Fuzz(func(t *testing.T, data []byte) {
		cf, err := parseContainerfile("fuzz", data)
		if err != nil {
			return
		}
		first := c.check(cf)
		if again := c.check(cf); !slices.Equal(first, again) {
			t.Fatalf("check is not deterministic:\n%v\n%v", first, again)
		}
	})
}
