package upstream

import (
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestVersionMatches(t *testing.T) {
	tests := []struct {
		pin, candidate string
		want           bool
	}{
		{"2.11.0+rocm7.14.0", "2.11.0+rocm7.14.0", true},
		{"2.11.0+rocm7.14.0", "2.11+rocm7.14.0", true},   // release zeros
		{"2.11.0+rocm7.14.0", "2.11.0+rocm7-14-0", true}, // local separators
		{"2.11.0+rocm7.14.0", "2.11.0+rocm7.14.1", false},
		{"2.11.0+rocm7.14.0", "2.11.0", false},
		{"2.8.0", "2.8.0+rocm6.4", true}, // a pin without local matches any local (PEP 440)
		{"2.8.0", "2.8.1+rocm6.4", false},
		{"7.10.0a20251015", "7.10.0a20251015", true},
		{"7.10.0a20251015", "7.10.0alpha20251015", true},
		{"7.10.0a20251015", "7.10.0rc20251015", false},
		{"2.10.0a0+rocm7.10.0a20251015", "2.10.0a0+rocm7.10.0a20251015", true},
		{"2.11.0.2+rocm10.0.0", "2.11.0.2+rocm10.0.0", true},
		{"2.11.0.2+rocm10.0.0", "2.11.0+rocm10.0.0", false},
		{"1.0.post1", "1.0-1", true},
		{"1.0.dev3", "1.0dev3", true},
		{"1!2.0", "2.0", false},
		{"V1.0", "1.0", true},
		{"not a version", "not a version", true}, // strings compare as strings
		{"not a version", "1.0", false},
	}
	for _, tc := range tests {
		if got := VersionMatches(tc.pin, tc.candidate); got != tc.want {
			t.Errorf("VersionMatches(%q, %q) = %v, want %v", tc.pin, tc.candidate, got, tc.want)
		}
	}
}

func TestParseDistFilename(t *testing.T) {
	tests := []struct {
		file, project string
		want          DistFile
		ok            bool
	}{
		{"torch-2.11.0+rocm7.14.0-cp312-cp312-linux_x86_64.whl", "torch",
			DistFile{Project: "torch", Version: "2.11.0+rocm7.14.0", Wheel: true, Python: []string{"cp312"}, ABI: []string{"cp312"}, Plat: []string{"linux_x86_64"}}, true},
		{"amd_torch_device_gfx1151-2.11.0+rocm7.14.0-py3-none-linux_x86_64.whl", "amd-torch-device-gfx1151",
			DistFile{Project: "amd-torch-device-gfx1151", Version: "2.11.0+rocm7.14.0", Wheel: true, Python: []string{"py3"}, ABI: []string{"none"}, Plat: []string{"linux_x86_64"}}, true},
		{"pkg-1.0-1-py2.py3-none-any.whl", "pkg", // with a build tag
			DistFile{Project: "pkg", Version: "1.0", Wheel: true, Python: []string{"py2", "py3"}, ABI: []string{"none"}, Plat: []string{"any"}}, true},
		{"rocm-7.14.0.tar.gz", "rocm", DistFile{Project: "rocm", Version: "7.14.0"}, true},
		{"rocm-sdk-core-7.14.0.tar.gz", "rocm-sdk-core", DistFile{Project: "rocm-sdk-core", Version: "7.14.0"}, true},
		{"rocm-sdk-core-7.14.0.tar.gz", "rocm", DistFile{}, false}, // another project
		{"torchvision-0.26.0-cp312-cp312-linux_x86_64.whl", "torch", DistFile{}, false},
		{"torch-2.11.0.whl", "torch", DistFile{}, false},
		{"README.txt", "torch", DistFile{}, false},
	}
	for _, tc := range tests {
		got, ok := ParseDistFilename(tc.file, tc.project)
		if ok != tc.ok || !cmp.Equal(got, tc.want) {
			t.Errorf("ParseDistFilename(%q, %q) = %+v, %v; want %+v, %v", tc.file, tc.project, got, ok, tc.want, tc.ok)
		}
	}
}

func TestInstallable(t *testing.T) {
	tests := []struct {
		file, py string
		want     bool
	}{
		{"torch-2.11.0-cp312-cp312-linux_x86_64.whl", "3.12", true},
		{"torch-2.11.0-cp312-cp312-linux_x86_64.whl", "3.14", false},
		{"torch-2.11.0-cp312-cp312-manylinux_2_28_x86_64.whl", "3.12", true},
		{"torch-2.11.0-cp312-cp312-manylinux_2_28_aarch64.whl", "3.12", false},
		{"torch-2.11.0-cp312-cp312-win_amd64.whl", "3.12", false},
		{"torch-2.11.0-cp312-cp312-musllinux_1_2_x86_64.whl", "3.12", false},
		{"torch-2.11.0-py3-none-any.whl", "3.14", true},
		{"torch-2.11.0-cp38-abi3-manylinux2014_x86_64.whl", "3.12", true},
		{"torch-2.11.0-cp313-abi3-manylinux2014_x86_64.whl", "3.12", false},
		{"torch-2.11.0-cp312-cp312-linux_x86_64.whl", "", true}, // Python not pinned: any
		{"torch-2.11.0.tar.gz", "3.12", true},
	}
	for _, tc := range tests {
		d, ok := ParseDistFilename(tc.file, "torch")
		if !ok {
			t.Fatalf("%s does not parse", tc.file)
		}
		if got := d.Installable(tc.py); got != tc.want {
			t.Errorf("%s with Python %q: installable = %v, want %v", tc.file, tc.py, got, tc.want)
		}
	}
}

// amdStylePage is what TheRock's generate_s3_index.py writes (a static page
// of anchors), with a pip-style hash fragment and an escaped '+'.
const amdStylePage = `<!DOCTYPE html>
<html>
  <head><meta charset="utf-8"></head>
  <body>
    <h2> <a href="https://github.com/ROCm/TheRock">ROCm/TheRock</a> gfx1151 packages</h2>
    <a href="https://repo.amd.com/rocm/whl-multi-arch/torch-2.11.0%2Brocm7.14.0-cp312-cp312-linux_x86_64.whl#sha256=ABCDEF">torch-2.11.0+rocm7.14.0-cp312-cp312-linux_x86_64.whl</a><br>
    <A HREF='../../files/torch-2.10.0%2Brocm7.13.0-cp312-cp312-linux_x86_64.whl' data-yanked="broken on gfx1151" data-requires-python="&gt;=3.10">x</A>
    <a href="torch-2.9.0.tar.gz">torch-2.9.0.tar.gz</a>
    <a>no href</a><a href="index.html">index</a>
    <br><hr>
  </body>
</html>`

func TestParseProjectHTML(t *testing.T) {
	base, _ := url.Parse("https://repo.amd.com/rocm/whl-multi-arch/torch/")
	page, err := ParseProjectHTML([]byte(amdStylePage), base)
	if err != nil {
		t.Fatal(err)
	}
	want := []IndexFile{
		{Filename: "torch-2.11.0+rocm7.14.0-cp312-cp312-linux_x86_64.whl", URL: "https://repo.amd.com/rocm/whl-multi-arch/torch-2.11.0%2Brocm7.14.0-cp312-cp312-linux_x86_64.whl#sha256=ABCDEF", SHA256: "abcdef"},
		{Filename: "torch-2.10.0+rocm7.13.0-cp312-cp312-linux_x86_64.whl", URL: "https://repo.amd.com/rocm/files/torch-2.10.0%2Brocm7.13.0-cp312-cp312-linux_x86_64.whl", Yanked: true, YankedReason: "broken on gfx1151", RequiresPython: ">=3.10"},
		{Filename: "torch-2.9.0.tar.gz", URL: "https://repo.amd.com/rocm/whl-multi-arch/torch/torch-2.9.0.tar.gz"},
	}
	if diff := cmp.Diff(want, page.Files); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	if page.Format != "html" {
		t.Errorf("format %q", page.Format)
	}
}

func TestParseProjectJSON(t *testing.T) {
	doc := `{"meta": {"api-version": "1.1"}, "name": "torch", "files": [
		{"filename": "torch-2.11.0-cp312-cp312-linux_x86_64.whl", "url": "https://x/t.whl", "hashes": {"sha256": "AA11"}, "requires-python": ">=3.10", "yanked": false},
		{"filename": "torch-2.10.0-cp312-cp312-linux_x86_64.whl", "url": "https://x/u.whl", "hashes": {}, "yanked": "bad build"},
		{"filename": "torch-2.9.0-cp312-cp312-linux_x86_64.whl", "url": "https://x/v.whl", "hashes": {}, "yanked": true},
		{"url": "https://x/no-name"}
	]}`
	page, err := ParseProjectJSON([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	want := []IndexFile{
		{Filename: "torch-2.11.0-cp312-cp312-linux_x86_64.whl", URL: "https://x/t.whl", SHA256: "aa11", RequiresPython: ">=3.10"},
		{Filename: "torch-2.10.0-cp312-cp312-linux_x86_64.whl", URL: "https://x/u.whl", Yanked: true, YankedReason: "bad build"},
		{Filename: "torch-2.9.0-cp312-cp312-linux_x86_64.whl", URL: "https://x/v.whl", Yanked: true},
	}
	if diff := cmp.Diff(want, page.Files); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	for _, bad := range []string{`{}`, `{"meta": {"api-version": "2.0"}, "files": []}`, `[1]`, `not json`} {
		if _, err := ParseProjectJSON([]byte(bad)); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
}

func TestNormalizeName(t *testing.T) {
	for in, want := range map[string]string{"amd_torch_device_gfx1151": "amd-torch-device-gfx1151", "Rocm.SDK__core": "rocm-sdk-core", "torch": "torch"} {
		if got := NormalizeName(in); got != want {
			t.Errorf("NormalizeName(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzParseProjectHTML(f *testing.F) {
	f.Add([]byte(amdStylePage))
	f.Add([]byte(`<a href="x-1.0.whl" data-yanked>x</a`))
	f.Add([]byte(`<a href='a b-1.0-py3-none-any.whl#sha256=' x=y =z`))
	base, _ := url.Parse("https://example.org/simple/x/")
	f.Fuzz(func(t *testing.T, data []byte) {
		page, err := ParseProjectHTML(data, base)
		if err != nil {
			return
		}
		for _, file := range page.Files {
			if !looksLikeDist(file.Filename) {
				t.Fatalf("kept a non-distribution file name %q", file.Filename)
			}
			ParseDistFilename(file.Filename, "x")
		}
	})
}

func FuzzParseProjectJSON(f *testing.F) {
	f.Add([]byte(`{"meta": {"api-version": "1.0"}, "files": [{"filename": "a-1.0.tar.gz", "url": "u", "hashes": {"sha256": "00"}, "yanked": "why"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		page, err := ParseProjectJSON(data)
		if err != nil {
			return
		}
		for _, file := range page.Files {
			if file.Filename == "" {
				t.Fatal("kept a file without a name")
			}
		}
	})
}

func FuzzVersion(f *testing.F) {
	for _, s := range []string{"2.11.0+rocm7.14.0", "7.10.0a20251015", "1!2.0.post3.dev4+abc", "v1", ""} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if VersionMatches(a, b) != VersionMatches(a, b) {
			t.Fatal("not deterministic")
		}
		if v, ok := ParseVersion(a); ok {
			if !VersionMatches(a, a) {
				t.Fatalf("%q does not match itself", a)
			}
			if strings.ContainsAny(v.Public, " \t") {
				t.Fatalf("canonical form %q has spaces", v.Public)
			}
		}
		ParseDistFilename(a+".whl", b)
		ParseDistFilename(a+".tar.gz", b)
	})
}
