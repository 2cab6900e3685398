package tui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/haloforge/haloforge/detect"
	"github.com/haloforge/haloforge/diagnose"
	"github.com/haloforge/haloforge/steps"
	"github.com/haloforge/haloforge/steps/runner"
)

// fakeBackend stands in for what cannot exist here: a Strix Halo GPU and a
// ROCm build. Its runner replays a real corpus log (testdata) as step rocm's
// output and fails it with the finding the real matcher reports for that
// log; after PrepareRetry, rocm passes, like the demo after its fix.
type fakeBackend struct {
	t       testing.TB
	track   steps.Track
	failLog []string
	// failFinding, when set, is the finding the failing step reports at
	// the first line holding its Text (else the double free of failLog).
	failFinding *diagnose.Finding
	lineGap     time.Duration // pause between replayed lines
	extra       int           // extra lines per step, to make floods
	detDelay    time.Duration
	clock       time.Time // when set, every event happens at this time (goldens)

	// Host fixes: what HostFix returns, how many the detection offers, and
	// an error for the apply to return.
	hostFix                    *HostFix
	hostFixes, hostFixesByHand int
	applyErr                   error
	// Pins: the warning plans carry, the sets, and an error for writing.
	pinWarning []string
	pinSets    *PinSets
	useErr     error
	shell      *exec.Cmd // what Shell opens; nil: the track has no box
	needs      []string  // what Plan says the track needs until SetPin sets it
	serveErr   error     // what ServeSetup answers instead of a form

	mu       sync.Mutex
	model    string // the serve screen's tiny model (fake_serve_test.go)
	fixed    bool
	requests []RunRequest
	retried  []string
	planned  int        // HostFix calls
	applied  []*HostFix // ApplyHostFix calls
	used     []string   // UsePinSet calls
	sets     []string
}

func newFakeBackend(t testing.TB) *fakeBackend {
	t.Helper()
	b, err := os.ReadFile("testdata/therock-amdsmi-double-free.log")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := steps.Lookup("therock-toolbox")
	if err != nil {
		t.Fatal(err)
	}
	return &fakeBackend{t: t, track: tr, failLog: strings.Split(strings.TrimRight(string(b), "\n"), "\n")}
}

// strixHalo is the GPU of fixtures/hardware/gfx1151-rocminfo-1.txt and
// gfx1151-amd-smi-default-1.txt (512 MB carve-out).
func strixHalo() *Detection {
	return &Detection{
		Source: "fake: gfx1151 fixtures",
		Report: &detect.Report{
			GPUs: []detect.GPU{{Name: ptr("Radeon 8060S Graphics"), GFX: ptr("gfx1151"), PCIID: ptr("1002:1586"), Integrated: ptr(true),
				VRAMBytes: ptr[int64](512 << 20), GTTBytes: ptr[int64](124 << 30), ComputeUnits: ptr(40), Vendor: "amd"}},
			Kernel: detect.Kernel{Release: ptr("6.18.9-200.fc43.x86_64")},
			Checks: []detect.Check{
				{ID: detect.CheckGPU, Status: detect.StatusOK, Summary: "Radeon 8060S Graphics (gfx1151)"},
				{ID: detect.CheckKernelVersion, Status: detect.StatusOK, Summary: "6.18.9 has the gfx1151 KFD/CWSR fixes"},
				{ID: detect.CheckGTTSize, Status: detect.StatusWarn, Summary: "GTT is 62 GiB, half of RAM", Fix: "add ttm.pages_limit=32505856 to the kernel command line"},
				{ID: detect.CheckRenderGroups, Status: detect.StatusFail, Summary: "user not in groups render and video", Fix: "sudo usermod -aG render,video $USER, then log in again"},
			},
			RecommendedTrack: "therock-toolbox",
		},
	}
}

// ptr points at a copy of v, for the report's facts.
func ptr[T any](v T) *T { return &v }

func (f *fakeBackend) Detect(ctx context.Context) (*Detection, error) {
	select {
	case <-time.After(f.detDelay):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	d := strixHalo()
	d.HostFixes, d.HostFixesByHand = f.hostFixes, f.hostFixesByHand
	return d, nil
}

func (f *fakeBackend) Tracks() []steps.Track { return steps.Catalogue() }

func (f *fakeBackend) Plan(track string) (*Plan, error) {
	t, err := steps.Lookup(track)
	if err != nil {
		return nil, err
	}
	p := &Plan{Plan: &steps.Plan{Track: t}, Next: t.Next, PinWarning: f.pinWarning}
	f.mu.Lock()
	if len(f.used) > 0 { // a set was written: the plan reads its pins
		p.PinWarning = nil
	}
	if len(f.sets) == 0 {
		p.Needs = f.needs
	}
	f.mu.Unlock()
	if f.shell != nil {
		p.Box = "haloforge-therock"
	}
	for _, s := range t.Steps {
		p.Steps = append(p.Steps, steps.PlannedStep{Step: s, WillRun: true, Reason: "never ran",
			PinValues: map[string]string{"GPU_TARGET": "gfx1151"}})
	}
	return p, nil
}

func (f *fakeBackend) Start(ctx context.Context, req RunRequest) (<-chan runner.Event, error) {
	f.mu.Lock()
	f.requests = append(f.requests, req)
	fixed, n := f.fixed, len(f.requests)
	f.mu.Unlock()
	ch := make(chan runner.Event, 64)
	id := "fake-run"
	if n > 1 { // each run of a session has its own directory, as the runner's
		id += "-" + itoa(n)
	}
	go f.replay(ctx, f.stamp(ch), req, fixed, id)
	return ch, nil
}

// replay emits what the runner emits for the track: rocm fails until fixed.
func (f *fakeBackend) replay(ctx context.Context, ch chan<- runner.Event, req RunRequest, fixed bool, id string) {
	defer close(ch)
	start := time.Now()
	dir := "/state/runs/" + id
	ch <- runner.RunStarted{Track: f.track.ID, RunID: id, RunDir: dir, Total: len(f.track.Steps), At: start}
	if req.Resume { // as the runner says it when it resumes
		ch <- runner.Notice{Text: "resuming run fake-run: rocm (failed)"}
	}
	status := steps.OutcomeSucceeded
	for i, s := range f.track.Steps {
		if req.Resume && (s.ID == "toolbox" || s.ID == "tools") {
			ch <- runner.StepSkipped{Step: s.ID, Title: s.Title, WhySkipped: "up to date (succeeded 2026-11-22 10:00)"}
			continue
		}
		if contains(req.Skip, s.ID) {
			ch <- runner.StepSkipped{Step: s.ID, Title: s.Title, Optional: s.Optional, WhySkipped: "skipped by you"}
			continue
		}
		outcome := f.step(ctx, ch, s, i+1, fixed, dir)
		if outcome == steps.OutcomeInterrupted {
			status = outcome
			break
		}
		if outcome == steps.OutcomeFailed && !s.Optional {
			status = outcome
			break
		}
	}
	ch <- runner.RunFinished{RunID: id, RunDir: dir, Status: status, Duration: time.Since(start), At: time.Now()}
}

// fakeChunk is how many lines the fake sends per Lines event, as the runner
// sends the lines of one read of the pty.
const fakeChunk = 8

func (f *fakeBackend) step(ctx context.Context, ch chan<- runner.Event, s steps.Step, idx int, fixed bool, dir string) string {
	log := dir + "/" + s.ID + ".log"
	ch <- runner.StepStarted{Step: s.ID, Title: s.Title, Index: idx, Total: len(f.track.Steps), Optional: s.Optional, Log: log, ETA: time.Minute, At: time.Now()}
	lines := []string{"+ " + s.Script}
	for i := range f.extra {
		lines = append(lines, "building "+s.ID+" object "+itoa(i))
	}
	fail := s.ID == "rocm" && !fixed
	if fail {
		lines = append(lines, f.failLog...)
	}
	var findings []diagnose.Finding
	for first := 0; first < len(lines); {
		// A chunk ends early at a line the matcher recognises: the runner
		// sends a chunk's lines first, then what they made known.
		end := min(first+fakeChunk, len(lines))
		var found *diagnose.Finding
		for n := first; n < end; n++ {
			switch {
			case fail && f.failFinding != nil && strings.Contains(lines[n], f.failFinding.Text):
				fd := *f.failFinding
				fd.Step, fd.Line = s.ID, n+1
				found, end = &fd, n+1
			case fail && f.failFinding == nil && strings.Contains(lines[n], "double free or corruption"):
				found, end = doubleFree(s.ID, n+1, lines[n]), n+1
			}
		}
		select {
		case <-ctx.Done():
			ch <- runner.StepFinished{Step: s.ID, Title: s.Title, Index: idx, Total: len(f.track.Steps), Optional: s.Optional,
				Status: steps.OutcomeInterrupted, ExitCode: 143, Log: log, Findings: findings, At: time.Now()}
			return steps.OutcomeInterrupted
		case <-time.After(f.lineGap * time.Duration(end-first)):
		}
		ch <- runner.Lines{Step: s.ID, First: first + 1, Text: lines[first:end]}
		if found != nil {
			findings = append(findings, *found)
			ch <- runner.Found{Step: s.ID, Finding: *found}
		}
		first = end
	}
	done := runner.StepFinished{Step: s.ID, Title: s.Title, Index: idx, Total: len(f.track.Steps), Optional: s.Optional,
		Status: steps.OutcomeSucceeded, Duration: 2 * time.Second, Log: log, Findings: findings, At: time.Now()}
	if fail {
		done.Status, done.ExitCode, done.Duration = steps.OutcomeFailed, 134, 3*time.Second
		done.Tail = lines[max(len(lines)-20, 0):]
	}
	ch <- done
	return done.Status
}

// doubleFree is the finding the real matcher reports for the replayed log.
func doubleFree(step string, line int, text string) *diagnose.Finding {
	return &diagnose.Finding{
		Family: "therock-amdsmi-double-free", Line: line, Text: text, Step: step,
		Summary: "torch crashes at exit: two copies of amd_smi loaded (TheRock preload + amdsmi package)",
		Fix:     "pip uninstall -y amdsmi, or rtld_global=False in rocm_sdk/__init__.py",
		Links:   []string{"https://github.com/ROCm/TheRock/issues/2269"},
	}
}

// stamp sets the fake clock on the events that carry a time, before they
// reach the model.
func (f *fakeBackend) stamp(out chan runner.Event) chan<- runner.Event {
	if f.clock.IsZero() {
		return out
	}
	in := make(chan runner.Event)
	go func() {
		defer close(out)
		for e := range in {
			switch e := e.(type) {
			case runner.RunStarted:
				e.At = f.clock
				out <- e
			case runner.StepStarted:
				e.At = f.clock
				out <- e
			case runner.StepFinished:
				e.At = f.clock
				out <- e
			case runner.RunFinished:
				e.At = f.clock
				out <- e
			default:
				out <- e
			}
		}
	}()
	return in
}

func (f *fakeBackend) PrepareRetry(_ context.Context, step string, fd *diagnose.Finding) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.retried = append(f.retried, step)
	if fd == nil {
		return "", errors.New("fake: no finding to fix")
	}
	f.fixed = true
	return "fake: applied the fix for " + fd.Family, nil
}

// Shell opens the fake's box when it has one (shell is set), else says why not.
func (f *fakeBackend) Shell(track string) (*exec.Cmd, string) {
	if f.shell == nil {
		return nil, track + " builds no distrobox, so there is no box to enter"
	}
	return f.shell, ""
}

// SetPin records the pins the plan screen set.
func (f *fakeBackend) SetPin(assign string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if strings.HasSuffix(assign, "=missing.gguf") {
		return errors.New("LLAMA_MODEL=missing.gguf: no such file")
	}
	f.sets = append(f.sets, assign)
	return nil
}

func (f *fakeBackend) Diagnose(path string) ([]diagnose.Finding, error) {
	if path == "missing" {
		return nil, errors.New("open missing: no such file or directory")
	}
	if strings.HasSuffix(path, "unknown.log") {
		return nil, nil // a real file no rule knows
	}
	return []diagnose.Finding{{Family: "llamacpp-rocm-load-hang-sdma", Line: 42, Text: "load_all_data: using async uploads for device ROCm0", Summary: "Output stopped during model load", Stall: true}}, nil
}

func (f *fakeBackend) HostFix(context.Context) (*HostFix, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.planned++
	if f.hostFix == nil {
		return nil, errors.New("fake: no host-fix plan")
	}
	return f.hostFix, nil
}

// ApplyHostFix records what was confirmed and answers as an apply does; it
// changes nothing (the real apply is tested in tui/session on a temp root).
func (f *fakeBackend) ApplyHostFix(_ context.Context, fix *HostFix, out io.Writer) (*HostFixResult, error) {
	f.mu.Lock()
	f.applied = append(f.applied, fix)
	err := f.applyErr
	f.mu.Unlock()
	fmt.Fprint(out, fix.Changes, "Backup: /state/host-backups/fake\nWriting /etc/default/grub\nRunning update-grub\n")
	if err != nil {
		return &HostFixResult{}, err
	}
	fmt.Fprint(out, "Done. Nothing was rebooted.\n")
	return &HostFixResult{BackupDir: "/state/host-backups/fake", Commands: []string{"write /etc/default/grub", "update-grub"}}, nil
}

func (f *fakeBackend) PinSets() (*PinSets, error) {
	if f.pinSets == nil {
		return nil, errors.New("fake: no pin sets")
	}
	return f.pinSets, nil
}

// UsePinSet records the set and answers as a write does; it writes nothing
// (tui/session's tests write real files).
func (f *fakeBackend) UsePinSet(id string) (*PinSetUsed, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.used = append(f.used, id)
	if f.useErr != nil {
		return nil, f.useErr
	}
	for _, s := range f.pinSets.Sets {
		if s.ID == id {
			return &PinSetUsed{Path: f.pinSets.PinsFile, Backup: f.pinSets.PinsFile + ".bak-20261124-100000", Changed: len(s.Changes)}, nil
		}
	}
	return nil, errors.New("fake: unknown set " + id)
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func itoa(i int) string {
	const digits = "0123456789"
	if i < 10 {
		return digits[i : i+1]
	}
	return itoa(i/10) + digits[i%10:i%10+1]
}
