package safefile

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
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
		follow Links
		kind   string // "" = opened
	}{
		{reg, NoFollow, ""},
		{link, Follow, ""},
		{link, NoFollow, "a symbolic link"},
		{fifo, Follow, "a FIFO (named pipe)"},
		{"/dev/zero", Follow, "a character device"},
		{dir, Follow, "a directory"},
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
	if _, _, err := OpenRegular(sock, Follow); err == nil {
		t.Errorf("a socket was opened")
	}
}

// TestReadRegular reads real files and special files: each answer comes at
// once, and a refusal is typed and names the path.
func TestReadRegular(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small")
	big := filepath.Join(dir, "big")
	fifo := filepath.Join(dir, "fifo")
	link := filepath.Join(dir, "link")
	for p, n := range map[string]int{small: 10, big: 11} {
		if err := os.WriteFile(p, make([]byte, n), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(small, link); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		path  string
		links Links
		want  string // the error's type, "" for none
	}{
		{"a file within the bound", small, NoFollow, ""},
		{"a file over the bound", big, NoFollow, "too large"},
		{"a FIFO with no writer", fifo, Follow, "not regular"},
		{"a link the user named", link, Follow, ""},
		{"a link in the state dir", link, NoFollow, "not regular"},
		{"a directory", dir, Follow, "not regular"},
		{"procfs says 0 bytes and is read", "/proc/sys/kernel/ostype", Follow, ""},
		{"absent", filepath.Join(dir, "none"), Follow, "not exist"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			type result struct {
				data []byte
				err  error
			}
			done := make(chan result, 1)
			go func() {
				data, err := ReadRegular(tt.path, 10, tt.links)
				done <- result{data, err}
			}()
			var r result
			select {
			case r = <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("ReadRegular(%s) blocked", tt.path)
			}
			var nr *NotRegularError
			var tl *TooLargeError
			switch tt.want {
			case "":
				if r.err != nil || len(r.data) == 0 {
					t.Fatalf("got %d bytes, %v", len(r.data), r.err)
				}
				return
			case "too large":
				if !errors.As(r.err, &tl) || tl.Limit != 10 {
					t.Fatalf("got %v, want a *TooLargeError", r.err)
				}
			case "not regular":
				if !errors.As(r.err, &nr) {
					t.Fatalf("got %v, want a *NotRegularError", r.err)
				}
			case "not exist":
				if !errors.Is(r.err, fs.ErrNotExist) {
					t.Fatalf("got %v, want not exist", r.err)
				}
			}
			if !strings.Contains(r.err.Error(), tt.path) {
				t.Errorf("%q does not name %s", r.err, tt.path)
			}
		})
	}
	if err := (&TooLargeError{Path: "f", Limit: 32 << 20, Size: 40 << 20}).Error(); err != "f is 40 MiB, over the 32 MiB limit" {
		t.Errorf("TooLargeError = %q", err)
	}
}

func TestCause(t *testing.T) {
	_, err := os.Open(filepath.Join(t.TempDir(), "none"))
	if got := Cause(err); got != syscall.ENOENT {
		t.Errorf("Cause(%v) = %v, want ENOENT", err, got)
	}
	plain := errors.New("plain")
	if got := Cause(plain); got != plain {
		t.Errorf("Cause(plain) = %v", got)
	}
}

// TestOpenDir: a directory opens; a FIFO with no writer under the name is
// refused at once.
func TestOpenDir(t *testing.T) {
	dir := t.TempDir()
	f, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		f, err := OpenDir(fifo)
		if err == nil {
			f.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Error("a FIFO was opened as a directory")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("OpenDir waited on the FIFO")
	}
}
