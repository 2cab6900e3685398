package hostfix

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/haloforge/haloforge/internal/safefile"
)

// The backup manifest's format marker: --rollback restores only what a
// manifest with this marker, this version and matching checksums lists.
const (
	manifestFormat  = "haloforge-host-backup"
	ManifestVersion = 1
	manifestName    = "manifest.json"
	backupsDirName  = "host-backups"
	maxManifestSize = 1 << 20
)

// File roles in a manifest.
const (
	RoleSource    = "source"    // a file haloforge (or grubby) edits: restored byte for byte
	RoleGenerated = "generated" // a file a tool writes: regenerated (or edited back), then compared
	// RoleSideEffect is a copy a tool keeps by itself (shadow-utils' /etc/group-
	// and /etc/gshadow-): restored byte for byte after the tools ran.
	RoleSideEffect = "side-effect"
)

// groupFiles are what usermod and gpasswd rewrite; their "-" copies are the
// side effects.
var (
	groupFiles       = []string{"/etc/group", "/etc/gshadow"}
	groupSideEffects = []string{"/etc/group-", "/etc/gshadow-"}
)

// Manifest records one --apply (or the state before a --rollback): every
// file touched, with checksums and metadata, what ran, and the command lines
// before, so that --rollback can put everything back and prove it did.
type Manifest struct {
	Format      string         `json:"format"`
	Version     int            `json:"version"`
	CreatedBy   string         `json:"created_by"`
	Created     string         `json:"created"`
	Kind        string         `json:"kind"`         // apply, or rollback (the state a rollback replaced)
	Of          string         `json:"of,omitempty"` // for rollback: the backup it restored
	Root        string         `json:"root"`
	State       string         `json:"state"` // started, done, failed, interrupted (a signal stopped it)
	Bootloader  string         `json:"bootloader"`
	Tool        string         `json:"tool"`
	ProcCmdline string         `json:"proc_cmdline"` // /proc/cmdline when it ran
	BootCmdline string         `json:"boot_cmdline"` // what the boot configuration gave before
	Files       []ManifestFile `json:"files"`
	Groups      []GroupChange  `json:"groups_added,omitempty"`
	Kargs       *KargsChange   `json:"kargs,omitempty"`
	Commands    []string       `json:"commands"`
}

// ManifestFile is one file before (and after) the change.
type ManifestFile struct {
	Path    string `json:"path"`
	Role    string `json:"role"`
	Existed bool   `json:"existed"`
	SHA256  string `json:"sha256,omitempty"`
	Size    int64  `json:"size"`
	Mode    string `json:"mode,omitempty"`
	UID     int    `json:"uid"`
	GID     int    `json:"gid"`
	Backup  string `json:"backup,omitempty"` // the copy, relative to the backup directory
	After   string `json:"after_sha256,omitempty"`
}

// KargsChange is what rpm-ostree kargs appended and deleted.
type KargsChange struct {
	Appended []string `json:"appended"`
	Deleted  []string `json:"deleted"`
}

var (
	backupNameRe = regexp.MustCompile(`^files/[0-9]{4}$`)
	sha256Re     = regexp.MustCompile(`^[0-9a-f]{64}$`)
	modeRe       = regexp.MustCompile(`^0[0-7]{3}$`)
	backupDirRe  = regexp.MustCompile(`^[0-9]{8}T[0-9]{6}Z(-[0-9]{1,3})?$`)
)

func sum(data []byte) string {
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:])
}

// allowedBackupPath is true for the files haloforge may touch.
func allowedBackupPath(p string) bool {
	if p != path.Clean(p) || !path.IsAbs(p) {
		return false
	}
	for _, g := range slices.Concat(configGlobs, generatedGlobs, groupFiles, groupSideEffects) {
		if ok, _ := path.Match(g, p); ok {
			return true
		}
	}
	return false
}

// ParseManifest reads a manifest strictly.
func ParseManifest(r io.Reader) (*Manifest, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxManifestSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxManifestSize {
		return nil, errors.New("manifest larger than 1 MiB")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var m Manifest
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("manifest: more than one JSON value")
	}
	if err := m.validate(); err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	return &m, nil
}

func (m *Manifest) validate() error {
	if m.Format != manifestFormat || m.Version != ManifestVersion {
		return errors.New("not a haloforge host backup")
	}
	if !slices.Contains([]string{"apply", "rollback"}, m.Kind) || !slices.Contains([]string{"started", "done", "failed", "interrupted"}, m.State) {
		return errors.New("unknown kind or state")
	}
	if !slices.Contains(knownBoot, m.Bootloader) || !slices.Contains(knownTools, m.Tool) {
		return errors.New("unknown bootloader")
	}
	if m.Of != "" && !backupDirRe.MatchString(m.Of) {
		return errors.New("bad backup reference")
	}
	if len(m.Files) > maxEvidenceFiles {
		return errors.New("too many files")
	}
	seen := map[string]bool{}
	for _, f := range m.Files {
		if !allowedBackupPath(f.Path) || seen[f.Path] {
			return fmt.Errorf("file %q is not one haloforge touches", printable(f.Path))
		}
		seen[f.Path] = true
		if f.Role != RoleSource && f.Role != RoleGenerated && f.Role != RoleSideEffect {
			return fmt.Errorf("%s: unknown role", f.Path)
		}
		if f.Existed {
			if !sha256Re.MatchString(f.SHA256) || !modeRe.MatchString(f.Mode) || !backupNameRe.MatchString(f.Backup) || f.Size < 0 || f.Size > maxEvidenceFile {
				return fmt.Errorf("%s: bad checksum, mode or backup name", f.Path)
			}
		} else if f.SHA256 != "" || f.Backup != "" {
			return fmt.Errorf("%s: a file that did not exist has no backup", f.Path)
		}
		if f.After != "" && !sha256Re.MatchString(f.After) {
			return fmt.Errorf("%s: bad checksum", f.Path)
		}
		if f.UID < 0 || f.GID < 0 || f.UID > 1<<31 || f.GID > 1<<31 {
			return fmt.Errorf("%s: bad owner", f.Path)
		}
	}
	for _, g := range m.Groups {
		if !userRe.MatchString(g.User) || g.User == "root" {
			return fmt.Errorf("user %q not allowed", printable(g.User))
		}
		if err := checkGroups(g.Groups, false); err != nil {
			return err
		}
	}
	if m.Kargs != nil {
		for _, a := range append(append([]string{}, m.Kargs.Appended...), m.Kargs.Deleted...) {
			k, v, _ := strings.Cut(a, "=")
			if err := ValidateArg(KernelArg{Op: OpRemove, Key: k, Value: v}); err != nil {
				return fmt.Errorf("kargs: %w", err)
			}
		}
	}
	var texts []string
	texts = append(texts, m.CreatedBy, m.Created, m.Root, m.ProcCmdline, m.BootCmdline)
	texts = append(texts, m.Commands...)
	if len(m.Commands) > maxListLength {
		return errors.New("too many commands")
	}
	for _, t := range texts {
		if err := plainText(t, false); err != nil {
			return err
		}
	}
	return nil
}

// backupsDir is where --apply keeps its backups.
func backupsDir(stateDir string) string { return filepath.Join(stateDir, backupsDirName) }

// newBackupDir makes a fresh, private backup directory named by the time,
// in the state dir, through no link (safefile.Tree): a host-backups/
// planted as a link would take copies of /etc files elsewhere.
func newBackupDir(stateDir string, now time.Time) (string, error) {
	state := safefile.Tree(stateDir)
	if err := state.MkdirAll(backupsDirName, 0o700); err != nil {
		return "", fmt.Errorf("backup: %w", err)
	}
	base := now.UTC().Format("20060102T150405Z")
	for i := 0; i < 1000; i++ {
		name := base
		if i > 0 {
			name = fmt.Sprintf("%s-%d", base, i)
		}
		dir := backupsDirName + "/" + name
		if err := state.Mkdir(dir, 0o700); err == nil {
			if err := state.Mkdir(dir+"/files", 0o700); err != nil {
				return "", fmt.Errorf("backup: %w", err)
			}
			return state.Path(dir), nil
		} else if !errors.Is(err, os.ErrExist) {
			return "", fmt.Errorf("backup: %w", err)
		}
	}
	return "", errors.New("backup: too many backups in the same second")
}

// writeManifest writes the manifest atomically.
func writeManifest(dir string, m *Manifest) error {
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return safefile.Tree(dir).WriteFile(manifestName, append(data, '\n'), 0o600)
}

// readBackupCopy reads a backed-up copy and checks it against the
// manifest's checksum.
func readBackupCopy(dir string, mf ManifestFile) ([]byte, error) {
	data, err := safefile.Tree(dir).ReadFile(mf.Backup, maxEvidenceFile)
	if err != nil {
		return nil, fmt.Errorf("%s: backup of %s: %w", dir, mf.Path, err)
	}
	if sum(data) != mf.SHA256 {
		return nil, fmt.Errorf("%s: the backup of %s does not match its checksum: refusing to restore it", dir, mf.Path)
	}
	return data, nil
}

// LoadBackup reads and checks a backup directory: a manifest haloforge
// wrote, and every backed-up copy matching its checksum, all read through
// no link inside it.
func LoadBackup(dir string) (*Manifest, error) {
	f, _, err := safefile.Tree(dir).Open(manifestName)
	if err != nil {
		return nil, fmt.Errorf("%s: no haloforge backup manifest: %w", dir, err)
	}
	defer f.Close()
	m, err := ParseManifest(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	for _, mf := range m.Files {
		if !mf.Existed {
			continue
		}
		if _, err := readBackupCopy(dir, mf); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// compareBackupNames orders by time, then by the -N suffix numerically.
func compareBackupNames(a, b string) int {
	ta, na := splitBackupName(a)
	tb, nb := splitBackupName(b)
	if c := strings.Compare(ta, tb); c != 0 {
		return c
	}
	return na - nb
}

func splitBackupName(s string) (string, int) {
	t, n, ok := strings.Cut(s, "-")
	if !ok {
		return t, 0
	}
	v := 0
	fmt.Sscanf(n, "%d", &v)
	return t, v
}
