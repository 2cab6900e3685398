package safefile

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestOpenRegular opens real special files: none may block or be returned.
func TestOpenRegular(t *testing.T) {
	dir := t.TempDir()
	reg := filepath.Join(dir, "f.txt")
	if err := os.WriteFile(reg, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "s.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	link := filepath.Join(dir, "link")
	if err := os.Symlink(reg, link); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path   string
		follow bool
		kind   string // "" = opened
	}{
		{reg, false, ""},
		{link, true, ""},
		{fifo, true, "a FIFO (named pipe)"},
		{"/dev/zero", true, "a character device"},
		{dir, true, "a directory"},
	} {
		done := make(chan struct{})
		go func() {
			defer close(done)
			f, _, err := OpenRegular(tc.path, tc.follow)
			var nr *NotRegularError
			switch {
			case tc.kind == "" && err != nil:
				t.Errorf("%s: %v", tc.path, err)
			case tc.kind == "":
				f.Close()
			case !errors.As(err, &nr) || Kind(nr.Mode) != tc.kind:
				t.Errorf("%s: %v, want %s", tc.path, err, tc.kind)
			}
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: OpenRegular blocked", tc.path)
		}
	}
	// a socket cannot be opened at all; a final link with follow false is refused
	if _, _, err := OpenRegular(sock, true); err == nil {
		t.Errorf("a socket was opened")
	}
	if _, _, err := OpenRegular(link, false); err == nil {
		t.Errorf("a final symlink was followed with follow false")
	}
}
