package diagnose

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Input is one thing `haloforge diagnose` reads: a log, standard input, a
// run directory, or a diagnostics bundle (a directory or a .tar.gz).
type Input struct {
	Name string // as given on the command line
	scan func() ([]Finding, error)
}

// Scan reads the input offline and returns its findings, each with File
// (and Step, for a run's step logs) set.
func (in Input) Scan() ([]Finding, error) { return in.scan() }

// runReport is the part of a run's report.json that diagnosis needs.
type runReport struct {
	Track string `json:"track"`
}

// OpenInput resolves a command-line argument. It checks that everything
// can be read before anything is scanned, so an error means nothing was
// claimed. "-" reads stdin.
func OpenInput(arg string, stdin io.Reader) (Input, error) {
	if arg == "-" {
		return Input{Name: arg, scan: func() ([]Finding, error) {
			return Scan(stdin, MatcherOptions{File: "-"})
		}}, nil
	}
	info, err := os.Stat(arg)
	if err != nil {
		return Input{}, err
	}
	switch {
	case info.IsDir():
		return dirInput(arg)
	case isTarGz(arg):
		return Input{Name: arg, scan: func() ([]Finding, error) { return scanTarGz(arg) }}, nil
	case !info.Mode().IsRegular():
		return Input{}, fmt.Errorf("%s: not a regular file or directory", arg)
	}
	f, err := os.Open(arg)
	if err != nil {
		return Input{}, err
	}
	if err := f.Close(); err != nil {
		return Input{}, err
	}
	o := MatcherOptions{File: arg}
	if dir := filepath.Dir(arg); isRunDir(dir) && strings.HasSuffix(arg, ".log") {
		o.Track, o.Step = runTrack(dir), strings.TrimSuffix(filepath.Base(arg), ".log")
	}
	return Input{Name: arg, scan: func() ([]Finding, error) { return scanFile(arg, o) }}, nil
}

// dirInput reads a run directory (its step logs, <step>.log, with the
// track from report.json) or a bundle directory (every .txt and .log).
func dirInput(dir string) (Input, error) {
	var files []string
	run := isRunDir(dir)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if run && p != dir {
				return filepath.SkipDir // a run's logs are at its top level
			}
			return nil
		}
		if strings.HasSuffix(p, ".log") || !run && strings.HasSuffix(p, ".txt") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return Input{}, err
	}
	if len(files) == 0 {
		return Input{}, fmt.Errorf("%s: no .log or .txt files to diagnose", dir)
	}
	for _, p := range files {
		f, err := os.Open(p)
		if err != nil {
			return Input{}, err
		}
		f.Close()
	}
	track := ""
	if run {
		track = runTrack(dir)
	}
	return Input{Name: dir, scan: func() ([]Finding, error) {
		var all []Finding
		for _, p := range files {
			o := MatcherOptions{File: p, Track: track}
			if run {
				o.Step = strings.TrimSuffix(filepath.Base(p), ".log")
			}
			fs, err := scanFile(p, o)
			if err != nil {
				return nil, err
			}
			all = append(all, fs...)
		}
		return all, nil
	}}, nil
}

// isRunDir reports whether dir is a run directory of the runner:
// <state-dir>/runs/<run-id>/, which holds report.json.
func isRunDir(dir string) bool {
	if _, err := os.Stat(filepath.Join(dir, "report.json")); err == nil {
		return true
	}
	return filepath.Base(filepath.Dir(filepath.Clean(dir))) == "runs"
}

// runTrack reads the track of a run from its report.json, when it has one.
func runTrack(dir string) string {
	data, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		return ""
	}
	var r runReport
	if json.Unmarshal(data, &r) != nil {
		return ""
	}
	return r.Track
}

func scanFile(path string, o MatcherOptions) ([]Finding, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fs, err := Scan(f, o)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return fs, nil
}

func isTarGz(path string) bool {
	return strings.HasSuffix(path, ".tar.gz") || strings.HasSuffix(path, ".tgz")
}

// scanTarGz diagnoses the .txt and .log members of a bundle archive, as
// `haloforge doctor --collect FILE.tar.gz` writes it.
func scanTarGz(path string) ([]Finding, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	tr := tar.NewReader(zr)
	var all []Finding
	members := 0
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if h.Typeflag != tar.TypeReg || !(strings.HasSuffix(h.Name, ".txt") || strings.HasSuffix(h.Name, ".log")) {
			continue
		}
		members++
		fs, err := Scan(tr, MatcherOptions{File: path + ":" + strings.TrimPrefix(h.Name, "./")})
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", path, h.Name, err)
		}
		all = append(all, fs...)
	}
	if members == 0 {
		return nil, fmt.Errorf("%s: no .log or .txt files to diagnose", path)
	}
	return all, nil
}

// openRegular opens path for reading only when it is a regular file. The
// open does not block (a FIFO without a writer would hang os.Open) and the
// check is made on the opened file, so a name swapped for a FIFO or a
// device between a Stat and the open is refused too.
func openRegular(path string) (*os.File, fs.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !info.Mode().IsRegular() {
		f.Close()
		return nil, nil, fmt.Errorf("%s: %s, not a regular file", path, fileKind(info.Mode()))
	}
	return f, info, nil
}

// fileKind names what a non-regular file is, for messages.
func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m.IsDir():
		return "a directory"
	}
	return "not a regular file"
}
