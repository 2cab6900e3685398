package diagnose

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/google/go-cmp/cmp"
)

// feed runs lines through a live matcher and returns what Line reported.
func feed(m *Matcher, lines ...string) []string {
	var out []string
	for i, l := range lines {
		for f := m.Line(i+1, l); f != nil; f = m.Next() {
			out = append(out, f.Family)
		}
	}
	return out
}

func TestLineReportsOncePerFamilyAndCounts(t *testing.T) {
	m := NewMatcher(MatcherOptions{Step: "vllm", File: "vllm.log"})
	got := feed(m,
		"[1/9] Building HIP object a.o",
		"c++: fatal error: Killed signal terminated program cc1plus",
		"[2/9] Building HIP object b.o",
		"c++: fatal error: Killed signal terminated program cc1plus",
		"clang: error: unable to execute command: Killed",
	)
	if diff := cmp.Diff([]string{"build-oom-killed"}, got); diff != "" {
		t.Fatalf("new findings (-want +got):\n%s", diff)
	}
	fs := m.Findings()
	if len(fs) != 1 {
		t.Fatalf("findings = %v", fs)
	}
	f := fs[0]
	if f.Line != 2 || f.Count != 3 || f.Step != "vllm" || f.File != "vllm.log" || f.Fix == "" || f.Summary == "" {
		t.Errorf("finding = %+v", f)
	}
	if f.Text != "c++: fatal error: Killed signal terminated program cc1plus" {
		t.Errorf("text = %q", f.Text)
	}
}

func TestLineCleansEscapesAndRedraws(t *testing.T) {
	tests := []struct {
		name, line, want string
	}{
		{"colour splits nothing", "\x1b[1m\x1b[31mHIP error: invalid device function\x1b[0m", "HIP error: invalid device function"},
		{"colour inside the signature", "HIP error: invalid \x1b[1mdevice\x1b[0m function", "HIP error: invalid device function"},
		{"progress bar redrawn", "Downloading 10%\rDownloading 90%\rcudaMalloc failed: out of memory\r\n", "cudaMalloc failed: out of memory"},
		{"signature only in an overwritten redraw", "HIP out of memory\rall good now", ""},
		{"OSC title", "\x1b]0;build\x07Compatibility with CMake < 3.5 has been removed from CMake.", "Compatibility with CMake < 3.5 has been removed from CMake."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := NewMatcher(MatcherOptions{})
			f := m.Line(7, tt.line)
			switch {
			case tt.want == "" && f != nil:
				t.Fatalf("want nothing, got %+v", f)
			case tt.want != "" && f == nil:
				t.Fatal("want a finding, got none")
			case f != nil && (f.Text != tt.want || f.Line != 7):
				t.Errorf("text %q line %d, want %q line 7", f.Text, f.Line, tt.want)
			}
		})
	}
}

func TestSeveralNewFamiliesOnOneLine(t *testing.T) {
	m := NewMatcher(MatcherOptions{})
	got := feed(m, `clang rejects them with "instruction not supported on this GPU" / "needs target feature fp8-conversion-insts"`)
	want := []string{"gfx11-inline-asm-unsupported", "aiter-fp8-conversion-insts-gfx11"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestRulesFollowStepAndTrack(t *testing.T) {
	line := "  Attempting uninstall: torch"
	if f := NewMatcher(MatcherOptions{Track: "therock-toolbox", Step: "rocm"}).Line(1, line); f != nil {
		t.Errorf("the rocm step installs torch by design, got %+v", f)
	}
	if f := NewMatcher(MatcherOptions{Track: "therock-toolbox", Step: "vllm"}).Line(1, line); f == nil || f.Family != "vllm-torch-version-conflict" {
		t.Errorf("the vllm step must not replace torch, got %+v", f)
	}
	spoof := []string{"Illegal instruction (core dumped)"}
	if got := feed(NewMatcher(MatcherOptions{Track: "therock-toolbox"}), spoof...); len(got) != 0 {
		t.Errorf("no spoof on therock-toolbox, got %v", got)
	}
	if got := feed(NewMatcher(MatcherOptions{Track: "nightly-spoof"}), spoof...); len(got) != 1 || got[0] != "hsa-override-spoof-crash" {
		t.Errorf("nightly-spoof runs under the spoof, got %v", got)
	}
	if got := feed(NewMatcher(MatcherOptions{}), "export HSA_OVERRIDE_GFX_VERSION=11.0.0", "python run.py", "Illegal instruction (core dumped)"); len(got) != 1 {
		t.Errorf("spoof set in the log, got %v", got)
	}
	warn := "WARN: RDNA3 kernels on RDNA 3.5 can die with 'Illegal instruction' or a GPU memory access fault"
	if got := feed(NewMatcher(MatcherOptions{Track: "nightly-spoof"}), warn); len(got) != 0 {
		t.Errorf("a warning that quotes the crash is not the crash, got %v", got)
	}
	bash := "bash: line 1:  4242 Illegal instruction     (core dumped) python -c 'import torch'"
	if got := feed(NewMatcher(MatcherOptions{Track: "locked-spoof"}), bash); len(got) != 1 {
		t.Errorf("the shell's report of the crash, got %v", got)
	}
}

func TestContextWindow(t *testing.T) {
	near := feed(NewMatcher(MatcherOptions{}), "ROCk module is loaded", "Segmentation fault (core dumped)")
	if len(near) != 1 || near[0] != "hsa-runtime-segfault-init" {
		t.Errorf("segfault right after rocminfo's banner: %v", near)
	}
	lines := []string{"ROCk module is loaded"}
	for range 10 {
		lines = append(lines, "[ 10%] Building CXX object x.o")
	}
	lines = append(lines, "Segmentation fault (core dumped)")
	if far := feed(NewMatcher(MatcherOptions{}), lines...); len(far) != 0 {
		t.Errorf("a segfault far from any ROCm start-up is not this family: %v", far)
	}
}

// TestUnlessContext checks the veto context: a lost Vulkan device right
// after a failed allocation is the memory family alone, one far from it is
// the lost device, and a line of the veto after the match changes nothing.
func TestUnlessContext(t *testing.T) {
	lost := "E srv  update_slots: decode() failed: vk::Queue::submit: ErrorDeviceLost"
	cases := []struct {
		name string
		log  []string
		want []string
	}{
		{"alone", []string{lost}, []string{"vulkan-device-lost"}},
		{"right after a failed allocation", []string{"radv/amdgpu: Not enough memory for command submission.", lost},
			[]string{"vulkan-device-memory-limit"}},
		{"far after a failed allocation", append(append([]string{"radv/amdgpu: Not enough memory for command submission."},
			slices.Repeat([]string{"I slot update_slots: id  0 | task 1 | prompt processing progress"}, 40)...), lost),
			[]string{"vulkan-device-memory-limit", "vulkan-device-lost"}},
		{"the allocation failure after the loss", []string{lost, "ggml_vulkan: vk::Device::allocateMemory: ErrorOutOfDeviceMemory"},
			[]string{"vulkan-device-lost", "vulkan-device-memory-limit"}},
		{"anywhere after an NVIDIA banner", append([]string{"  Device 0: NVIDIA GeForce GTX 1070, compute capability 6.1, VMM: yes"},
			append(slices.Repeat([]string{"llama_model_load: loading"}, 500), "CUDA error: invalid device function")...), nil},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			if got := feed(NewMatcher(MatcherOptions{}), tt.log...); !slices.Equal(got, tt.want) {
				t.Errorf("families %v, want %v", got, tt.want)
			}
		})
	}
}

// The stall tests drive the watchdog with explicit durations: Idle takes the
// silence as an argument, so no test sleeps.
func TestStallLive(t *testing.T) {
	markers := map[string]string{
		"llamacpp-rocm-load-hang-sdma":     "load_all_data: using async uploads for device ROCm0, buffer type ROCm0, backing buffer size = 14.35 GiB",
		"llamacpp-rocm-graph-reserve-hang": "graph_reserve: reserving a graph for ubatch with n_tokens =  512, n_seqs =  1, n_outputs =  512",
	}
	for family, marker := range markers {
		t.Run(family, func(t *testing.T) {
			m := NewMatcher(MatcherOptions{Track: "llamacpp-rocm", StallTimeout: time.Minute})
			feed(m, "llama_model_loader: loaded meta data", marker)
			if f := m.Idle(59 * time.Second); f != nil {
				t.Fatalf("before the timeout: %+v", f)
			}
			f := m.Idle(time.Minute)
			if f == nil || f.Family != family || !f.Stall || f.Line != 2 {
				t.Fatalf("after the timeout: %+v", f)
			}
			if again := m.Idle(2 * time.Minute); again != nil {
				t.Errorf("reported twice: %+v", again)
			}
		})
		t.Run(family+"/output resumes", func(t *testing.T) {
			m := NewMatcher(MatcherOptions{StallTimeout: time.Minute})
			feed(m, marker, "", "llama_context: constructing llama_context")
			if f := m.Idle(time.Hour); f != nil {
				t.Errorf("a later line resets the watchdog, got %+v", f)
			}
			if fs := m.End(); len(fs) != 0 {
				t.Errorf("healthy run: %v", fs)
			}
		})
		t.Run(family+"/blank lines after the marker", func(t *testing.T) {
			m := NewMatcher(MatcherOptions{StallTimeout: time.Minute})
			feed(m, marker, "", "   ")
			if f := m.Idle(time.Minute); f == nil {
				t.Error("blank lines are not output")
			}
		})
		t.Run(family+"/other track", func(t *testing.T) {
			m := NewMatcher(MatcherOptions{Track: "llamacpp-vulkan", StallTimeout: time.Minute})
			feed(m, marker)
			if f := m.Idle(time.Hour); f != nil {
				t.Errorf("the rule is for the ROCm backend only: %+v", f)
			}
		})
	}
}

func TestStallDefaultTimeout(t *testing.T) {
	m := NewMatcher(MatcherOptions{})
	feed(m, "load_all_data: using async uploads for device ROCm0")
	if f := m.Idle(DefaultStallTimeout - time.Second); f != nil {
		t.Fatalf("before the default timeout: %+v", f)
	}
	if f := m.Idle(DefaultStallTimeout); f == nil {
		t.Fatal("no stall after the default timeout")
	}
}

func TestStallOffline(t *testing.T) {
	tests := []struct {
		name string
		log  string
		want []string
	}{
		{"ends at load marker", "load_tensors: offloaded 49/49 layers to GPU\nload_all_data: using async uploads for device ROCm0\n\n", []string{"llamacpp-rocm-load-hang-sdma"}},
		{"ends at graph marker, CI timestamps", "2026-01-02T10:00:00.1Z llama_context: n_ctx = 4096\n2026-01-02T10:00:01.2Z graph_reserve: reserving a graph for ubatch with n_tokens = 512\n2026-01-02T10:30:00.0Z \n", []string{"llamacpp-rocm-graph-reserve-hang"}},
		{"marker in the middle", "load_all_data: using async uploads for device ROCm0\nload_tensors: done\nmain: server is listening\n", nil},
		{"no trailing newline", "graph_reserve: reserving a graph for ubatch", []string{"llamacpp-rocm-graph-reserve-hang"}},
		{"fenced in a bug report", "```\nload_all_data: using async uploads for device ROCm0\n```\n", []string{"llamacpp-rocm-load-hang-sdma"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs, err := Scan(strings.NewReader(tt.log), MatcherOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range fs {
				got = append(got, f.Family)
				if !f.Stall {
					t.Errorf("%s not marked as a stall", f.Family)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestScanLineNumbersAcrossChunks(t *testing.T) {
	var b strings.Builder
	for range 200_000 { // ~7 MB: several read chunks
		b.WriteString("[ 50%] Building CXX object caffe2/x.cpp.o\n")
	}
	b.WriteString("\x1b[31mclang: error: unable to execute command: \x1b[1mKilled\x1b[0m\n")
	b.WriteString("tail\n")
	fs, err := Scan(iotest.HalfReader(strings.NewReader(b.String())), MatcherOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 1 || fs[0].Line != 200_001 || fs[0].Family != "build-oom-killed" {
		t.Fatalf("findings = %+v", fs)
	}
}

func TestScanOverlongLine(t *testing.T) {
	long := bytes.Repeat([]byte("x"), 20<<20) // longer than maxLine
	in := io.MultiReader(strings.NewReader("first\n"), bytes.NewReader(long),
		strings.NewReader(" HIP out of memory. Tried to allocate\nnext line\n"))
	fs, err := Scan(in, MatcherOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 1 || fs[0].Line != 2 || len(fs[0].Text) > maxTextLen+8 || !strings.Contains(fs[0].Text, "HIP out of memory") {
		t.Fatalf("findings = %+v", fs)
	}
}

func TestScanReadError(t *testing.T) {
	boom := errors.New("disk on fire")
	r := io.MultiReader(strings.NewReader("double free or corruption (!prev)\n"), iotest.ErrReader(boom))
	fs, err := Scan(r, MatcherOptions{})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	if len(fs) != 1 {
		t.Errorf("findings so far are kept: %v", fs)
	}
}

// TestScanMatchesLine checks that the bulk path and the line path agree on
// every corpus and holdout log.
func TestScanMatchesLine(t *testing.T) {
	rows := append(loadSamples(t, "testdata/corpus.jsonl"), loadSamples(t, "testdata/holdout.jsonl")...)
	for _, row := range rows {
		fs, err := Scan(strings.NewReader(row.Log), MatcherOptions{})
		if err != nil {
			t.Fatal(err)
		}
		m := NewMatcher(MatcherOptions{})
		for i, l := range strings.Split(row.Log, "\n") {
			m.Line(i+1, l)
		}
		if diff := cmp.Diff(fs, m.End()); diff != "" {
			t.Errorf("%s: Scan and Line differ (-scan +line):\n%s", row.ID, diff)
		}
	}
}

func TestRulesAreComplete(t *testing.T) {
	ids := map[string]bool{}
	for _, r := range Rules() {
		ids[r.ID] = true
		if r.Title == "" || r.Summary == "" || r.Cause == "" || r.Fix == "" || len(r.Signals) == 0 {
			t.Errorf("%s: incomplete rule", r.ID)
		}
		if !r.Seed && len(r.Links) == 0 {
			t.Errorf("%s: a family from public reports needs its links", r.ID)
		}
		if got, ok := RuleByID(r.ID); !ok || got.ID != r.ID {
			t.Errorf("RuleByID(%s) = %v, %v", r.ID, got.ID, ok)
		}
	}
	for _, row := range loadSamples(t, "testdata/corpus.jsonl") {
		if row.Family != "none" && !ids[row.Family] {
			t.Errorf("corpus family %s has no rule", row.Family)
		}
	}
	if _, ok := RuleByID("no-such-family"); ok {
		t.Error("RuleByID invented a rule")
	}
}

// TestEveryFailuresFamilyHasARule reads the taxonomy table of testdata/FAILURES.md
// (a copy in testdata) and checks that each family ID has a rule, with the
// seed mark where the table has one, and that each rule has its row.
func TestEveryFailuresFamilyHasARule(t *testing.T) {
	data, err := os.ReadFile("testdata/FAILURES.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `([a-z0-9-]+)`( \\*\\(seed\\)\\*)? \\|")
	matches := row.FindAllStringSubmatch(string(data), -1)
	if len(matches) < 30 {
		t.Fatalf("only %d families parsed from testdata/FAILURES.md", len(matches))
	}
	inTable := map[string]bool{}
	for _, m := range matches {
		inTable[m[1]] = true
		r, ok := RuleByID(m[1])
		if !ok {
			t.Errorf("testdata/FAILURES.md family %s has no rule", m[1])
			continue
		}
		if seed := m[2] != ""; seed != r.Seed {
			t.Errorf("%s: Seed = %v, testdata/FAILURES.md says %v", r.ID, r.Seed, seed)
		}
	}
	// and the other way: a rule's family has its row in the taxonomy
	for _, r := range Rules() {
		if !inTable[r.ID] {
			t.Errorf("rule %s has no row in testdata/FAILURES.md", r.ID)
		}
	}
}

// TestScanMatchesLineLarge repeats the check on multi-megabyte logs where
// findings fall in every part of split regions (see fast) and across read
// chunks: excerpts far apart, and close enough that each part holds
// several and families repeat across parts (their counts must agree).
func TestScanMatchesLineLarge(t *testing.T) {
	rows := append(loadSamples(t, "testdata/corpus.jsonl"), loadSamples(t, "testdata/holdout.jsonl")...)
	for _, fillerLines := range []int{3000, 250, 40} {
		var b strings.Builder
		filler := strings.Repeat("[ 12%] Building CXX object caffe2/CMakeFiles/torch_cpu.dir/x.cpp.o\n", fillerLines)
		for range 3000 / fillerLines {
			for _, row := range rows {
				b.WriteString(filler)
				b.WriteString(row.Log + "\n")
			}
		}
		fs := scanMatchesLine(t, b.String(), fmt.Sprintf("%d filler lines", fillerLines))
		if len(fs) < 30 {
			t.Errorf("only %d families in a log holding every excerpt", len(fs))
		}
	}
}

// TestScanSplitRegionsInOrder places signatures in every part of one
// large region without escapes, which fast searches as interleaved parts:
// a family's first line, its count and a context seen in an earlier part
// must come out as the line path sees them.
func TestScanSplitRegionsInOrder(t *testing.T) {
	const lines = 40_000 // ~2.7 MB: more than one read chunk, each split in parts
	// a read chunk (1 MiB) holds about 15 000 of these lines, a part a quarter
	signatures := map[int]string{
		2_000:  "hipErrorNoBinaryForGpu: Unable to find code object for all current devices!",
		6_000:  "double free or corruption (!prev)",
		9_000:  "double free or corruption (!prev)",
		10_000: "hipErrorNoBinaryForGpu: Unable to find code object for all current devices!",
		13_000: "double free or corruption (!prev)",
		33_000: "hipErrorNoBinaryForGpu: Unable to find code object for all current devices!",
	}
	var b strings.Builder
	for i := 1; i <= lines; i++ {
		if s, ok := signatures[i]; ok {
			b.WriteString(s + "\n")
			continue
		}
		fmt.Fprintf(&b, "[%d/%d] Building HIP object CMakeFiles/_C.dir/csrc/cache_kernels.hip.o\n", i, lines)
	}
	fs := scanMatchesLine(t, b.String(), "signatures in every part")
	want := map[string][2]int{"hip-no-binary-for-gpu": {2_000, 3}, "therock-amdsmi-double-free": {6_000, 3}}
	for _, f := range fs {
		if w, ok := want[f.Family]; !ok || f.Line != w[0] || f.Count != w[1] {
			t.Errorf("finding %s at line %d, %d lines; want %v", f.Family, f.Line, f.Count, w)
		}
	}
	if len(fs) != len(want) {
		t.Errorf("%d findings, want %d", len(fs), len(want))
	}
}

// scanMatchesLine scans log with Scan and line by line with Line, reports
// any difference, and returns Scan's findings.
func scanMatchesLine(t *testing.T, log, what string) []Finding {
	t.Helper()
	fs, err := Scan(strings.NewReader(log), MatcherOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m := NewMatcher(MatcherOptions{})
	for i, l := range strings.Split(log, "\n") {
		m.Line(i+1, l)
	}
	if diff := cmp.Diff(m.End(), fs); diff != "" {
		t.Errorf("%s, %d MB: Scan and Line differ (-line +scan):\n%s", what, len(log)>>20, diff)
	}
	return fs
}
