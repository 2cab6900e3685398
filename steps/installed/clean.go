package installed

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/haloforge/haloforge/internal/safefile"
	"github.com/haloforge/haloforge/internal/text"
)

// Exec runs a command and returns its output; the real one is RunCommand.
type Exec func(ctx context.Context, argv []string) (stdout, stderr string, err error)

// RunCommand runs argv with no input, its output kept (bounded by what
// the engines print for one object).
func RunCommand(ctx context.Context, argv []string) (string, string, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	return out.String(), errOut.String(), err
}

// commandTimeout bounds one engine command.
const commandTimeout = 2 * time.Minute

// States of a Verdict.
const (
	Remove = "remove" // haloforge's, as recorded: clean removes it
	Gone   = "gone"   // not there any more: clean forgets it
	Kept   = "kept"   // there, but not (or no longer) haloforge's, or not to be removed: never touched
)

// Verdict is what clean makes of one item now.
type Verdict struct {
	Item  Item
	State string
	Why   string // for Kept and Gone; for Remove what else happens (an image that stays tagged)
	// Foreign says a Kept item is not haloforge's now (its label, marker
	// or identity no longer match the record): the record forgets it.
	Foreign bool
	// Size is measured now; nil when unknown.
	Size *int64
	// Command removes it, as a person would type it; "" when haloforge
	// removes it itself (a path) or nothing is removed.
	Command []string
	// args are Command's arguments after the engine: what Remove runs.
	args []string
}

// Cleaner checks and removes items on this machine.
type Cleaner struct {
	StateDir string
	Exec     Exec // nil means RunCommand
}

func (c Cleaner) run(ctx context.Context, argv []string) (string, string, error) {
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	if c.Exec != nil {
		return c.Exec(ctx, argv)
	}
	return RunCommand(ctx, argv)
}

// Check says what clean would do with it now. A box or an image is asked
// of its engine; a path is looked at without following a link.
func (c Cleaner) Check(ctx context.Context, it Item) Verdict {
	switch it.Kind {
	case KindBox:
		return c.checkBox(ctx, it)
	case KindImage:
		return c.checkImage(ctx, it)
	case KindDir:
		return c.checkDir(it)
	case KindFile:
		return c.checkFile(it)
	}
	return Verdict{Item: it, State: Kept, Why: "inside box " + it.Box + ": it goes with the box"}
}

// notFound says whether an engine's error means the object does not exist.
func notFound(stderr string) bool {
	s := strings.ToLower(stderr)
	return strings.Contains(s, "no such container") || strings.Contains(s, "no such object") ||
		strings.Contains(s, "no such image") || strings.Contains(s, "image not known") || strings.Contains(s, "not found")
}

// engineTrouble words an engine command that failed for another reason.
func engineTrouble(engine string, stderr string, err error) string {
	msg := text.Printable(strings.TrimSpace(stderr), 200)
	if msg == "" {
		msg = text.Printable(err.Error(), 200)
	}
	if strings.HasPrefix(engine, "sudo-") && strings.Contains(msg, "password") {
		return "sudo asks for a password (run sudo -v first): " + msg
	}
	return "could not ask " + strings.Join(EngineCommand(engine), " ") + ": " + msg
}

func (c Cleaner) checkBox(ctx context.Context, it Item) Verdict {
	v := Verdict{Item: it}
	eng := EngineCommand(it.Engine)
	if eng == nil {
		v.State, v.Why = Kept, "unknown engine "+it.Engine
		return v
	}
	out, errOut, err := c.run(ctx, append(eng, "container", "inspect", "--size", "--format",
		`{{index .Config.Labels "`+OwnerLabel+`"}}|{{.SizeRw}}`, it.Name))
	switch {
	case err != nil && notFound(errOut):
		v.State, v.Why = Gone, "no box "+it.Name+" any more"
		return v
	case err != nil:
		v.State, v.Why = Kept, engineTrouble(it.Engine, errOut, err)
		return v
	}
	label, size, _ := strings.Cut(strings.TrimSpace(out), "|")
	if n, err := strconv.ParseInt(size, 10, 64); err == nil && n >= 0 {
		v.Size = &n
	}
	switch {
	case label == "":
		v.State, v.Why, v.Foreign = Kept, "box "+it.Name+" has no "+OwnerLabel+" label now: it was made again, not by haloforge", true
	case label != it.Owner:
		v.State, v.Why, v.Foreign = Kept, "box "+it.Name+" carries another owner label ("+text.Printable(label, 80)+"): another haloforge record or run made it", true
	default:
		v.State = Remove
		v.setCommand("rm", "--force", it.Name)
	}
	return v
}

// imageInfo is what an engine says of an image.
type imageInfo struct {
	ID    string
	Size  int64
	Owner string
	Tags  []string
}

func (c Cleaner) inspectImage(ctx context.Context, engine, ref string) (imageInfo, bool, string) {
	out, errOut, err := c.run(ctx, append(EngineCommand(engine), "image", "inspect", "--format",
		`{{.Id}}|{{.Size}}|{{index .Labels "`+OwnerLabel+`"}}|{{json .RepoTags}}`, ref))
	if err != nil {
		if notFound(errOut) {
			return imageInfo{}, false, ""
		}
		return imageInfo{}, false, engineTrouble(engine, errOut, err)
	}
	f := strings.SplitN(strings.TrimSpace(out), "|", 4)
	if len(f) != 4 {
		return imageInfo{}, false, "the engine's answer is not an image: " + text.Printable(out, 120)
	}
	var info imageInfo
	info.ID = strings.TrimPrefix(f[0], "sha256:")
	info.Size, _ = strconv.ParseInt(f[1], 10, 64)
	info.Owner = f[2]
	_ = json.Unmarshal([]byte(f[3]), &info.Tags)
	return info, true, ""
}

func (c Cleaner) checkImage(ctx context.Context, it Item) Verdict {
	v := Verdict{Item: it}
	if EngineCommand(it.Engine) == nil {
		v.State, v.Why = Kept, "unknown engine "+it.Engine
		return v
	}
	byID, found, trouble := c.inspectImage(ctx, it.Engine, it.ImageID)
	switch {
	case trouble != "":
		v.State, v.Why = Kept, trouble
		return v
	case !found:
		v.State, v.Why = Gone, "image "+short(it.ImageID)+" is not there any more"
		return v
	}
	size := byID.Size
	v.Size = &size
	if it.How == Built && byID.Owner != it.Owner {
		v.State, v.Why, v.Foreign = Kept, "image "+short(it.ImageID)+" does not carry this record's "+OwnerLabel+" label", true
		return v
	}
	byRef, refFound, _ := c.inspectImage(ctx, it.Engine, it.Name)
	ours := refFound && byRef.ID == it.ImageID
	others := 0
	for _, t := range byID.Tags {
		if !sameRef(t, it.Name) {
			others++
		}
	}
	switch {
	case ours && others == 0:
		v.State = Remove
		v.setCommand("rmi", it.Name)
	case ours:
		v.State = Remove
		v.setCommand("rmi", it.Name)
		v.Why = "only the name: the image stays, " + text.Plural(others, "other name") + " hold it"
		zero := int64(0)
		v.Size = &zero
	case len(byID.Tags) == 0:
		// Its name now means another image; this one, nameless, is what
		// haloforge pulled or built.
		v.State = Remove
		v.setCommand("rmi", it.ImageID)
	default:
		v.State, v.Why, v.Foreign = Kept, it.Name+" is another image now, and other names hold "+short(it.ImageID), true
	}
	return v
}

// sameRef says whether two image references name the same thing, up to
// the implied docker.io/library/ and :latest (as podman records them).
func sameRef(a, b string) bool { return normRef(a) == normRef(b) }

func normRef(ref string) string {
	first, _, _ := strings.Cut(ref, "/")
	switch {
	case !strings.Contains(ref, "/"):
		ref = "docker.io/library/" + ref
	case !strings.ContainsAny(first, ".:") && first != "localhost":
		ref = "docker.io/" + ref
	}
	if last := ref[strings.LastIndex(ref, "/")+1:]; !strings.Contains(last, ":") && !strings.Contains(ref, "@") {
		ref += ":latest"
	}
	return ref
}

// setCommand is the engine command that removes v's item.
func (v *Verdict) setCommand(args ...string) {
	v.args = args
	v.Command = humanCommand(v.Item.Engine, args...)
}

func short(id string) string { return id[:min(len(id), 12)] }

// humanCommand is an engine command as a person types it (sudo without -n).
func humanCommand(engine string, args ...string) []string {
	eng := EngineCommand(engine)
	if len(eng) > 1 && eng[0] == "sudo" {
		eng = []string{"sudo", eng[len(eng)-1]}
	}
	return append(eng, args...)
}

// lstat is what a path item is now, itself; ok false with the verdict
// when it is gone or cannot be told.
func lstat(it Item) (fi fs.FileInfo, v Verdict, ok bool) {
	v = Verdict{Item: it}
	fi, err := os.Lstat(it.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		v.State, v.Why = Gone, it.Path+" is not there any more"
		return nil, v, false
	case err != nil:
		v.State, v.Why = Kept, err.Error()
		return nil, v, false
	}
	return fi, v, true
}

func (c Cleaner) checkDir(it Item) Verdict {
	fi, v, ok := lstat(it)
	switch {
	case !ok:
		return v
	case !fi.IsDir():
		v.State, v.Why, v.Foreign = Kept, it.Path+" is "+safefile.Kind(fi.Mode())+" now, not the directory haloforge made", true
		return v
	case it.Owner == StateDirOwner && !InStateDir(it.Path, c.StateDir):
		v.State, v.Why = Kept, it.Path+" is not inside the state dir "+c.StateDir
		return v
	case linked(it, c.StateDir):
		v.State, v.Why, v.Foreign = Kept, "a link is on the way to "+it.Path+" now", true
		return v
	}
	if it.Owner != StateDirOwner {
		m, err := readMarker(it.Path)
		if err != nil || m != it.Owner {
			v.State, v.Why, v.Foreign = Kept, it.Path+" no longer holds haloforge's marker ("+Marker+") of this record", true
			return v
		}
	}
	n := DiskUsage(it.Path)
	v.Size, v.State = &n, Remove
	return v
}

func (c Cleaner) checkFile(it Item) Verdict {
	fi, v, ok := lstat(it)
	switch {
	case !ok:
		return v
	case !fi.Mode().IsRegular():
		v.State, v.Why, v.Foreign = Kept, it.Path+" is "+safefile.Kind(fi.Mode())+" now", true
		return v
	case linked(it, c.StateDir):
		v.State, v.Why, v.Foreign = Kept, "a link is on the way to "+it.Path+" now", true
		return v
	}
	if it.Identity == nil || *identity(fi) != *it.Identity {
		v.State, v.Why, v.Foreign = Kept, it.Path+" changed since haloforge wrote it (another file, or written since)", true
		return v
	}
	n := fi.Size()
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		n = st.Blocks * 512
	}
	v.Size, v.State = &n, Remove
	return v
}

// Remove removes what v says is haloforge's, after checking it once more
// (the state may have changed since the list was shown). It returns the
// verdict it acted on.
func (c Cleaner) Remove(ctx context.Context, v Verdict) (Verdict, error) {
	v = c.Check(ctx, v.Item)
	if v.State != Remove {
		return v, nil
	}
	it := v.Item
	switch it.Kind {
	case KindBox, KindImage:
		_, errOut, err := c.run(ctx, append(EngineCommand(it.Engine), v.args...))
		if err != nil {
			return v, fmt.Errorf("%s: %s", strings.Join(v.Command, " "), engineTrouble(it.Engine, errOut, err))
		}
	case KindDir:
		t, name := c.tree(it.Path)
		if err := t.RemoveAll(name); err != nil {
			return v, err
		}
	case KindFile:
		t, name := c.tree(it.Path)
		if err := t.Remove(name); err != nil {
			return v, err
		}
	}
	return v, nil
}

// tree is where a path item is removed from, through no link: the state
// dir for what is inside it, else the item's own directory (which the
// check found reached through no link, or the item's marker or identity
// vouches for it).
func (c Cleaner) tree(p string) (safefile.Tree, string) {
	if c.StateDir != "" && InStateDir(p, c.StateDir) {
		if rel, err := filepath.Rel(filepath.Clean(c.StateDir), p); err == nil {
			return safefile.Tree(c.StateDir), filepath.ToSlash(rel)
		}
	}
	return safefile.Tree(filepath.Dir(p)), filepath.Base(p)
}

// maxWalk bounds DiskUsage: beyond it the size is a floor.
const maxWalk = 2_000_000

// DiskUsage is how much disk dir takes, as du counts it (allocated blocks),
// not following links and not crossing into another file system.
func DiskUsage(dir string) int64 {
	root, err := os.Lstat(dir)
	if err != nil {
		return 0
	}
	var dev uint64
	if st, ok := root.Sys().(*syscall.Stat_t); ok {
		dev = uint64(st.Dev)
	}
	var total int64
	n := 0
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		n++
		if n > maxWalk {
			return filepath.SkipAll
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			if d.IsDir() && uint64(st.Dev) != dev {
				return filepath.SkipDir
			}
			total += st.Blocks * 512
		}
		return nil
	})
	return total
}

// Measure updates the sizes of items that are on this machine's disk
// (directories and files) now; boxes and images keep theirs (measureEngine
// asks their engine).
func Measure(items []Item, at time.Time) {
	for i := range items {
		it := &items[i]
		var n int64
		switch it.Kind {
		case KindDir:
			if fi, err := os.Lstat(it.Path); err != nil || !fi.IsDir() {
				continue
			}
			n = DiskUsage(it.Path)
		case KindFile:
			fi, err := os.Lstat(it.Path)
			if err != nil || !fi.Mode().IsRegular() {
				continue
			}
			n = fi.Size()
		default:
			continue
		}
		it.SizeBytes, it.Measured = &n, at
	}
}

// MeasureEngine asks the engines for the sizes of the boxes and images
// among items, within ctx; an item whose engine does not answer keeps the
// size it had.
func (c Cleaner) MeasureEngine(ctx context.Context, items []Item, at time.Time) {
	for i := range items {
		it := &items[i]
		if it.Kind != KindBox && it.Kind != KindImage {
			continue
		}
		if ctx.Err() != nil {
			return
		}
		v := c.Check(ctx, *it)
		if v.Size != nil && v.State == Remove {
			it.SizeBytes, it.Measured = v.Size, at
		}
	}
}
