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

	"github.com/haloforge/haloforge/internal/safefile"
	"github.com/haloforge/haloforge/internal/text"
)

// Input is one thing `haloforge diagnose` reads: a log, standard input, a
// FIFO, a run directory, or a diagnostics bundle (a directory or a
// .tar.gz).
type Input struct {
	Name    string // as given on the command line
	scan    func(skip func(string)) ([]Finding, error)
	skipped *[]string
	tail    *streamTail // a stream's kept end, for its suspects (stdin, a FIFO)
}

// StdinName is how messages name "-": people read "standard input".
const StdinName = "standard input"

// DisplayName is the input's name for people: "standard input" for "-".
func (in Input) DisplayName() string {
	if in.Name == "-" {
		return StdinName
	}
	return in.Name
}

// Suspects returns, after Scan, up to limit lines that look like the error
// of a failure no rule knows (see the function Suspects): for a log file
// read from disk, for standard input and a FIFO from the end of the stream
// Scan kept (suspectTail bytes: memory stays bounded), none for a run
// directory or a bundle.
func (in Input) Suspects(limit int) []Suspect {
	if in.tail != nil {
		return in.tail.suspects(limit)
	}
	if in.scan == nil || in.Name == "-" {
		return nil
	}
	ss, _ := Suspects(in.Name, limit)
	return ss
}

// Scan reads the input offline and returns its findings, each with File
// (and Step, for a run's step logs) set.
func (in Input) Scan() ([]Finding, error) {
	return in.scan(func(note string) { *in.skipped = append(*in.skipped, text.Printable(note, 0)) })
}

// Skipped returns one line for each file the input holds that looked
// like a log but was not read, with the reason: a symbolic link leading
// out of a directory, a FIFO, a device, a socket, a link inside an
// archive. Opening finds those of a directory, Scan those of an archive.
func (in Input) Skipped() []string {
	if in.skipped == nil {
		return nil
	}
	return *in.skipped
}

// limits bound what diagnose reads from one input, so that no stream,
// archive or directory makes it run without end. Memory does not depend
// on them: Scan holds at most one line of maxLine bytes whatever it reads.
type limits struct {
	logBytes   int64 // of one log read from a stream (stdin, a FIFO) or one archive member
	totalBytes int64 // of all the logs of a directory, or all the members of an archive
	files      int   // logs in a directory, entries in an archive
}

// defaultLimits: 4 GiB is ten times the longest build log we have seen
// (a verbose PyTorch build) and takes diagnose a few seconds; /dev/zero is
// not a log. A bundle from doctor --collect holds about a hundred files.
var defaultLimits = limits{logBytes: 4 << 30, totalBytes: 8 << 30, files: 10_000}

// runReport is the part of a run's report.json that diagnosis needs.
type runReport struct {
	Track string `json:"track"`
}

// OpenInput resolves a command-line argument. It checks that everything
// can be read before anything is scanned, so an error means nothing was
// claimed. "-" reads stdin. A FIFO is read as a stream, like stdin; a
// device or a socket is refused.
func OpenInput(arg string, stdin io.Reader) (Input, error) {
	return openInput(arg, stdin, defaultLimits)
}

func openInput(arg string, stdin io.Reader, lim limits) (Input, error) {
	in := Input{Name: arg, skipped: new([]string)}
	if arg == "-" {
		in.tail = newStreamTail(capStream(stdin, "-", lim.logBytes), suspectTail)
		in.scan = func(func(string)) ([]Finding, error) {
			fs, err := Scan(in.tail, MatcherOptions{File: "-"})
			if err != nil {
				return nil, fmt.Errorf("%s: %w", StdinName, err)
			}
			return fs, nil
		}
		return in, nil
	}
	info, err := os.Stat(arg)
	if err != nil {
		return Input{}, err
	}
	mode := info.Mode()
	switch {
	case info.IsDir():
		return dirInput(in, lim)
	case mode&(fs.ModeDevice|fs.ModeCharDevice|fs.ModeSocket|fs.ModeIrregular) != 0:
		return Input{}, fmt.Errorf("%s: %s, not a log (to read a stream, pipe it: ... | haloforge diagnose -)", arg, safefile.Kind(mode))
	case mode&fs.ModeNamedPipe != 0:
		// A FIFO is opened when it is read: the open waits for a writer,
		// as cat's does.
		tail := &streamTail{max: suspectTail}
		if !isTarGz(arg) {
			in.tail = tail
		}
		in.scan = func(skip func(string)) ([]Finding, error) {
			f, err := os.Open(arg)
			if err != nil {
				return nil, err
			}
			defer f.Close()
			if isTarGz(arg) {
				return scanTarGz(arg, f, lim, skip)
			}
			tail.r = capStream(f, arg, lim.logBytes)
			fs, err := Scan(tail, MatcherOptions{File: arg})
			if err != nil {
				return nil, fmt.Errorf("%s: %w", arg, err)
			}
			return fs, nil
		}
		return in, nil
	}
	f, _, err := safefile.OpenRegular(arg, safefile.Follow)
	if err != nil {
		return Input{}, err
	}
	if err := f.Close(); err != nil {
		return Input{}, err
	}
	if isTarGz(arg) {
		in.scan = func(skip func(string)) ([]Finding, error) {
			f, _, err := safefile.OpenRegular(arg, safefile.Follow)
			if err != nil {
				return nil, err
			}
			defer f.Close()
			return scanTarGz(arg, f, lim, skip)
		}
		return in, nil
	}
	o := MatcherOptions{File: arg}
	if dir := filepath.Dir(arg); isRunDir(dir) && strings.HasSuffix(arg, ".log") {
		o.Track, o.Step = runTrack(dir), strings.TrimSuffix(filepath.Base(arg), ".log")
	}
	in.scan = func(func(string)) ([]Finding, error) { return scanFile(arg, o) }
	return in, nil
}

// dirInput reads a run directory (its step logs, <step>.log, with the
// track from report.json) or a bundle directory (every .txt and .log).
// Only regular files are read, and only inside the directory: a symbolic
// link is followed while its path stays in the tree ("../dir/x.log" does
// not), and a link leading out of it, a FIFO, a device or a socket is
// skipped with a note. Files are opened through an os.Root of the
// directory, so a link swapped in after the walk cannot lead out either.
func dirInput(in Input, lim limits) (Input, error) {
	dir := in.Name
	root, err := os.OpenRoot(dir)
	if err != nil {
		return Input{}, err
	}
	defer root.Close()
	var files []string // relative to dir
	var total int64
	run := isRunDir(dir)
	err = fs.WalkDir(root.FS(), ".", func(rel string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if run && rel != "." {
				return fs.SkipDir // a run's logs are at its top level
			}
			return nil
		}
		if !(strings.HasSuffix(rel, ".log") || !run && strings.HasSuffix(rel, ".txt")) {
			return nil
		}
		p := filepath.Join(dir, rel)
		info, why := dirEntryFile(root, dir, rel, d)
		if why != "" {
			*in.skipped = append(*in.skipped, text.Printable(p+": "+why, 0))
			return nil
		}
		if len(files) == lim.files {
			return fmt.Errorf("%s: more than %d .log and .txt files: diagnose reads at most %d files of a directory", dir, lim.files, lim.files)
		}
		if total += info.Size(); total > lim.totalBytes {
			return fmt.Errorf("%s: more than %s of .log and .txt files: diagnose reads at most %s of a directory", dir, text.Bytes(lim.totalBytes), text.Bytes(lim.totalBytes))
		}
		files = append(files, rel)
		return nil
	})
	if err != nil {
		return Input{}, err
	}
	if len(files) == 0 {
		return Input{}, fmt.Errorf("%s: no .log or .txt files to diagnose", dir)
	}
	for _, rel := range files {
		f, _, err := safefile.OpenRegularIn(root, rel)
		if err != nil {
			return Input{}, fmt.Errorf("%s: %w", filepath.Join(dir, rel), err)
		}
		f.Close()
	}
	track := ""
	if run {
		track = runTrack(dir)
	}
	in.scan = func(func(string)) ([]Finding, error) {
		root, err := os.OpenRoot(dir)
		if err != nil {
			return nil, err
		}
		defer root.Close()
		var all []Finding
		for _, rel := range files {
			p := filepath.Join(dir, rel)
			o := MatcherOptions{File: text.Printable(p, 0), Track: track} // a name is anyone's bytes
			if run {
				o.Step = strings.TrimSuffix(filepath.Base(rel), ".log")
			}
			f, _, err := safefile.OpenRegularIn(root, rel)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", p, err)
			}
			fs, err := Scan(f, o)
			f.Close()
			if err != nil {
				return nil, fmt.Errorf("%s: %w", p, err)
			}
			all = append(all, fs...)
		}
		return all, nil
	}
	return in, nil
}

// dirEntryFile returns what a log-named entry of a directory is, or why
// it is not read.
func dirEntryFile(root *os.Root, dir, rel string, d fs.DirEntry) (fs.FileInfo, string) {
	switch {
	case d.Type().IsRegular():
		info, err := d.Info()
		if err != nil {
			return nil, err.Error()
		}
		return info, ""
	case d.Type()&fs.ModeSymlink == 0:
		return nil, safefile.Kind(d.Type()) + ", not a regular file"
	}
	// a symbolic link: Root.Stat follows it only inside the tree
	info, err := root.Stat(rel)
	switch {
	case err == nil && info.Mode().IsRegular():
		return info, ""
	case err == nil:
		return nil, "a symbolic link to " + safefile.Kind(info.Mode()) + ", not to a regular file"
	}
	if _, err := os.Stat(filepath.Join(dir, rel)); err != nil {
		return nil, "a broken symbolic link"
	}
	return nil, "a symbolic link that leads out of " + dir
}

// isRunDir reports whether dir is a run directory of the runner:
// <state-dir>/runs/<run-id>/, which holds report.json.
func isRunDir(dir string) bool {
	if _, err := os.Lstat(filepath.Join(dir, "report.json")); err == nil {
		return true
	}
	return filepath.Base(filepath.Dir(filepath.Clean(dir))) == "runs"
}

// maxReport bounds the report.json read for a run's track: the runner
// writes a few kilobytes.
const maxReport = 1 << 20

// runTrack reads the track of a run from its report.json, when it has one
// that is a regular file in the run directory.
func runTrack(dir string) string {
	data, err := safefile.ReadRegular(filepath.Join(dir, "report.json"), maxReport, safefile.NoFollow)
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
	f, _, err := safefile.OpenRegular(path, safefile.Follow)
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

// scanTarGz diagnoses the .txt and .log members of a bundle archive read
// from r, as `haloforge doctor --collect FILE.tar.gz` writes it. Only
// regular members are read (others are noted and skipped; nothing is
// written anywhere), and the archive is bounded: entries, bytes of one
// member, bytes of all members (skipped ones too, since decompressing
// them costs the same). Sizes come from the headers, so an archive over a
// limit is refused before its members are read.
func scanTarGz(path string, r io.Reader, lim limits, skip func(string)) ([]Finding, error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	tr := tar.NewReader(zr)
	var all []Finding
	var total int64
	entries, members := 0, 0
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if entries++; entries > lim.files {
			return nil, fmt.Errorf("%s: more than %d entries: diagnose reads at most %d entries of an archive", path, lim.files, lim.files)
		}
		name := path + ":" + text.Printable(strings.TrimPrefix(h.Name, "./"), 0)
		isLog := strings.HasSuffix(h.Name, ".txt") || strings.HasSuffix(h.Name, ".log")
		if isLog && h.Typeflag == tar.TypeReg && h.Size > lim.logBytes {
			return nil, fmt.Errorf("%s: %s: diagnose reads archive members of at most %s", name, text.Bytes(h.Size), text.Bytes(lim.logBytes))
		}
		if total += max(h.Size, 0); total > lim.totalBytes {
			return nil, fmt.Errorf("%s: more than %s of members: diagnose reads at most %s of an archive", path, text.Bytes(lim.totalBytes), text.Bytes(lim.totalBytes))
		}
		if !isLog {
			continue
		}
		if h.Typeflag != tar.TypeReg {
			skip(name + ": " + tarKind(h.Typeflag) + " in the archive, not a regular file")
			continue
		}
		members++
		fs, err := Scan(tr, MatcherOptions{File: name})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		all = append(all, fs...)
	}
	if members == 0 {
		return nil, fmt.Errorf("%s: no .log or .txt files to diagnose", path)
	}
	return all, nil
}

// tarKind names a non-regular archive entry, for notes.
func tarKind(t byte) string {
	switch t {
	case tar.TypeSymlink:
		return "a symbolic link"
	case tar.TypeLink:
		return "a hard link"
	case tar.TypeChar:
		return "a character device"
	case tar.TypeBlock:
		return "a block device"
	case tar.TypeFifo:
		return "a FIFO"
	case tar.TypeDir:
		return "a directory"
	}
	return fmt.Sprintf("an entry of type %q", t)
}

// capStream passes at most limit bytes of a stream on; a longer stream
// ends in an error that names the limit.
func capStream(r io.Reader, name string, limit int64) io.Reader {
	if f, ok := r.(*os.File); ok {
		if info, err := f.Stat(); err == nil && info.Mode().IsRegular() {
			return r // a file redirected to stdin has an end
		}
	}
	return &cappedReader{r: r, left: limit, limit: limit}
}

// cappedReader is capStream's reader.
type cappedReader struct {
	r           io.Reader
	left, limit int64
}

func (c *cappedReader) Read(p []byte) (int, error) {
	if c.left == 0 {
		// one byte more tells a stream of exactly the limit from a longer one
		var one [1]byte
		n, err := c.r.Read(one[:])
		if n > 0 {
			return 0, fmt.Errorf("stopped after %s: diagnose reads at most %s of a log from a pipe, FIFO or device (save it to a file to diagnose it whole)", text.Bytes(c.limit), text.Bytes(c.limit))
		}
		return 0, err
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}
