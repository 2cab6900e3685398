package runner

import (
	"math"
	"path"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/haloforge/haloforge/internal/text"
)

// Progress is read from what a step's tools print, never from the step
// itself: the wordings below are the tools' own (the sources and dates are
// in scripts/SOURCES.md, "Progress wordings"), matched on sanitised lines,
// complete or still open:
//
//	ninja, cmake's Ninja generator   [229/400] Building CXX object …          (ninja's default NINJA_STATUS "[%f/%t] ", or "[%f/%t %es] ")
//	cmake's Makefile generator       [ 45%] Building CXX object …
//	podman, buildah on a terminal    Copying blob 8fa545433e5d [=>---] 1.3MiB / 22.9MiB   (one bar per blob; "done" when complete)
//	podman without a terminal        Progress: 12.3MiB / 45.6MiB                          (containers/image ≥ 5.36)
//	podman build, buildah            STEP 3/12: RUN dnf install …
//	pip ≥ 22 (rich)                  Downloading …/torch-2.7.1-….whl (721.0 MB)
//	                                 ━━━━━━━━━━━━━━━━━━━━╸━━━━━━ 412.3/721.0 MB 47.5 MB/s eta 0:00:07
//	                                 Building wheel for flash_attn (setup.py) ... |
//	git clone, fetch                 Receiving objects:  45% (1234/2742), 12.34 MiB | 5.67 MiB/s
//	tqdm (huggingface_hub)           model.safetensors:  45%|████▌     | 1.20G/2.50G [00:12<00:13, 98.5MB/s]
//
// The runner reads them off the byte path: the pty reader only copies to
// the log; the processor, which already cuts the log into lines, looks at
// the last lines of what it read and at the open line at most every
// Options.ProgressEvery (stream.progress), so a flood costs no more than a
// trickle.

// Units of Progress.
const (
	UnitBytes   = "bytes" // Done and Total are bytes
	UnitPercent = "%"     // Done is a percentage, Total 100
	UnitCount   = ""      // Done and Total count things: build steps, objects
)

// Kinds of Progress: which tool's counter it is.
const (
	KindNinja = "ninja"       // [N/M] build steps
	KindMake  = "make"        // [ N%] of a Makefile build
	KindPull  = "pull"        // image layers (podman, buildah)
	KindImage = "image-build" // STEP N/M of a Containerfile
	KindPip   = "pip"         // a download, or a wheel being built (no counter)
	KindGit   = "git"         // a clone's phases
	KindTqdm  = "download"    // a tqdm bar (Hugging Face downloads)
)

// DefaultProgressEvery is how often, at most, the open line and the
// progress are read and sent.
const DefaultProgressEvery = 250 * time.Millisecond

// recentLines is how many of the last lines of a read chunk are looked at
// for progress: enough for every layer bar of one podman redraw.
const recentLines = 64

// maxBlobs bounds the layers remembered for one pull.
const maxBlobs = 256

// rateWindow is how far back the rate looks: long enough to smooth a
// compiler's uneven objects, short enough to follow a download's speed.
const rateWindow = 30 * time.Second

// minRateSpan is the shortest time over which a rate is worth an ETA.
const minRateSpan = 1500 * time.Millisecond

// doneLinger is how long a finished counter stays shown.
const doneLinger = 3 * time.Second

// maxLabel bounds a label, in runes.
const maxLabel = 80

// reading is one line's progress, as the tool printed it.
type reading struct {
	kind, label, unit string
	done, total       int64
	blob              string // a layer's ID (podman's bars): summed with the others
	blobDone          bool   // the layer's bar said done or skipped
	download          bool   // a label naming the download whose bar follows (pip)
}

var (
	reNinja   = regexp.MustCompile(`^\[(\d{1,9})/(\d{1,9})(?: [^\]]{0,40})?\] (.*)$`)
	reMakePct = regexp.MustCompile(`^\[ {0,2}(\d{1,3})%\] (.*)$`)
	reStep    = regexp.MustCompile(`^(?:\[\d{1,4}/\d{1,4}\] )?STEP (\d{1,5})/(\d{1,5}): (.*)$`)
	reBlob    = regexp.MustCompile(`^Copying (blob|config) (?:sha256:)?([0-9a-f]{6,64})(?: (.*))?$`)
	reSizes   = regexp.MustCompile(`(\d{1,12}(?:\.\d{1,4})?) ?(bytes|[KMGTP]iB|[kKMGTP]B|b|B) ?/ ?(\d{1,12}(?:\.\d{1,4})?) ?(bytes|[KMGTP]iB|[kKMGTP]B|b|B)`)
	reNonTTY  = regexp.MustCompile(`^Progress: (\d{1,12}(?:\.\d{1,4})?) ?([KMGTP]iB|b) / (\d{1,12}(?:\.\d{1,4})?) ?([KMGTP]iB|b)$`)
	rePipBar  = regexp.MustCompile(`^ *[━╸╺╾╼ ]+ (\d{1,12}(?:\.\d{1,4})?)/(\d{1,12}(?:\.\d{1,4})?) (bytes|kB|MB|GB|TB|KiB|MiB|GiB|TiB) `)
	rePipGet  = regexp.MustCompile(`^ *Downloading (\S+)(?: \(\d[^)]*\))?$`)
	reWheel   = regexp.MustCompile(`^ *Building wheel for (\S+)`)
	reGit     = regexp.MustCompile(`^(?:remote: )?(Enumerating objects|Counting objects|Compressing objects|Receiving objects|Resolving deltas|Unpacking objects|Writing objects|Updating files|Checking out files): +(\d{1,3})% \((\d{1,12})/(\d{1,12})\)`)
	reTqdm    = regexp.MustCompile(`^(.{0,200}?):? *(\d{1,3})%\|[^|]{0,200}\| *(\d{1,12}(?:\.\d{1,4})?)([kKMGTP]?)(B?)/(\d{1,12}(?:\.\d{1,4})?)([kKMGTP]?)(B?) \[`)
)

// parseProgress reads one sanitised line; ok is false when the line says
// nothing of progress.
func parseProgress(line string) (r reading, ok bool) {
	if len(line) < 6 {
		return r, false
	}
	// Most lines are none of these: a cheap look at what each form starts
	// with first, so that only candidates meet a regular expression.
	trimmed := strings.TrimLeft(line, " ")
	switch {
	case strings.HasPrefix(line, "["):
		if m := reStep.FindStringSubmatch(line); m != nil {
			n, total := atoi(m[1]), atoi(m[2])
			return reading{kind: KindImage, label: "STEP " + m[1] + "/" + m[2] + ": " + m[3], done: max(n-1, 0), total: total}, true
		}
		if m := reNinja.FindStringSubmatch(line); m != nil {
			return reading{kind: KindNinja, label: m[3], done: atoi(m[1]), total: atoi(m[2])}, true
		}
		if m := reMakePct.FindStringSubmatch(line); m != nil {
			return reading{kind: KindMake, label: m[2], done: atoi(m[1]), total: 100, unit: UnitPercent}, true
		}
	case strings.HasPrefix(line, "STEP "):
		if m := reStep.FindStringSubmatch(line); m != nil {
			n, total := atoi(m[1]), atoi(m[2])
			return reading{kind: KindImage, label: line, done: max(n-1, 0), total: total}, true
		}
	case strings.HasPrefix(line, "Copying "):
		return parseBlob(line)
	case strings.HasPrefix(line, "Progress: "):
		if m := reNonTTY.FindStringSubmatch(line); m != nil {
			done, ok1 := size(m[1], m[2])
			total, ok2 := size(m[3], m[4])
			if ok1 && ok2 {
				return reading{kind: KindPull, label: "image", done: done, total: total, unit: UnitBytes}, true
			}
		}
	case strings.HasPrefix(trimmed, "Downloading "):
		if m := rePipGet.FindStringSubmatch(line); m != nil {
			return reading{kind: KindPip, label: download(m[1]), download: true}, true
		}
	case strings.HasPrefix(trimmed, "Building wheel for "):
		if m := reWheel.FindStringSubmatch(line); m != nil {
			return reading{kind: KindPip, label: "Building wheel for " + m[1]}, true
		}
	case strings.HasPrefix(trimmed, "━"), strings.HasPrefix(trimmed, "╸"), strings.HasPrefix(trimmed, "╺"):
		if m := rePipBar.FindStringSubmatch(line + " "); m != nil {
			done, ok1 := size(m[1], m[3])
			total, ok2 := size(m[2], m[3])
			if ok1 && ok2 {
				return reading{kind: KindPip, done: done, total: total, unit: UnitBytes}, true
			}
		}
	}
	if strings.Contains(line, "% (") {
		if m := reGit.FindStringSubmatch(line); m != nil {
			return reading{kind: KindGit, label: m[1], done: atoi(m[3]), total: atoi(m[4])}, true
		}
	}
	if strings.Contains(line, "%|") {
		if m := reTqdm.FindStringSubmatch(line); m != nil {
			unit := UnitCount
			if m[5] == "B" || m[8] == "B" {
				unit = UnitBytes
			}
			done, ok1 := scaled(m[3], m[4])
			total, ok2 := scaled(m[6], m[7])
			if ok1 && ok2 {
				return reading{kind: KindTqdm, label: strings.TrimSpace(m[1]), done: done, total: total, unit: unit}, true
			}
		}
	}
	return r, false
}

// parseBlob reads one of podman's layer bars.
func parseBlob(line string) (reading, bool) {
	m := reBlob.FindStringSubmatch(line)
	if m == nil {
		return reading{}, false
	}
	r := reading{kind: KindPull, label: "image", unit: UnitBytes, blob: m[1] + " " + m[2][:min(len(m[2]), 12)]}
	rest := m[3]
	switch {
	case strings.HasPrefix(rest, "done"), strings.HasPrefix(rest, "skipped"):
		r.blobDone = true
		return r, true
	}
	s := reSizes.FindStringSubmatch(rest)
	if s == nil {
		return r, true // a bar without sizes yet, or the plain "Copying blob sha256:…" of no terminal
	}
	done, ok1 := size(s[1], s[2])
	total, ok2 := size(s[3], s[4])
	if !ok1 || !ok2 {
		return reading{}, false
	}
	r.done, r.total = done, total
	return r, true
}

// download is what a pip "Downloading" line names: the file, without the
// index's address.
func download(s string) string {
	if i := strings.IndexAny(s, "?#"); i >= 0 {
		s = s[:i]
	}
	if b := path.Base(s); b != "." && b != "/" {
		s = b
	}
	return unescapePath(s)
}

// unescapePath undoes a URL's printable %XX (pip names torch-2.7.1%2Brocm…
// files); anything else stays as it is.
func unescapePath(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+3], 16, 8); err == nil && v >= 0x20 && v < 0x7f {
				b.WriteByte(byte(v))
				i += 2
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func atoi(s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// size is a number and its unit in bytes: binary units (KiB, as podman's
// bars print them) and decimal ones (kB, MB, as pip's do).
func size(num, unit string) (int64, bool) {
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f < 0 {
		return 0, false
	}
	mult := 1.0
	switch unit {
	case "b", "B", "bytes":
	case "KiB":
		mult = 1 << 10
	case "MiB":
		mult = 1 << 20
	case "GiB":
		mult = 1 << 30
	case "TiB":
		mult = 1 << 40
	case "PiB":
		mult = 1 << 50
	case "kB", "KB":
		mult = 1e3
	case "MB":
		mult = 1e6
	case "GB":
		mult = 1e9
	case "TB":
		mult = 1e12
	case "PB":
		mult = 1e15
	default:
		return 0, false
	}
	v := f * mult
	if v > 1<<62 {
		return 0, false
	}
	return int64(v), true
}

// scaled is tqdm's number with its SI prefix (unit_scale): 1.20G.
func scaled(num, prefix string) (int64, bool) {
	switch prefix {
	case "":
		return size(num, "B")
	case "k", "K":
		return size(num, "kB")
	default:
		return size(num, prefix+"B")
	}
}

// progressTracker turns the readings of one step into Progress: it sums
// a pull's layers, measures the rate over the last rateWindow and says
// what changed since the last event.
type progressTracker struct {
	cur       counter
	blobs     map[string]*blob
	blobOrder []string
	download  string // the file the next pip bar downloads
	sent      Progress
	sentAny   bool
}

// counter is the progress shown: one tool's count since it began.
type counter struct {
	kind, label, unit string
	done, total       int64
	since, updated    time.Time
	finished          time.Time // when done reached total
	samples           []sample
}

type sample struct {
	at   time.Time
	done int64
}

type blob struct {
	done, total int64
	complete    bool
}

func newProgressTracker() *progressTracker {
	return &progressTracker{blobs: map[string]*blob{}}
}

// see takes one line's reading at now.
func (t *progressTracker) see(r reading, now time.Time) {
	switch {
	case r.blob != "":
		r = t.pull(r)
	case r.kind == KindPip && r.download:
		t.download = r.label
		return
	case r.kind == KindPip && r.total > 0:
		r.label = t.download
	}
	if r.total <= 0 && r.label == "" {
		return
	}
	r.label = text.Printable(r.label, maxLabel)
	if r.done > r.total && r.total > 0 {
		r.done = r.total
	}
	c := &t.cur
	if c.kind != r.kind || c.total != r.total || c.unit != r.unit || r.done < c.done || c.since.IsZero() ||
		(r.kind != KindNinja && r.kind != KindMake && r.kind != KindImage && c.label != r.label) {
		*c = counter{kind: r.kind, unit: r.unit, total: r.total, since: now}
	}
	c.label, c.done, c.updated = r.label, r.done, now
	if c.total > 0 && c.done >= c.total {
		if c.finished.IsZero() {
			c.finished = now
		}
	} else {
		c.finished = time.Time{}
	}
	if n := len(c.samples); n == 0 || c.samples[n-1].done != r.done {
		c.samples = append(c.samples, sample{now, r.done})
	}
	// Keep one sample older than the window, so the rate spans it all.
	drop := 0
	for drop+1 < len(c.samples) && now.Sub(c.samples[drop+1].at) > rateWindow {
		drop++
	}
	c.samples = c.samples[drop:]
}

// pull adds one layer bar and returns the pull's sum; a layer not seen
// before, once every known layer is done, starts a new pull.
func (t *progressTracker) pull(r reading) reading {
	b := t.blobs[r.blob]
	if b == nil {
		if t.allDone() || len(t.blobs) >= maxBlobs {
			t.blobs, t.blobOrder = map[string]*blob{}, nil
		}
		b = &blob{}
		t.blobs[r.blob] = b
		t.blobOrder = append(t.blobOrder, r.blob)
	}
	if r.blobDone {
		b.complete = true
		b.done = b.total
	} else if r.total > 0 {
		b.done, b.total = min(r.done, r.total), r.total
	}
	sum := reading{kind: KindPull, label: "image", unit: UnitBytes}
	for _, id := range t.blobOrder {
		x := t.blobs[id]
		sum.done += x.done
		sum.total += x.total
	}
	return sum
}

func (t *progressTracker) allDone() bool {
	if len(t.blobs) == 0 {
		return false
	}
	for _, b := range t.blobs {
		if !b.complete {
			return false
		}
	}
	return true
}

// progress is what the tracker knows at now; ok is false when there is
// nothing to show (no counter yet, or one finished a while ago).
func (t *progressTracker) progress(now time.Time) (Progress, bool) {
	c := &t.cur
	if c.since.IsZero() || (!c.finished.IsZero() && now.Sub(c.finished) > doneLinger) {
		return Progress{}, false
	}
	p := Progress{Kind: c.kind, Label: c.label, Done: c.done, Total: c.total, Unit: c.unit, Since: now.Sub(c.since)}
	if c.total > 0 && c.done < c.total && len(c.samples) >= 2 {
		first, last := c.samples[0], c.samples[len(c.samples)-1]
		// The rate runs to now: a counter that stopped moving slows down.
		span := now.Sub(first.at)
		if span >= minRateSpan && last.done > first.done {
			p.Rate = float64(last.done-first.done) / span.Seconds()
			// Whole seconds, up: a counter not done yet has some time left.
			p.ETA = time.Duration(math.Ceil(float64(c.total-c.done)/p.Rate)) * time.Second
		}
	}
	return p, true
}

// changed says whether p is worth another event after the last one sent.
func (t *progressTracker) changed(p Progress, ok bool) bool {
	if !ok {
		return t.sentAny
	}
	if !t.sentAny {
		return true
	}
	s := t.sent
	return s.Kind != p.Kind || s.Label != p.Label || s.Done != p.Done || s.Total != p.Total || s.ETA != p.ETA
}

// Percent is how far a counter is, 0-100; -1 when it has no total.
func (p Progress) Percent() int {
	if p.Total <= 0 {
		return -1
	}
	if p.Unit == UnitPercent {
		return int(min(p.Done, 100))
	}
	return int(min(p.Done*100/p.Total, 100))
}

// Badge is the progress in a few words, the one form every screen shows:
// "229/400 · 57% · ETA 3m12s", "37% of 31.5 MiB · 2.9 MiB/s · ETA 7s",
// "Building wheel for flash_attn · 12m05s".
func (p Progress) Badge() string {
	var parts []string
	switch {
	case p.Total <= 0:
		return strings.TrimSpace(p.Label + " · " + text.Duration(p.Since))
	case p.Unit == UnitPercent:
		parts = append(parts, strconv.Itoa(p.Percent())+"%")
	case p.Unit == UnitBytes:
		parts = append(parts, strconv.Itoa(p.Percent())+"% of "+text.Bytes(p.Total))
		if p.Rate > 0 {
			parts = append(parts, text.Bytes(int64(p.Rate))+"/s")
		}
	default:
		parts = append(parts, strconv.FormatInt(p.Done, 10)+"/"+strconv.FormatInt(p.Total, 10), strconv.Itoa(p.Percent())+"%")
	}
	if p.ETA > 0 {
		parts = append(parts, "ETA "+text.Duration(p.ETA))
	}
	return strings.Join(parts, " · ")
}
