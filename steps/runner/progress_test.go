package runner

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/haloforge/haloforge/internal/text"
	"github.com/haloforge/haloforge/steps"
)

func TestParseProgress(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		want       reading
		ok         bool
	}{
		{"ninja", "[229/400] Building CXX object csrc/CMakeFiles/_C.dir/attention.cu.o",
			reading{kind: KindNinja, label: "Building CXX object csrc/CMakeFiles/_C.dir/attention.cu.o", done: 229, total: 400}, true},
		{"ninja from the corpus", "[7983/8635] Building HIPCC object caffe2/CMakeFiles/torch_hip.dir/__/aten/src/ATen/native/hip/torch_hip_generated_UnaryGeometricAcos",
			reading{kind: KindNinja, label: "Building HIPCC object caffe2/CMakeFiles/torch_hip.dir/__/aten/src/ATen/native/hip/torch_hip_generated_UnaryGeometricAcos", done: 7983, total: 8635}, true},
		{"ninja with elapsed", "[12/400 35.123s] Linking CXX shared library lib/libggml.so",
			reading{kind: KindNinja, label: "Linking CXX shared library lib/libggml.so", done: 12, total: 400}, true},
		{"cmake make", "[ 45%] Building CXX object ggml/src/CMakeFiles/ggml.dir/ggml.c.o",
			reading{kind: KindMake, label: "Building CXX object ggml/src/CMakeFiles/ggml.dir/ggml.c.o", done: 45, total: 100, unit: UnitPercent}, true},
		{"cmake make 100", "[100%] Built target llama-server",
			reading{kind: KindMake, label: "Built target llama-server", done: 100, total: 100, unit: UnitPercent}, true},
		{"podman bar", "Copying blob 8fa545433e5d [=>------------------------------------] 1.3MiB / 22.9MiB",
			reading{kind: KindPull, label: "image", unit: UnitBytes, blob: "blob 8fa545433e5d", done: 1363148, total: 24012390}, true},
		{"podman bar bytes", "Copying config 335da9f33a [======================================] 772.0b / 772.0b",
			reading{kind: KindPull, label: "image", unit: UnitBytes, blob: "config 335da9f33a", done: 772, total: 772}, true},
		{"podman done", "Copying blob eb43d6523c23 done  ",
			reading{kind: KindPull, label: "image", unit: UnitBytes, blob: "blob eb43d6523c23", blobDone: true}, true},
		{"podman skipped", "Copying blob 4f4fb700ef54 skipped: already exists  ",
			reading{kind: KindPull, label: "image", unit: UnitBytes, blob: "blob 4f4fb700ef54", blobDone: true}, true},
		{"podman without a terminal (old)", "Copying blob sha256:eb43d6523c23b02e03db74fdc6624435d57faf18ed16adbf7b0c1c511b6074cf",
			reading{kind: KindPull, label: "image", unit: UnitBytes, blob: "blob eb43d6523c23"}, true},
		{"podman without a terminal (new)", "Progress: 12.3MiB / 45.6MiB",
			reading{kind: KindPull, label: "image", unit: UnitBytes, done: 12897484, total: 47815065}, true},
		{"buildah step", "STEP 2/3: RUN [\"/bin/true\"]",
			reading{kind: KindImage, label: "STEP 2/3: RUN [\"/bin/true\"]", done: 1, total: 3}, true},
		{"buildah stage step", "[2/2] STEP 4/7: COPY --from=builder /opt/venv /opt/venv",
			reading{kind: KindImage, label: "STEP 4/7: COPY --from=builder /opt/venv /opt/venv", done: 3, total: 7}, true},
		{"pip bar", "     ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━ 721.0/721.0 MB 47.5 MB/s eta 0:00:00",
			reading{kind: KindPip, unit: UnitBytes, done: 721000000, total: 721000000}, true},
		{"pip bar half", "   ━━━━━━━━━━━━━━━━━━━━╸━━━━━━━━━━━━━━━━━━━ 0.2/15.0 MB 1.5 MB/s eta 0:00:10",
			reading{kind: KindPip, unit: UnitBytes, done: 200000, total: 15000000}, true},
		{"pip download", "  Downloading https://rocm.devreleases.amd.com/v2-staging/gfx94X-dcgpu/torch-2.7.1%2Bdevrocm7.12.0.dev0-cp312-cp312-linux_x86_64.whl (721.0 MB)",
			reading{kind: KindPip, label: "torch-2.7.1+devrocm7.12.0.dev0-cp312-cp312-linux_x86_64.whl", download: true}, true},
		{"pip download, old form", "  Downloading numpy-2.1.3-cp312-cp312-manylinux_2_17_x86_64.whl",
			reading{kind: KindPip, label: "numpy-2.1.3-cp312-cp312-manylinux_2_17_x86_64.whl", download: true}, true},
		{"pip wheel", "  Building wheel for flash_attn (setup.py) ... /",
			reading{kind: KindPip, label: "Building wheel for flash_attn"}, true},
		{"git receiving", "Receiving objects:  45% (19/42), 4.40 MiB | 1.45 MiB/s",
			reading{kind: KindGit, label: "Receiving objects", done: 19, total: 42}, true},
		{"git remote", "remote: Counting objects:  97% (41/42)",
			reading{kind: KindGit, label: "Counting objects", done: 41, total: 42}, true},
		{"git deltas", "Resolving deltas: 100% (9/9), done.",
			reading{kind: KindGit, label: "Resolving deltas", done: 9, total: 9}, true},
		{"tqdm hf", "model.safetensors:  45%|████▌     | 1.20G/2.50G [00:12<00:13, 98.5MB/s]",
			reading{kind: KindTqdm, label: "model.safetensors", unit: UnitCount, done: 1200000000, total: 2500000000}, true},
		{"tqdm bytes", "Downloading:  12%|█▏        | 120MB/1.00GB [00:03<00:20, 42.1MB/s]",
			reading{kind: KindTqdm, label: "Downloading", unit: UnitBytes, done: 120000000, total: 1000000000}, true},
		{"tqdm items", " 12%|█▏        | 120/1000 [00:03<00:20, 42.1it/s]",
			reading{kind: KindTqdm, unit: UnitCount, done: 120, total: 1000}, true},

		{"distrobox ok", "[ OK ] Setting up read-only mounts...", reading{}, false},
		{"bracket word", "[INFO] 3/4 done", reading{}, false},
		{"percent prose", "50% of the time it works (every time)", reading{}, false},
		{"copying prose", "Copying files to /opt/venv", reading{}, false},
		{"hipify", "[4/38] Running hipify on _rocm_C extension source files.",
			reading{kind: KindNinja, label: "Running hipify on _rocm_C extension source files.", done: 4, total: 38}, true},
		{"short", "[1/2]", reading{}, false},
		{"empty", "", reading{}, false},
		{"huge counts", "[99999999999/1] x", reading{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := parseProgress(tc.line)
			if ok != tc.ok || got != tc.want {
				t.Errorf("parseProgress(%q)\n got %+v, %v\nwant %+v, %v", tc.line, got, ok, tc.want, tc.ok)
			}
		})
	}
}

// replay feeds a recorded typescript (script(1)'s, without its first and
// last lines) through the runner's sanitiser one write at a time, as the
// processor sees it, and returns what each look at the progress saw: the
// readings of the complete lines and of the open line after every write.
func replay(t *testing.T, name string) (readings []reading, opens []string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "progress", name))
	if err != nil {
		t.Fatal(err)
	}
	_, b, _ = bytes.Cut(b, []byte("\n")) // "Script started on …"
	if i := bytes.LastIndex(b, []byte("\nScript done on")); i >= 0 {
		b = b[:i+1]
	}
	san := &text.Sanitizer{}
	emit := func(l text.Line) {
		if r, ok := parseProgress(l.Text); ok {
			readings = append(readings, r)
		}
	}
	// Small writes: a redraw split anywhere, as a pty hands it over.
	for len(b) > 0 {
		n := min(len(b), 97)
		san.Write(b[:n], emit)
		b = b[n:]
		if p := san.Pending(); p != "" {
			opens = append(opens, p)
			if r, ok := parseProgress(p); ok {
				readings = append(readings, r)
			}
		}
	}
	san.Flush(emit)
	return readings, opens
}

func TestRecordedProgress(t *testing.T) {
	t.Run("podman pull on a terminal", func(t *testing.T) {
		rs, _ := replay(t, "podman-pull.typescript")
		tr := newProgressTracker()
		now := time.Unix(0, 0)
		last := int64(-1)
		for _, r := range rs {
			now = now.Add(100 * time.Millisecond)
			tr.see(r, now)
			p, ok := tr.progress(now)
			if !ok {
				continue
			}
			if p.Kind != KindPull || p.Unit != UnitBytes {
				t.Fatalf("got %+v", p)
			}
			if p.Total == tr.cur.total && p.Done < last && p.Total > 32<<20 {
				t.Fatalf("went back: %d after %d", p.Done, last)
			}
			last = p.Done
		}
		// Both layers and the config: 22.9 MiB + 8.6 MiB + 772 bytes.
		want := int64(24012390 + 9017753 + 772)
		if tr.cur.total != want || tr.cur.done != want {
			t.Errorf("end of the pull: %d of %d bytes, want %d of %d", tr.cur.done, tr.cur.total, want, want)
		}
	})
	t.Run("ninja on a terminal: all in the open line", func(t *testing.T) {
		rs, opens := replay(t, "ninja.typescript")
		if len(opens) == 0 || !strings.HasPrefix(opens[len(opens)/2], "[") {
			t.Fatalf("no open ninja line: %q", opens)
		}
		var dones []int64
		for _, r := range rs {
			if r.kind != KindNinja || r.total != 20 {
				t.Fatalf("reading %+v", r)
			}
			dones = append(dones, r.done)
		}
		if len(dones) < 5 || dones[len(dones)-1] != 20 {
			t.Errorf("ninja counts %v: want several, ending at 20", dones)
		}
	})
	t.Run("pip download", func(t *testing.T) {
		rs, opens := replay(t, "pip-download.typescript")
		tr := newProgressTracker()
		now := time.Unix(0, 0)
		for _, r := range rs {
			now = now.Add(50 * time.Millisecond)
			tr.see(r, now)
		}
		if tr.cur.kind != KindPip || tr.cur.label != "hfbig-1.0-py3-none-any.whl" || tr.cur.total != 15e6 || tr.cur.done != 15e6 {
			t.Errorf("pip: %+v", tr.cur)
		}
		bars := 0
		for _, o := range opens {
			if strings.Contains(o, "/15.0 MB") {
				bars++
			}
		}
		if bars < 10 {
			t.Errorf("only %d open bar states: the bar is redrawn in place (\\r), so only the open line shows it", bars)
		}
	})
	t.Run("git clone", func(t *testing.T) {
		rs, _ := replay(t, "git-clone.typescript")
		phases := map[string]int64{}
		for _, r := range rs {
			if r.kind != KindGit || r.total != 42 {
				t.Fatalf("reading %+v", r)
			}
			phases[r.label] = max(phases[r.label], r.done)
		}
		for _, p := range []string{"Counting objects", "Compressing objects", "Receiving objects"} {
			if phases[p] != 42 {
				t.Errorf("%s reached %d of 42 (%v)", p, phases[p], phases)
			}
		}
	})
	t.Run("podman build", func(t *testing.T) {
		rs, _ := replay(t, "podman-build.typescript")
		var steps []string
		for _, r := range rs {
			if r.kind == KindImage {
				steps = append(steps, r.label)
			}
		}
		if len(steps) < 2 || steps[0] != "STEP 1/3: FROM 127.0.0.1:35792/haloforge/rec:1" || !strings.HasPrefix(steps[len(steps)-1], "STEP 2/3: RUN") {
			t.Errorf("steps %q", steps)
		}
	})
}

func TestProgressRateAndETA(t *testing.T) {
	t0 := time.Unix(1000, 0)
	t.Run("ninja at 10 steps a second", func(t *testing.T) {
		tr := newProgressTracker()
		for i := 0; i <= 50; i++ {
			tr.see(reading{kind: KindNinja, label: "x", done: int64(i), total: 400}, t0.Add(time.Duration(i)*100*time.Millisecond))
		}
		p, ok := tr.progress(t0.Add(5 * time.Second))
		if !ok || p.Done != 50 || p.Total != 400 {
			t.Fatalf("%+v %v", p, ok)
		}
		if p.Rate < 9.9 || p.Rate > 10.1 || p.ETA != 35*time.Second {
			t.Errorf("rate %.2f/s, ETA %v; want 10/s, 35s", p.Rate, p.ETA)
		}
		if got, want := p.Badge(), "50/400 · 12% · ETA 35s"; got != want {
			t.Errorf("badge %q, want %q", got, want)
		}
	})
	t.Run("no ETA before the rate is known", func(t *testing.T) {
		tr := newProgressTracker()
		tr.see(reading{kind: KindNinja, done: 1, total: 400}, t0)
		tr.see(reading{kind: KindNinja, done: 2, total: 400}, t0.Add(time.Second))
		if p, _ := tr.progress(t0.Add(time.Second)); p.ETA != 0 || p.Rate != 0 {
			t.Errorf("after 1s: %+v", p)
		}
	})
	t.Run("a stalled download slows its rate", func(t *testing.T) {
		tr := newProgressTracker()
		tr.see(reading{kind: KindPip, download: true, label: "torch.whl"}, t0)
		for i := 0; i <= 10; i++ {
			tr.see(reading{kind: KindPip, done: int64(i) * 1e6, total: 100e6, unit: UnitBytes}, t0.Add(time.Duration(i)*time.Second))
		}
		p1, _ := tr.progress(t0.Add(10 * time.Second))
		p2, _ := tr.progress(t0.Add(20 * time.Second))
		if p1.Label != "torch.whl" || p1.ETA != 90*time.Second || !(p2.ETA > p1.ETA) {
			t.Errorf("moving: %+v; stalled: %+v", p1, p2)
		}
		if got, want := p1.Badge(), "10% of 95.4 MiB · 976.6 KiB/s · ETA 1m30s"; got != want {
			t.Errorf("badge %q, want %q", got, want)
		}
	})
	t.Run("a new total starts a new counter", func(t *testing.T) {
		tr := newProgressTracker()
		tr.see(reading{kind: KindNinja, done: 90, total: 100}, t0)
		tr.see(reading{kind: KindNinja, done: 3, total: 20}, t0.Add(time.Second))
		p, _ := tr.progress(t0.Add(time.Second))
		if p.Done != 3 || p.Total != 20 || p.Since != 0 {
			t.Errorf("%+v", p)
		}
	})
	t.Run("a finished counter goes after a while", func(t *testing.T) {
		tr := newProgressTracker()
		tr.see(reading{kind: KindMake, done: 100, total: 100, unit: UnitPercent}, t0)
		p0, ok := tr.progress(t0.Add(time.Second))
		if !ok {
			t.Error("gone at once")
		}
		tr.sent, tr.sentAny = p0, true
		p, ok := tr.progress(t0.Add(doneLinger + time.Second))
		if ok || !tr.changed(p, ok) {
			t.Errorf("still shown after %v, or no event to say it is gone: %+v", doneLinger, p)
		}
	})
	t.Run("a label without a counter", func(t *testing.T) {
		tr := newProgressTracker()
		tr.see(reading{kind: KindPip, label: "Building wheel for flash_attn"}, t0)
		p, ok := tr.progress(t0.Add(12*time.Minute + 5*time.Second))
		if !ok || p.Badge() != "Building wheel for flash_attn · 12m05s" {
			t.Errorf("%+v: %q", p, p.Badge())
		}
	})
	t.Run("layers of a second pull start over", func(t *testing.T) {
		tr := newProgressTracker()
		tr.see(reading{kind: KindPull, blob: "blob a", done: 10, total: 10}, t0)
		tr.see(reading{kind: KindPull, blob: "blob a", blobDone: true}, t0)
		tr.see(reading{kind: KindPull, blob: "blob b", done: 1, total: 50}, t0.Add(time.Second))
		if c := tr.cur; c.done != 1 || c.total != 50 {
			t.Errorf("second pull: %d of %d", c.done, c.total)
		}
	})
}

func FuzzParseProgress(f *testing.F) {
	for _, s := range []string{
		"[229/400] Building CXX object x.o", "[ 45%] Building", "Copying blob 8fa545433e5d [=>---] 1.3MiB / 22.9MiB",
		"Copying blob 8fa545433e5d done", "Progress: 12.3MiB / 45.6MiB", "STEP 2/3: RUN x",
		"     ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━ 721.0/721.0 MB 47.5 MB/s eta 0:00:00",
		"  Downloading https://x/torch-2.7.1%2Brocm.whl (721.0 MB)", "Receiving objects:  45% (19/42), 4.40 MiB | 1.45 MiB/s",
		"model.safetensors:  45%|████▌     | 1.20G/2.50G [00:12<00:13, 98.5MB/s]", "[1/2] STEP 3/4: FROM x",
	} {
		f.Add(s)
	}
	tr := newProgressTracker()
	now := time.Unix(0, 0)
	f.Fuzz(func(t *testing.T, line string) {
		r, ok := parseProgress(line)
		if !ok {
			return
		}
		if r.done < 0 || r.total < 0 {
			t.Fatalf("negative counts from %q: %+v", line, r)
		}
		now = now.Add(300 * time.Millisecond)
		tr.see(r, now)
		p, ok := tr.progress(now)
		if ok && (p.Done < 0 || p.ETA < 0 || p.Rate < 0 || (p.Total > 0 && p.Done > p.Total) || len([]rune(p.Label)) > maxLabel+1) {
			t.Fatalf("progress %+v from %q", p, line)
		}
		if ok && p.Percent() > 100 {
			t.Fatalf("percent %d from %q", p.Percent(), line)
		}
		_ = p.Badge()
	})
}

// needNinja skips a test without Debian's ninja-build (make test installs it).
func needNinja(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("ninja"); err != nil {
		t.Skip("ninja not installed (Debian's ninja-build; make test installs it: Makefile APT_PKGS)")
	}
}

func TestRunnerProgressFromRealNinja(t *testing.T) {
	needNinja(t)
	t.Setenv("FX_OBJECTS", "40")
	t.Setenv("FX_OBJECT_S", "0.1")
	dir := t.TempDir()
	o := fxOptions(fxPlan(t, fxTrack(fx{id: "compile", script: "ninja.sh"}, fx{id: "after", script: "hello.sh"}), fxPins, "testdata/scripts", dir), dir)
	o.ProgressEvery = 100 * time.Millisecond
	rep, evs := run(t, o, nil)
	if rep.Status != "succeeded" {
		t.Fatalf("run %s", rep.Status)
	}
	var ps []Progress
	var opens []string
	for _, e := range evs {
		switch e := e.(type) {
		case Progress:
			ps = append(ps, e)
		case OpenLine:
			opens = append(opens, e.Text)
		}
	}
	if len(ps) < 3 {
		t.Fatalf("%d progress events: %+v", len(ps), ps)
	}
	eta := false
	for i, p := range ps {
		if p.Kind == "" {
			continue // the counter finished and went
		}
		if p.Step != "compile" || p.Kind != KindNinja || p.Total != 40 || p.Unit != UnitCount {
			t.Fatalf("progress %+v", p)
		}
		if i > 0 && ps[i-1].Kind != "" && p.Done < ps[i-1].Done {
			t.Errorf("went back: %d after %d", p.Done, ps[i-1].Done)
		}
		eta = eta || (p.ETA > 0 && p.Rate > 0)
	}
	if !eta {
		t.Errorf("no ETA in %+v", ps)
	}
	// ninja says [N/40] only in its open line on a terminal: it is sent.
	seen := false
	for _, o := range opens {
		seen = seen || (strings.HasPrefix(o, "[") && strings.Contains(o, "/40] Building C object"))
	}
	if !seen {
		t.Errorf("no open ninja line among %q", opens)
	}
	// Rate limited: the step ran for about 2 s; one event per 100 ms at most.
	d := rep.Steps[0].Duration
	if limit := int(d/o.ProgressEvery) + 3; len(ps) > limit || len(opens) > limit {
		t.Errorf("%d progress and %d open-line events in %v: more than one per %v", len(ps), len(opens), d, o.ProgressEvery)
	}
	// No RunETA on a first run; a second run knows both steps' durations.
	for _, p := range ps {
		if p.RunETA != 0 {
			t.Fatalf("run ETA %v on a first run", p.RunETA)
		}
	}
	o.Plan = fxPlan(t, fxTrack(fx{id: "compile", script: "ninja.sh"}, fx{id: "after", script: "hello.sh"}), fxPins, "testdata/scripts", dir)
	o.From = "compile"
	_, evs = run(t, o, nil)
	runETA := false
	for _, e := range evs {
		if p, ok := e.(Progress); ok && p.Kind != "" {
			runETA = runETA || p.RunETA > 0
		}
	}
	if !runETA {
		t.Error("a second run gave no run ETA")
	}
}

func TestProgressOff(t *testing.T) {
	needNinja(t)
	t.Setenv("FX_OBJECTS", "10")
	dir := t.TempDir()
	o := fxOptions(fxPlan(t, fxTrack(fx{id: "compile", script: "ninja.sh"}), fxPins, "testdata/scripts", dir), dir)
	o.ProgressEvery = -1
	_, evs := run(t, o, nil)
	for _, e := range evs {
		switch e.(type) {
		case Progress, OpenLine:
			t.Fatalf("%T with ProgressEvery < 0", e)
		}
	}
}

// TestETAFromReportsWhenStateForgot: once clean forgot the successes in
// state.json, the ETA still comes from the reports of the track's runs.
func TestETAFromReportsWhenStateForgot(t *testing.T) {
	dir := t.TempDir()
	track := fxTrack(fx{id: "one", script: "hello.sh"}, fx{id: "two", script: "hello.sh"})
	run(t, fxOptions(fxPlan(t, track, fxPins, "testdata/scripts", dir), dir), nil)
	st, err := steps.LoadState(dir)
	if err != nil {
		t.Fatal(err)
	}
	st.ForgetSuccesses("fx")
	if err := st.Save(dir); err != nil {
		t.Fatal(err)
	}
	_, evs := run(t, fxOptions(fxPlan(t, track, fxPins, "testdata/scripts", dir), dir), nil)
	for _, e := range evs {
		if s, ok := e.(StepStarted); ok && s.Step == "one" && s.ETA <= 0 {
			t.Errorf("no ETA from the earlier run's report: %+v", s)
		}
	}
}
