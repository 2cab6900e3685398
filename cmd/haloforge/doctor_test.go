package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/haloforge/haloforge/detect"
	"github.com/haloforge/haloforge/steps"
)

// TestDoctorJSONIsTheReport: doctor --json is detect's report (its golden
// file, field for field) with the schema name and the summary counts in
// front, so a script knows what it reads and how it went.
func TestDoctorJSONIsTheReport(t *testing.T) {
	b, err := detect.ReadBundle("../../detect/testdata/bundles/gfx1151-intree-npu")
	if err != nil {
		t.Fatal(err)
	}
	r := detect.Analyse(b)
	r.RecommendedTrack = steps.RecommendFor(r)
	var out bytes.Buffer
	if err := writeDoctorJSON(&out, r); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out.String())
	}
	if got["schema"] != doctorJSONSchema {
		t.Errorf("schema = %v", got["schema"])
	}
	want := map[string]any{"ok": 5.0, "warn": 0.0, "fail": 0.0, "skip": 15.0}
	if diff := cmp.Diff(want, got["summary"]); diff != "" {
		t.Errorf("summary (-want +got):\n%s", diff)
	}
	delete(got, "schema")
	delete(got, "summary")
	golden, err := os.ReadFile("../../detect/testdata/golden/gfx1151-intree-npu.json")
	if err != nil {
		t.Fatal(err)
	}
	var report map[string]any
	if err := json.Unmarshal(golden, &report); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(report, got); diff != "" {
		t.Errorf("doctor --json is not the report (-golden +got):\n%s", diff)
	}
	if !bytes.HasPrefix(out.Bytes(), []byte("{\n  \"schema\": ")) {
		t.Errorf("the schema does not come first:\n%.200s", out.String())
	}
}

// TestDoctorColoursItsMarks: on a terminal doctor's marks
// are coloured as flutter doctor's; nothing else is.
func TestDoctorColoursItsMarks(t *testing.T) {
	in := "Doctor summary\n[✓] GPU: ok\n[!] GTT size: small\n    fix [✗] in text\n[✗] /dev/kfd: missing\n[-] Groups: unknown\n"
	got := colorMarks(in)
	for _, want := range []string{"\x1b[32m[✓]\x1b[0m GPU", "\x1b[33m[!]\x1b[0m GTT", "\x1b[31m[✗]\x1b[0m /dev/kfd", "\x1b[2m[-]\x1b[0m Groups", "    fix [✗] in text"} {
		if !strings.Contains(got, want) {
			t.Errorf("coloured output lacks %q:\n%q", want, got)
		}
	}
	if strings.HasPrefix(got, "\n") {
		t.Errorf("a newline was added: %q", got)
	}
}

// TestDoctorLayout: on a terminal doctor's lines wrap at the width, never
// inside a word, a command only between its words with " \"; on a pipe the
// text is as it was.
func TestDoctorLayout(t *testing.T) {
	in := "[✗] /dev/kfd: /dev/kfd does not exist: the amdgpu kernel driver is not loaded and nothing in this sentence is short\n" +
		"    Load the driver: sudo modprobe amdgpu; check dmesg | grep -i amdgpu for why it did not bind to the device.\n" +
		"    sudo sed -i -E -e '/^options amdgpu/ s/lockup_timeout=[^ ]*//g' /etc/modprobe.d/haloforge-amdgpu.conf /etc/modprobe.d/other.conf\n"
	if got := doctorLayout(in, 0); got != in {
		t.Errorf("a pipe's text changed:\n%s", got)
	}
	for _, width := range []int{80, 60} {
		t.Run(fmt.Sprint(width), func(t *testing.T) {
			got := doctorLayout(in, width)
			if strings.Join(strings.Fields(strings.ReplaceAll(got, " \\\n", " ")), " ") != strings.Join(strings.Fields(in), " ") {
				t.Errorf("words lost or split:\n%s", got)
			}
			for _, r := range strings.Split(strings.TrimSuffix(got, "\n"), "\n") {
				if n := len([]rune(r)); n >= width {
					t.Errorf("row of %d columns at width %d: %q", n, width, r)
				}
			}
			if !strings.Contains(got, " \\\n") {
				t.Errorf("the command is not continued with \\:\n%s", got)
			}
		})
	}
}
