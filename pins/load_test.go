package pins

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// loadWithin runs Load with a deadline. The deadline is only a safety net so
// that a regression fails instead of hanging the suite; the test asserts the
// error, never a duration.
func loadWithin(t *testing.T, path string) (*File, error) {
	t.Helper()
	type result struct {
		f   *File
		err error
	}
	done := make(chan result, 1)
	go func() {
		f, err := Load(path)
		done <- result{f, err}
	}()
	select {
	case r := <-done:
		return r.f, r.err
	case <-time.After(30 * time.Second):
		t.Fatalf("Load(%s) blocked", path)
		return nil, nil
	}
}

// TestLoadRefusesSpecialFiles: /dev/zero used to grow memory until Go
// crashed, a FIFO hung. Only regular files are read, with a
// bound, and the message says what the path really is.
func TestLoadRefusesSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.env")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	zeroLink := filepath.Join(dir, "devzero.env")
	if err := os.Symlink("/dev/zero", zeroLink); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.env")
	if err := os.WriteFile(big, []byte(strings.Repeat("# a comment line\n", (MaxFileSize/17)+1)), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, path, want string }{
		{"/dev/zero", "/dev/zero", "/dev/zero is a character device, not a regular file"},
		{"/dev/urandom", "/dev/urandom", "/dev/urandom is a character device, not a regular file"},
		{"symlink to /dev/zero", zeroLink, "devzero.env (→ /dev/zero) is a character device, not a regular file"},
		{"FIFO", fifo, "fifo.env is a FIFO (named pipe), not a regular file"},
		{"directory", dir, "is a directory, not a regular file"},
		{"over the size limit", big, "over the 1 MiB limit for a pins file"},
		{"missing", filepath.Join(dir, "nope.env"), "no such file or directory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := loadWithin(t, tc.path)
			if err == nil {
				t.Fatal("accepted")
			}
			if msg := err.Error(); !strings.Contains(msg, tc.want) || strings.Contains(msg, "\n") {
				t.Errorf("error %q, want one line saying %q", msg, tc.want)
			}
		})
	}
}

// TestLoadFollowsLinksToRegularFiles: a symlink is fine when it ends at a
// regular file, and errors name the path the user gave.
func TestLoadFollowsLinksToRegularFiles(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real.env")
	if err := os.WriteFile(real, []byte("GPU_TARGET=gfx1151\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.env")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	f, err := loadWithin(t, link)
	if err != nil {
		t.Fatal(err)
	}
	if f.Path != link || f.Values()["GPU_TARGET"] != "gfx1151" {
		t.Errorf("got %s %v", f.Path, f.Values())
	}
	exact := filepath.Join(dir, "exact.env")
	if err := os.WriteFile(exact, append([]byte("GPU_TARGET=gfx1151\n"), []byte(strings.Repeat("#", MaxFileSize-len("GPU_TARGET=gfx1151\n")))...), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := loadWithin(t, exact); err == nil || !strings.Contains(err.Error(), "bytes long") {
		// exactly at the size limit the file is read; its long line is then the parser's error
		t.Errorf("a file of exactly %d bytes: %v", MaxFileSize, err)
	}
}
