package runner

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/haloforge/haloforge/steps/installed"
)

// TestCreatedGoesIntoTheRecord: what a step records it created is admitted
// against the machine (a marker, a regular file, no link, not the home)
// and kept in installed.json under the track, with the track's directory
// of the state dir; what cannot be admitted is a fact error; the report
// and RunFinished carry the track's items; a dry run records nothing.
func TestCreatedGoesIntoTheRecord(t *testing.T) {
	home, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	t.Setenv("FX_HOME", home)
	dir := filepath.Join(home, "state")
	o := fxOptions(fxPlan(t, fxTrack(fx{id: "create", script: "create.sh"}), fxPins, "testdata/scripts", dir), dir)
	rep, evs := run(t, o, nil)
	if rep.Status != "succeeded" {
		t.Fatalf("run %s", rep.Status)
	}
	rec, err := installed.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range rec.Items("fx") {
		got = append(got, it.Kind+" "+it.What+" "+it.Where()+" owner="+it.Owner)
		if it.RunID != rep.RunID || it.Step != "create" || it.Created.IsZero() {
			t.Errorf("%s: run %q step %q created %v", it.Where(), it.RunID, it.Step, it.Created)
		}
		if it.Kind != installed.KindBox && (it.SizeBytes == nil || *it.SizeBytes <= 0) {
			t.Errorf("%s: no size measured", it.Where())
		}
	}
	marker, _ := os.ReadFile(filepath.Join(home, "venv", installed.Marker))
	owner := strings.TrimSpace(string(marker))
	want := []string{
		"dir venv " + home + "/venv owner=" + owner,
		"file model " + home + "/tiny.gguf owner=",
		"box box hf-fx owner=" + owner,
		"dir data " + dir + "/fx owner=" + installed.StateDirOwner,
	}
	if !slices.Equal(got, want) || !installed.ValidOwner(owner) || !strings.HasPrefix(owner, rep.RunID+".") {
		t.Errorf("recorded:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	errs := strings.Join(rep.Steps[0].FactErrors, "\n")
	for _, w := range []string{home + "/theirs: not recorded", home + "/link: not recorded", home + ": not recorded: " + home + " is the home directory", "too near the root"} {
		if !strings.Contains(errs, w) {
			t.Errorf("fact errors do not say %q:\n%s", w, errs)
		}
	}
	if len(rep.Installed) != 4 || len(rep.Steps[0].Created) != 3 {
		t.Errorf("report: %d installed, %d created by the step", len(rep.Installed), len(rep.Steps[0].Created))
	}
	if fin, ok := evs[len(evs)-1].(RunFinished); !ok || len(fin.Installed) != 4 {
		t.Errorf("RunFinished: %+v", evs[len(evs)-1])
	}

	// A dry run records nothing, and a run without history neither.
	for _, tune := range []func(*Options){func(o *Options) { o.DryRun = true }, func(o *Options) { o.NoHistory = true }} {
		other := filepath.Join(t.TempDir(), "state")
		o := fxOptions(fxPlan(t, fxTrack(fx{id: "create", script: "create.sh"}), fxPins, "testdata/scripts", other), other)
		tune(&o)
		rep, _ := run(t, o, nil)
		if _, err := os.Stat(filepath.Join(other, installed.File)); !os.IsNotExist(err) || len(rep.Installed) != 0 {
			t.Errorf("dry %v, no history %v: installed.json %v, report %d", o.DryRun, o.NoHistory, err, len(rep.Installed))
		}
	}
}
