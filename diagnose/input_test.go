package diagnose

import (
	"archive/tar"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func scanArg(t *testing.T, arg string) []Finding {
	t.Helper()
	in, err := OpenInput(arg, strings.NewReader("clang: error: unable to execute command: Killed\n"))
	if err != nil {
		t.Fatal(err)
	}
	fs, err := in.Scan()
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

func TestOpenInputRunDir(t *testing.T) {
	// A run directory is recognised by its place (runs/<id>/) even before
	// report.json exists, e.g. while the run is still going.
	run := filepath.Join(t.TempDir(), "runs", "20260101-120000")
	write(t, filepath.Join(run, "vllm.log"), "  Attempting uninstall: torch\n")
	write(t, filepath.Join(run, "rocm.log"), "  Attempting uninstall: torch\n")
	write(t, filepath.Join(run, "notes.txt"), "double free or corruption (!prev)\n")
	fs := scanArg(t, run)
	if len(fs) != 1 || fs[0].Step != "vllm" || fs[0].Family != "vllm-torch-version-conflict" {
		t.Fatalf("findings = %+v", fs)
	}
}

func TestOpenInputTrackFromReport(t *testing.T) {
	run := filepath.Join(t.TempDir(), "r")
	write(t, filepath.Join(run, "report.json"), `{"track": "llamacpp-vulkan"}`)
	write(t, filepath.Join(run, "verify.log"), "load_all_data: using async uploads for device Vulkan0\n")
	if fs := scanArg(t, run); len(fs) != 0 {
		t.Fatalf("the ROCm stall rule does not apply on the Vulkan track: %+v", fs)
	}
}

func TestOpenInputTarGz(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bundle.tar.gz")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(f)
	tw := tar.NewWriter(zw)
	for name, body := range map[string]string{
		"./dmesg.txt": "amdgpu: MES failed to respond to msg=REMOVE_QUEUE\n",
		"./sys/module/ttm/parameters/pages_limit": "MES failed to respond to msg=REMOVE_QUEUE\n",
	} {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []interface{ Close() error }{tw, zw, f} {
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	fs := scanArg(t, path)
	if len(fs) != 1 || fs[0].File != path+":dmesg.txt" {
		t.Fatalf("only .txt/.log members count: %+v", fs)
	}
}

func TestOpenInputStdinAndErrors(t *testing.T) {
	if fs := scanArg(t, "-"); len(fs) != 1 || fs[0].File != "-" {
		t.Fatalf("stdin: %+v", fs)
	}
	dir := t.TempDir()
	for _, bad := range []string{filepath.Join(dir, "missing.log"), dir} {
		if _, err := OpenInput(bad, nil); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}
