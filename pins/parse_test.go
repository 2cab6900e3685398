package pins

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func repoVersionsEnv(t testing.TB) []byte {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	b, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "versions.env"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseRealVersionsEnv(t *testing.T) {
	f, err := Parse("versions.env", repoVersionsEnv(t))
	if err != nil {
		t.Fatalf("the shipped versions.env must parse: %v", err)
	}
	v := f.Values()
	for name, want := range map[string]string{
		"GPU_TARGET":        "gfx1151",
		"PYTORCH_ROCM_ARCH": "gfx1151",           // via ${GPU_TARGET}
		"TORCH_VERSION":     "2.11.0+rocm10.0.0", // the ROCm 10 set, via ${ROCM_VERSION}
		"CK_REF":            "rocm-10.0.0",
		"SPOOF_BASE_DIGEST": "sha256:a92fa9cb915027468e85e147f4dd1c87f026d7974610280546a2a1f94a146889",
		"VLLM_IMAGE":        "docker.io/rocm/vllm:rocm10.0.0_ubuntu24.04_py3.14_pytorch_2.12.0_vllm_0.27.0@sha256:b8a082f346d069376d35784250e38b23a043efe979408ae3a33d7c6b62ee3276",
	} {
		if v[name] != want {
			t.Errorf("%s = %q, want %q", name, v[name], want)
		}
	}
	for _, s := range Specs() {
		if _, ok := v[s.Name]; !ok {
			t.Errorf("versions.env does not define known name %s", s.Name)
		}
		if p, _ := f.Get(s.Name); p.Comment == "" {
			t.Errorf("%s has no source comment above it", s.Name)
		}
	}
	if !contains(f.Floating(), "NIGHTLY_IMAGE") || contains(f.Floating(), "VLLM_REF") {
		t.Errorf("floating = %v: want NIGHTLY_IMAGE flagged and VLLM_REF (a SHA) not", f.Floating())
	}
}

func contains(s []string, x string) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}

// TestParseRejects covers the bad-input list: every case names the
// file and line and nothing in the file is ever executed.
func TestParseRejects(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "pwned")
	tests := []struct {
		name, input string
		line        int
		reason      string
	}{
		{"command substitution", "VLLM_REF=$(touch " + marker + ")\n", 1, "command substitution"},
		{"backticks", "GPU_TARGET=gfx1151\nVLLM_REF=`touch " + marker + "`\n", 2, "backticks"},
		{"semicolon", "GPU_TARGET=gfx1151; touch " + marker + "\n", 1, "one assignment per line"},
		{"and-and", "GPU_TARGET=gfx1151 && touch " + marker + "\n", 1, "only NAME=value"},
		{"export", "export GPU_TARGET=gfx1151\n", 1, "declaration"},
		{"source", "source /etc/passwd\n", 1, "command \"source\""},
		{"unknown name", "# ok\nFOO=bar\n", 2, "unknown name FOO"},
		{"duplicate", "GPU_TARGET=gfx1151\nGPU_TARGET=gfx1100\n", 2, "duplicate GPU_TARGET (first defined on line 1)"},
		{"short digest", "SPOOF_BASE_DIGEST=sha256:a92fa9cb\n", 1, "digest has 8 hex digits, want 64"},
		{"http index", "THEROCK_INDEX_URL=http://repo.amd.com/rocm/whl-multi-arch/\n", 1, "want an https URL"},
		{"unterminated quote", "VLLM_REF=\"abc\n", 1, "not valid shell"},
		{"undefined reference", "PYTORCH_ROCM_ARCH=${GPU_TARGET}\nGPU_TARGET=gfx1151\n", 1, "not defined on an earlier line"},
		{"CRLF", "GPU_TARGET=gfx1151\r\n", 1, "CRLF"},
		{"10 MB line", "VLLM_REF=" + strings.Repeat("a", 10<<20) + "\n", 1, "bytes long"},
		{"binary garbage", "GPU_TARGET=gfx1151\n\x7fELF\x02\x01\x01\x00\x00\x00\n", 2, "NUL byte"},
		{"invalid utf-8", "GPU_TARGET=gfx1151\n\xff\xfe\n", 2, "invalid UTF-8"},
		{"arithmetic", "LLAMA_STALL_TIMEOUT=$((60*5))\n", 1, "arithmetic"},
		{"redirection", "GPU_TARGET=gfx1151 > " + marker + "\n", 1, "redirections"},
		{"parameter operator", "VLLM_REF=${GPU_TARGET:-main}\n", 1, "only plain ${NAME}"},
		{"two assigns", "GPU_TARGET=gfx1151 PYTHON_VERSION=3.12\n", 1, "one assignment per line"},
		{"function", "f() { touch " + marker + "; }\n", 1, "a function"},
		{"bad gfx", "GPU_TARGET=gfx1151;rm\n", 1, "one assignment per line"},
		{"bad sha", "AITER_REF=not a sha\n", 1, "only NAME=value"},
		{"empty required", "VLLM_REF=\n", 1, "empty value"},
		{"image with spaces", "VLLM_IMAGE='rocm/vllm dev'\n", 1, "image reference"},
		{"append", "GPU_TARGET+=gfx1100\n", 1, "plain NAME=value"},
		{"glob", "TOOLBOX_NAME=box*\n", 1, "glob"},
		{"byte-order mark", "\ufeff# pins\nGPU_TARGET=gfx1151\n", 1, "byte-order mark"},
		{"URL with a look-alike host", "THEROCK_INDEX_URL=https://r\u0435po.amd.com/rocm/\n", 1, "non-ASCII character"},
		{"URL with shell characters", "THEROCK_INDEX_URL='https://repo.amd.com/x;id|y&z>w<v(u)'\n", 1, "shell's special characters"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("test.env", []byte(tc.input))
			if err == nil {
				t.Fatalf("accepted %q", tc.input)
			}
			msg := err.Error()
			if want := "test.env:" + strconv.Itoa(tc.line) + ":"; !strings.HasPrefix(msg, want) {
				t.Errorf("error %q does not start with %q", msg, want)
			}
			if !strings.Contains(msg, tc.reason) {
				t.Errorf("error %q does not say %q", msg, tc.reason)
			}
			var pe *Error
			if !errors.As(err, &pe) {
				t.Errorf("error is not a *pins.Error: %T", err)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Fatal("the pins file executed a command")
			}
		})
	}
}

// TestParseQuoteLine: an unbalanced quote is reported where it opens, in a
// file where the shell parser only notices it dozens of lines further down
// (unbalanced double and single quotes), and alone.
func TestParseQuoteLine(t *testing.T) {
	real := repoVersionsEnv(t)
	lines := strings.Split(string(real), "\n")
	at := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "ROCM_VERSION=") })
	if at < 0 {
		t.Fatal("versions.env has no ROCM_VERSION line")
	}
	value := strings.TrimPrefix(lines[at], "ROCM_VERSION=")
	col := len("ROCM_VERSION=") + 1
	tests := []struct{ name, line string }{
		{"double quote", `ROCM_VERSION="` + value},
		{"single quote", `ROCM_VERSION='` + value},
		{"double quote with a command on the next line", `ROCM_VERSION="` + value + "\ntouch pwned\""},
		{"$'…' string", `ROCM_VERSION=$'` + value},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			edited := slices.Clone(lines)
			edited[at] = tc.line
			_, err := Parse("unbal.env", []byte(strings.Join(edited, "\n")))
			if err == nil {
				t.Fatal("accepted")
			}
			msg := err.Error()
			want := fmt.Sprintf("unbal.env:%d:%d: ", at+1, col)
			if !strings.HasPrefix(msg, want) || !strings.Contains(msg, "not closed on this line") {
				t.Errorf("error %q, want it to start with %q and say the quote is not closed", msg, want)
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("one error expected, not the misparsed lines below it:\n%s", msg)
			}
		})
	}
	// A quote inside a comment, a $'…' escape and "…" with an escaped quote
	// are balanced and must not be blamed.
	ok := "# don't panic\nTOOLBOX_NAME=\"a\\\"b\" # it's fine\n"
	if _, err := Parse("ok.env", []byte(ok)); err == nil || strings.Contains(err.Error(), "not closed") {
		t.Errorf("balanced quotes blamed: %v", err)
	}
}

// TestParseNoCascade: a pin that refers to a refused pin is not reported
// again: the one real error is the message.
func TestParseNoCascade(t *testing.T) {
	in := "GPU_TARGET=gfx1151\nROCM_VERSION=latest\nTORCH_VERSION=2.11.0+rocm${ROCM_VERSION}\nTORCHVISION_VERSION=0.26.0+rocm${ROCM_VERSION}\n"
	_, err := Parse("c.env", []byte(in))
	if err == nil {
		t.Fatal("accepted")
	}
	if msg := err.Error(); !strings.HasPrefix(msg, "c.env:2:1: ROCM_VERSION") || strings.Contains(msg, "\n") {
		t.Errorf("want exactly the ROCM_VERSION error, got:\n%s", msg)
	}
}

func TestParseAccepts(t *testing.T) {
	in := "# comment\n\n# source of the pin\nGPU_TARGET=gfx1151\nPYTORCH_ROCM_ARCH=\"${GPU_TARGET};gfx1100\"\nTOOLBOX_NAME='box-1'\nLLAMA_MODEL=\nVLLM_REF=main\n"
	f, err := Parse("ok.env", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	got := f.Values()
	want := map[string]string{"GPU_TARGET": "gfx1151", "PYTORCH_ROCM_ARCH": "gfx1151;gfx1100", "TOOLBOX_NAME": "box-1", "LLAMA_MODEL": "", "VLLM_REF": "main"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("values (-want +got):\n%s", d)
	}
	if p, _ := f.Get("GPU_TARGET"); p.Comment != "source of the pin" || p.Line != 4 {
		t.Errorf("GPU_TARGET comment/line = %q/%d", p.Comment, p.Line)
	}
	if fl := f.Floating(); len(fl) != 1 || fl[0] != "VLLM_REF" {
		t.Errorf("floating = %v, want [VLLM_REF] (a branch)", fl)
	}
}

func TestValidateKinds(t *testing.T) {
	tests := []struct {
		kind     Kind
		value    string
		ok       bool
		floating bool
	}{
		{KindSHA, "6e448d0ea9bf3d88d898b65449ca6dc2aec170ac", true, false},
		{KindSHA, "6e448d0", false, false},
		{KindRef, "v0.10.2", true, false},
		{KindRef, "b10590", true, false},
		{KindRef, "main_perf", true, true},
		{KindRef, "release/2.6", true, true},
		{KindRef, "../etc", false, false},
		{KindRef, "-x", false, false},
		{KindPath, "--help", false, false}, // LLAMA_MODEL=--help would reach llama-bench as an option
		{KindPath, "-rf", false, false},
		{KindPath, "/models/a-b.gguf", true, false}, // a dash inside is fine
		{KindName, "-box", false, false},
		{KindModel, "-Qwen/Qwen3-0.6B", false, false},
		{KindImage, "docker.io/rocm/vllm-dev:nightly", true, true},
		{KindImage, "docker.io/library/ubuntu:24.04", true, false},
		{KindImage, "ubuntu", true, true},
		{KindImage, "docker.io/rocm/vllm-dev@sha256:a92fa9cb915027468e85e147f4dd1c87f026d7974610280546a2a1f94a146889", true, false},
		{KindImage, "localhost:5000/x/y:1", true, false},
		{KindImage, "Docker.io/UPPER:1", false, false},
		{KindRepo, "docker.io/rocm/vllm-dev", true, false},
		{KindRepo, "docker.io/rocm/vllm-dev:1", false, false},
		{KindURL, "https://repo.amd.com/rocm/whl-multi-arch/", true, false},
		{KindURL, "http://repo.amd.com/", false, false},
		{KindURL, "https://user:pw@host/", false, false},
		{KindURL, "file:///etc/passwd", false, false},
		{KindURL, "https://localhost:8443/simple/", true, false},
		{KindURL, "https://10.0.0.2/whl/?x=1", true, false},
		{KindURL, "https://github.com/ROCm/aiter.git", true, false},
		{KindURL, "https://xn--rpo-bed.amd.com/rocm/", true, false}, // punycode: ASCII, cannot pass for repo.amd.com
		{KindURL, "https://r\u0435po.amd.com/rocm/", false, false},  // Cyrillic е
		{KindURL, "https://repo.amd.com/r\u00f6cm/", false, false},  // raw non-ASCII in the path too
		{KindURL, "https://repo.amd.com\uff0frocm/", false, false},  // full-width solidus
		{KindURL, "https://r%D0%B5po.amd.com/", false, false},       // the look-alike, percent-escaped
		{KindURL, "https://repo.amd.com/x;id", false, false},
		{KindURL, "https://repo.amd.com/x|y", false, false},
		{KindURL, "https://repo.amd.com/x&y", false, false},
		{KindURL, "https://repo.amd.com/x>y", false, false},
		{KindURL, "https://repo.amd.com/x<y", false, false},
		{KindURL, "https://repo.amd.com/x(y)", false, false},
		{KindURL, "https://repo.amd.com/x y", false, false},
		{KindURL, "https://repo.amd.com/x\ty", false, false},
		{KindURL, "https://repo.amd.com/$HOME", false, false},
		{KindURL, "https://repo.amd.com/x*", false, false},
		{KindURL, "https://repo.amd.com/{a,b}", false, false},
		{KindURL, "https://[::1]/x", false, false},
		{KindURL, "https://repo.amd.com:0/", false, false},
		{KindURL, "https://repo.amd.com:99999/", false, false},
		{KindURL, "https://-repo.amd.com/", false, false},
		{KindURL, "https://repo..amd.com/", false, false},
		{KindURL, "https:repo.amd.com/x", false, false},
		{KindURL, "HTTPS://repo.amd.com/", false, false},
		{KindURL, "https://user@repo.amd.com/", false, false},
		{KindVersion, "2.11.0+rocm7.14.0", true, false},
		{KindVersion, "latest", false, false},
		{KindInt, "300", true, false},
		{KindInt, "-1", false, false},
		{KindGFX, "gfx1151;gfx1100", true, false},
		{KindGFX, "gfx1151,gfx1100", false, false},
		{KindName, "haloforge-therock", true, false},
		{KindName, "a b", false, false},
		{KindPath, "/models/x.gguf", true, false},
		{KindPath, "/models/x y.gguf", false, false},
		{KindDigest, "sha256:" + strings.Repeat("0", 64), true, false},
		{KindDigest, "sha512:" + strings.Repeat("0", 64), false, false},
	}
	for _, tc := range tests {
		fl, err := validate(Spec{Name: "X", Kind: tc.kind}, tc.value)
		if (err == nil) != tc.ok || (err == nil && fl != tc.floating) {
			t.Errorf("validate(%s, %q) = floating %v, err %v; want ok=%v floating=%v", tc.kind, tc.value, fl, err, tc.ok, tc.floating)
		}
	}
}

func TestSetOverride(t *testing.T) {
	f, err := Parse("versions.env", repoVersionsEnv(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Set("GPU_TARGET=gfx1100"); err != nil {
		t.Fatal(err)
	}
	if v := f.Values(); v["GPU_TARGET"] != "gfx1100" || v["PYTORCH_ROCM_ARCH"] != "gfx1100" {
		t.Errorf("after --set GPU_TARGET: %q / %q; a ${GPU_TARGET} reference must follow", v["GPU_TARGET"], v["PYTORCH_ROCM_ARCH"])
	}
	for _, bad := range []string{"VLLM_REF=$(touch x)", "NOPE=1", "SPOOF_BASE_DIGEST=sha256:abc", "novalue", "THEROCK_INDEX_URL=http://x/"} {
		before := f.Values()
		if err := f.Set(bad); err == nil {
			t.Errorf("--set %q accepted", bad)
		}
		if d := cmp.Diff(before, f.Values()); d != "" {
			t.Errorf("a refused --set %q changed the pins:\n%s", bad, d)
		}
	}
}

func TestDiff(t *testing.T) {
	old, _ := Parse("a", []byte("GPU_TARGET=gfx1151\nPYTORCH_ROCM_ARCH=${GPU_TARGET}\nVLLM_REF=v0.10.2\n"))
	nw, _ := Parse("b", []byte("GPU_TARGET=gfx1100\nPYTORCH_ROCM_ARCH=${GPU_TARGET}\nAITER_REF=v0.1.19\n"))
	d := Diff(old, nw)
	if got := ChangedNames(d); !cmp.Equal(got, []string{"AITER_REF", "GPU_TARGET", "PYTORCH_ROCM_ARCH", "VLLM_REF"}) {
		t.Errorf("changed = %v", got)
	}
	if d["VLLM_REF"].New != nil || *d["VLLM_REF"].Old != "v0.10.2" || d["AITER_REF"].Old != nil {
		t.Errorf("added/removed not null on the missing side: %+v", d)
	}
}

func FuzzParse(f *testing.F) {
	f.Add(repoVersionsEnv(f))
	for _, s := range []string{"A=$(x)", "GPU_TARGET=gfx1151\n", "VLLM_REF=\"${GPU_TARGET}\"\n", "x=`y`", "\x00", "'", "GPU_TARGET=gfx1151 # c\n",
		// hostile inputs: quotes left open over lines
		"ROCM_VERSION=\"7.14.0\nGPU_TARGET=\"gfx1151\"\n", "ROCM_VERSION='7.14.0\n# don't\n",
		"THEROCK_INDEX_URL=https://r\u0435po.amd.com/rocm/\n", "THEROCK_INDEX_URL='https://repo.amd.com/x;id|y&z>w<v(u)'\n",
		"THEROCK_INDEX_URL=https://xn--rpo-bed.amd.com/rocm/\n", "\ufeffGPU_TARGET=gfx1151\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		pf, err := Parse("fuzz.env", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.env:") {
				t.Fatalf("error without file:line: %v", err)
			}
			return
		}
		for _, p := range pf.Pins {
			spec, known := Lookup(p.Name)
			if !known {
				t.Fatalf("unknown name accepted: %s", p.Name)
			}
			if _, err := validate(spec, p.Value); err != nil {
				t.Fatalf("invalid value accepted: %s=%q: %v", p.Name, p.Value, err)
			}
			if strings.ContainsAny(p.Value, "$`\\\n\x00") {
				t.Fatalf("shell metacharacter reached a value: %q", p.Value)
			}
			if p.Kind == KindURL && strings.ContainsFunc(p.Value, func(r rune) bool { return r > 0x7e || r < 0x80 && !urlByte(byte(r)) }) {
				t.Fatalf("a URL with a non-ASCII or shell character was accepted: %q", p.Value)
			}
		}
	})
}

// TestCommentSkipsSectionRules: a section rule above a pin's comment is a
// heading, not part of the pin's source (pins lock copies the source).
func TestCommentSkipsSectionRules(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"rule then source", "# ---- shared ----------\n# Strix Halo's target\nGPU_TARGET=gfx1151\n", "Strix Halo's target"},
		{"rule alone", "# ---- shared ----\nGPU_TARGET=gfx1151\n", ""},
		{"two lines", "# first\n# second\nGPU_TARGET=gfx1151\n", "first second"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Parse("c.env", []byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if p, _ := f.Get("GPU_TARGET"); p.Comment != tc.want {
				t.Errorf("comment %q, want %q", p.Comment, tc.want)
			}
		})
	}
}
