package diagnose

import (
	"archive/tar"
	"compress/gzip"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
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

// within runs f and fails the test if it has not returned after d: the
// inputs below hung diagnose before it refused them.
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s: still running after %v", what, d)
	}
}

func mkfifo(t *testing.T, path string) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// TestOpenInputDirReadsOnlyItsRegularFiles: a bundle
// directory with links out of it (to a file holding a secret, to
// /dev/zero), a FIFO, a socket and a broken link among its logs. Only the
// regular files inside it are read, a link that stays inside is followed,
// and every other log-named entry is skipped with a note. Before, diagnose
// quoted the outside file and hung on /dev/zero and on the FIFO.
func TestOpenInputDirReadsOnlyItsRegularFiles(t *testing.T) {
	tmp := t.TempDir()
	secret := filepath.Join(tmp, "secret-outside.txt")
	write(t, secret, "hipErrorNoDevice SECRET-TOKEN=hunter2 outside the bundle\n")
	dir := filepath.Join(tmp, "bdir")
	write(t, filepath.Join(dir, "uname.txt"), "Linux x 6.18.4\n")
	write(t, filepath.Join(dir, "logs", "build.log"), "c++: fatal error: Killed signal terminated program cc1plus\n")
	symlink(t, secret, filepath.Join(dir, "out.txt"))
	symlink(t, "/dev/zero", filepath.Join(dir, "zero.log"))
	symlink(t, "logs/build.log", filepath.Join(dir, "latest.log")) // stays inside: followed
	// a link whose path leaves the tree, even to come back, is not followed
	symlink(t, "../bdir/logs/build.log", filepath.Join(dir, "round.log"))
	symlink(t, "missing.log", filepath.Join(dir, "broken.log"))
	mkfifo(t, filepath.Join(dir, "p.log"))
	mkfifo(t, filepath.Join(dir, "\x1b[2Jq.log")) // its note must not clear a screen
	mkfifo(t, filepath.Join(dir, "inner-fifo"))
	symlink(t, "inner-fifo", filepath.Join(dir, "to-fifo.log"))
	l, err := net.Listen("unix", filepath.Join(dir, "s.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()

	var in Input
	var fs []Finding
	within(t, 10*time.Second, "diagnose "+dir, func() {
		if in, err = OpenInput(dir, nil); err != nil {
			return
		}
		fs, err = in.Scan()
	})
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, f := range fs {
		files = append(files, filepath.Base(f.File))
		if strings.Contains(f.Text, "SECRET") {
			t.Errorf("a file outside the directory was read: %+v", f)
		}
	}
	slices.Sort(files)
	if want := []string{"build.log", "latest.log"}; !slices.Equal(files, want) {
		t.Errorf("findings in %v, want %v", files, want)
	}
	want := map[string]string{
		"out.txt":     "a symbolic link that leads out of " + dir,
		"zero.log":    "a symbolic link that leads out of " + dir,
		"round.log":   "a symbolic link that leads out of " + dir,
		"broken.log":  "a broken symbolic link",
		"p.log":       "a FIFO (named pipe), not a regular file",
		"q.log":       "a FIFO (named pipe), not a regular file", // named "\x1b[2Jq.log": no escape reaches a terminal
		"s.log":       "a socket, not a regular file",
		"to-fifo.log": "a symbolic link to a FIFO (named pipe), not to a regular file",
	}
	got := map[string]string{}
	for _, note := range in.Skipped() {
		name, why, _ := strings.Cut(strings.TrimPrefix(note, dir+"/"), ": ")
		got[name] = why
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("skipped notes (-want +got):\n%s", diff)
	}
}

// TestOpenInputRunDirWithHostileReport: a report.json that is a FIFO or a
// link to /dev/zero gives no track; it neither hangs nor grows memory.
func TestOpenInputRunDirWithHostileReport(t *testing.T) {
	for name, mk := range map[string]func(string){
		"FIFO":      func(p string) { mkfifo(t, p) },
		"/dev/zero": func(p string) { symlink(t, "/dev/zero", p) },
	} {
		t.Run(name, func(t *testing.T) {
			run := filepath.Join(t.TempDir(), "runs", "20260101-120000")
			write(t, filepath.Join(run, "vllm.log"), "  Attempting uninstall: torch\n")
			mk(filepath.Join(run, "report.json"))
			var fs []Finding
			var err error
			within(t, 10*time.Second, "diagnose "+run, func() {
				var in Input
				if in, err = OpenInput(run, nil); err == nil {
					fs, err = in.Scan()
				}
			})
			if err != nil || len(fs) != 1 || fs[0].Step != "vllm" {
				t.Fatalf("findings %+v, %v", fs, err)
			}
		})
	}
}

// TestOpenInputFIFOIsAStream: a FIFO named on the command line is read as
// a stream, like standard input (the open waits for its writer), and an
// endless one ends with an error that names the limit.
func TestOpenInputFIFOIsAStream(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "build.log")
	mkfifo(t, fifo)
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		defer f.Close()
		io.WriteString(f, "[1/2] Building HIP object a.o\nc++: fatal error: Killed signal terminated program cc1plus\n")
	}()
	var fs []Finding
	var err error
	within(t, 10*time.Second, "diagnose FIFO", func() {
		var in Input
		if in, err = OpenInput(fifo, nil); err == nil {
			fs, err = in.Scan()
		}
	})
	if err != nil || len(fs) != 1 || fs[0].Family != "build-oom-killed" || fs[0].File != fifo {
		t.Fatalf("findings %+v, %v", fs, err)
	}

	endless := filepath.Join(dir, "zero.log")
	mkfifo(t, endless)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		f, err := os.OpenFile(endless, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		defer f.Close()
		zero := make([]byte, 64<<10)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := f.Write(zero); err != nil {
				return
			}
		}
	}()
	within(t, 20*time.Second, "diagnose endless FIFO", func() {
		var in Input
		if in, err = openInput(endless, nil, limits{logBytes: 32 << 20, totalBytes: 64 << 20, files: 10}); err == nil {
			_, err = in.Scan()
		}
	})
	if err == nil || !strings.Contains(err.Error(), "stopped after 32 MiB") {
		t.Fatalf("endless FIFO: %v", err)
	}
}

// TestOpenInputDevices: a device named on the command line is refused at
// once, directly or through a link; one on standard input (diagnose - <
// /dev/zero) is read as a stream and ends with an error naming the limit.
func TestOpenInputDevices(t *testing.T) {
	link := filepath.Join(t.TempDir(), "zero.log")
	symlink(t, "/dev/zero", link)
	for _, arg := range []string{"/dev/zero", "/dev/urandom", link} {
		_, err := OpenInput(arg, nil)
		if err == nil || !strings.Contains(err.Error(), "a character device, not a log") {
			t.Errorf("%s: %v", arg, err)
		}
	}
	zero, err := os.Open("/dev/zero")
	if err != nil {
		t.Fatal(err)
	}
	defer zero.Close()
	within(t, 20*time.Second, "diagnose - < /dev/zero", func() {
		var in Input
		if in, err = openInput("-", zero, limits{logBytes: 64 << 20, totalBytes: 64 << 20, files: 10}); err == nil {
			_, err = in.Scan()
		}
	})
	if err == nil || !strings.Contains(err.Error(), "standard input: stopped after 64 MiB: diagnose reads at most 64 MiB") {
		t.Fatalf("stdin from /dev/zero: %v", err)
	}
	// a stream of exactly the limit is whole
	in, err := openInput("-", strings.NewReader(strings.Repeat("x\n", 512)), limits{logBytes: 1024})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := in.Scan(); err != nil {
		t.Errorf("a stream of exactly the limit: %v", err)
	}
}

// tarEntry is one entry of a test archive; size, when set, is the size
// the header declares (the archive then ends after the header).
type tarEntry struct {
	name, body string
	typ        byte
	size       int64
}

func writeTarGz(t *testing.T, path string, entries []tarEntry) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zw := gzip.NewWriter(f)
	defer zw.Close()
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: 0o644, Size: int64(len(e.body)), Typeflag: e.typ, Linkname: "/etc/passwd"}
		if e.typ == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Typeflag != tar.TypeReg {
			h.Size = 0
		}
		if e.size > 0 {
			h.Size = e.size
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if e.size > 0 {
			tw.Flush() // a header that declares more than follows: the archive ends here
			return
		}
		if _, err := tw.Write([]byte(e.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestOpenInputTarGzBounds: an archive's members are read only when they
// are regular files (others are noted), and an archive over a limit (its
// entries, one member's bytes, all members' bytes) is refused with an
// error that names the limit, before the member over it is read. The
// review's bomb-single.tar.gz held one 10 GiB member of NUL bytes.
func TestOpenInputTarGzBounds(t *testing.T) {
	dir := t.TempDir()
	lim := limits{logBytes: 1 << 20, totalBytes: 2 << 20, files: 20}
	oom := "c++: fatal error: Killed signal terminated program cc1plus\n"
	mb := strings.Repeat("x", 1<<20-1) + "\n"
	many := make([]tarEntry, 21)
	for i := range many {
		many[i] = tarEntry{name: fmt.Sprintf("bundle/f%d.txt", i), body: "ok\n"}
	}
	tests := []struct {
		name    string
		entries []tarEntry
		limits  limits
		err     string // empty: read
		skipped []string
	}{
		{"links, devices and FIFOs are skipped", []tarEntry{
			{name: "bundle/build.log", body: oom},
			{name: "bundle/shadow.log", typ: tar.TypeSymlink},
			{name: "bundle/passwd.txt", typ: tar.TypeLink},
			{name: "bundle/zero.log", typ: tar.TypeChar},
			{name: "bundle/p.log", typ: tar.TypeFifo},
			{name: "bundle/sys/link", typ: tar.TypeSymlink}, // not a log name: no note
			{name: "bundle/\x1b]0;pwned\x07\x1b[2J.log", typ: tar.TypeSymlink},
		}, lim, "", []string{
			"shadow.log: a symbolic link in the archive, not a regular file",
			"passwd.txt: a hard link in the archive, not a regular file",
			"zero.log: a character device in the archive, not a regular file",
			"p.log: a FIFO in the archive, not a regular file",
			".log: a symbolic link in the archive, not a regular file", // no escape reaches a terminal
		}},
		{"a member at the limit is read", []tarEntry{{name: "bundle/big.log", body: mb[:len(mb)-len(oom)] + oom}}, lim, "", nil},
		{"a member over the limit", []tarEntry{{name: "bundle/x.log", size: 10 << 30}}, defaultLimits,
			"bundle/x.log: 10 GiB: diagnose reads archive members of at most 4 GiB", nil},
		{"members over the total", []tarEntry{
			{name: "bundle/a.log", body: mb}, {name: "bundle/b.bin", body: mb}, {name: "bundle/c.log", body: "x\n"},
		}, lim, "more than 2 MiB of members: diagnose reads at most 2 MiB of an archive", nil},
		{"too many entries", many, lim, "more than 20 entries: diagnose reads at most 20 entries of an archive", nil},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, fmt.Sprintf("b%d.tar.gz", i))
			writeTarGz(t, path, tt.entries)
			in, err := openInput(path, nil, tt.limits)
			if err != nil {
				t.Fatal(err)
			}
			var fs []Finding
			within(t, 10*time.Second, "diagnose "+path, func() { fs, err = in.Scan() })
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || len(fs) != 1 {
				t.Fatalf("findings %+v, %v", fs, err)
			}
			var got []string
			for _, s := range in.Skipped() {
				got = append(got, strings.TrimPrefix(s, path+":bundle/"))
			}
			if diff := cmp.Diff(tt.skipped, got); diff != "" {
				t.Errorf("skipped (-want +got):\n%s", diff)
			}
		})
	}
}

// TestOpenInputDirBounds: a directory with more log files, or more bytes
// of them, than diagnose reads is refused with an error naming the limit.
func TestOpenInputDirBounds(t *testing.T) {
	dir := t.TempDir()
	for i := range 4 {
		write(t, filepath.Join(dir, fmt.Sprintf("s%d.log", i)), strings.Repeat("x", 100)+"\n")
	}
	if _, err := openInput(dir, nil, limits{logBytes: 1 << 20, totalBytes: 1 << 20, files: 3}); err == nil ||
		!strings.Contains(err.Error(), "more than 3 .log and .txt files: diagnose reads at most 3 files of a directory") {
		t.Errorf("files: %v", err)
	}
	if _, err := openInput(dir, nil, limits{logBytes: 1 << 20, totalBytes: 300, files: 10}); err == nil ||
		!strings.Contains(err.Error(), "more than 300 bytes of .log and .txt files") {
		t.Errorf("bytes: %v", err)
	}
}
