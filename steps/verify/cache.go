package verify

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/haloforge/haloforge/internal/safefile"
)

// A reference recorded by haloforge from a trusted backend is kept in the
// state dir, so that it is recorded once per model and prompt set and not
// on every verify:
//
//	<state>/verify/references/<model key>-<prompt set key>.json
//	<state>/verify/hashes/<sha256 of the model's path>.json
//
// The model key is the SHA-256 of the model file (of a model directory: of
// its files' names and contents), so a reference belongs to the exact
// weights it was recorded from; the prompt set key is a hash of the
// prompts themselves. Hashing a 20 GB GGUF takes seconds, so the hash is
// remembered per path with the file's size, modification time and inode,
// and computed again when any of them changes. Nothing there is followed
// through a symbolic link.

// Names of the references and the remembered hashes in the state dir
// (a safefile.Tree: nothing below it is followed through a link).
const (
	referencesName = "verify/references"
	hashesName     = "verify/hashes"
)

// CacheDir is the directory of the references haloforge recorded.
func CacheDir(stateDir string) string { return safefile.Tree(stateDir).Path(referencesName) }

// maxModelFiles bounds how many files of a model directory are hashed.
const maxModelFiles = 4096

// ModelKey is what identifies a model's weights: the SHA-256 of the file,
// or for a directory (a Hugging Face snapshot) of its regular files, their
// names and contents. The hash is remembered in the state dir (stateDir ""
// remembers nothing).
func ModelKey(stateDir, model string) (string, error) {
	abs, err := filepath.Abs(model)
	if err != nil {
		return "", err
	}
	st, err := os.Stat(abs)
	if err != nil {
		return "", fmt.Errorf("model %s: %w", model, safefile.Cause(err))
	}
	stamp := fileStamp(st)
	if st.IsDir() {
		stamp, err = dirStamp(abs)
		if err != nil {
			return "", err
		}
	} else if !st.Mode().IsRegular() {
		return "", fmt.Errorf("model %s: %w", model, &safefile.NotRegularError{Path: model, Mode: st.Mode()})
	}
	if k, ok := rememberedHash(stateDir, abs, stamp); ok {
		return k, nil
	}
	var sum string
	if st.IsDir() {
		sum, err = hashModelDir(abs)
	} else {
		sum, err = hashFile(abs)
	}
	if err != nil {
		return "", err
	}
	rememberHash(stateDir, abs, stamp, sum)
	return sum, nil
}

// fileStamp is what changes when a file's content may have: size,
// modification time, inode.
func fileStamp(st fs.FileInfo) string {
	ino := uint64(0)
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		ino = s.Ino
	}
	return fmt.Sprintf("%d:%d:%d", st.Size(), st.ModTime().UnixNano(), ino)
}

// modelFiles lists a model directory's regular files (following links, as
// a Hugging Face snapshot's files are links into its blobs), sorted.
func modelFiles(dir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != dir && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		if len(out) >= maxModelFiles {
			return fmt.Errorf("model %s: more than %d files", dir, maxModelFiles)
		}
		out = append(out, p)
		return nil
	})
	sort.Strings(out)
	return out, err
}

func dirStamp(dir string) (string, error) {
	files, err := modelFiles(dir)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	for _, f := range files {
		st, err := os.Stat(f)
		if err != nil {
			return "", fmt.Errorf("model file %s: %w", f, safefile.Cause(err))
		}
		fmt.Fprintf(h, "%s\x00%s\x00", strings.TrimPrefix(f, dir), fileStamp(st))
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func hashFile(path string) (string, error) {
	f, _, err := safefile.OpenRegular(path, safefile.Follow)
	if err != nil {
		return "", fmt.Errorf("model %s: %w", path, safefile.Cause(err))
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("model %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func hashModelDir(dir string) (string, error) {
	files, err := modelFiles(dir)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	for _, f := range files {
		if strings.HasPrefix(filepath.Base(f), ".") {
			continue
		}
		sum, err := hashFile(f)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s\x00%s\x00", strings.TrimPrefix(f, dir), sum)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// remembered is a model's hash as the state dir keeps it.
type remembered struct {
	Path   string `json:"path"`
	Stamp  string `json:"stamp"`
	SHA256 string `json:"sha256"`
}

// hashName is where the hash of the model at abs is remembered, in the
// state dir's tree.
func hashName(abs string) string {
	s := sha256.Sum256([]byte(abs))
	return hashesName + "/" + hex.EncodeToString(s[:16]) + ".json"
}

func rememberedHash(stateDir, abs, stamp string) (string, bool) {
	if stateDir == "" {
		return "", false
	}
	data, err := safefile.Tree(stateDir).ReadFile(hashName(abs), 4096)
	if err != nil {
		return "", false
	}
	var r remembered
	if json.Unmarshal(data, &r) != nil || r.Path != abs || r.Stamp != stamp || !isHex(r.SHA256, 64) {
		return "", false
	}
	return r.SHA256, true
}

func rememberHash(stateDir, abs, stamp, sum string) {
	if stateDir == "" {
		return
	}
	data, err := json.Marshal(remembered{Path: abs, Stamp: stamp, SHA256: sum})
	if err == nil {
		_ = safefile.Tree(stateDir).WriteFile(hashName(abs), append(data, '\n'), 0o644) // a cache: losing it costs a hash
	}
}

func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// PromptSetKey is a short hash of the prompt set as it is sent: a change
// to any prompt makes every cached reference another set's.
func PromptSetKey() string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%d\x00%d\x00", PromptSetID, TopK, Seed)
	for _, p := range prompts {
		fmt.Fprintf(h, "%s\x00%s\x00%s\x00%d\x00", p.ID, p.Endpoint, p.Text, p.MaxTokens)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// Cached is a reference of the cache: its file and what it holds.
type Cached struct {
	File   string
	Record *Record
}

// CachedFile is where the reference for a model key is kept.
func CachedFile(stateDir, key string) string { return safefile.Tree(stateDir).Path(cachedName(key)) }

func cachedName(key string) string {
	return referencesName + "/" + key + "-" + PromptSetKey() + ".json"
}

// ErrNoCachedReference says the cache holds no reference for a model.
var ErrNoCachedReference = errors.New("no reference recorded for this model")

// LookupReference finds the reference haloforge recorded for a model key:
// ErrNoCachedReference when there is none; another error when the file
// there cannot be used (it is not followed through a link, and it must
// parse as a reference).
func LookupReference(stateDir, key string) (Cached, error) {
	file := CachedFile(stateDir, key)
	data, err := safefile.Tree(stateDir).ReadFile(cachedName(key), MaxReferenceSize)
	if errors.Is(err, fs.ErrNotExist) {
		return Cached{}, ErrNoCachedReference
	}
	if err != nil {
		return Cached{}, &ReferenceError{File: file, Err: err}
	}
	rec, err := ParseReference(data)
	if err != nil {
		return Cached{}, &ReferenceError{File: file, Err: err}
	}
	if rec.ModelKey != "" && rec.ModelKey != key {
		return Cached{}, &ReferenceError{File: file, Err: fmt.Errorf("recorded for model %s, kept as %s", rec.ModelKey, key)}
	}
	return Cached{File: file, Record: rec}, nil
}

// StoreReference keeps rec as the reference of a model key (replacing the
// one kept before) and returns its file.
func StoreReference(stateDir, key string, rec *Record) (string, error) {
	if !isHex(key, 64) {
		return "", fmt.Errorf("model key %q: not a SHA-256", key)
	}
	r := *rec
	r.ModelKey = key
	data, err := MarshalReference(&r)
	if err != nil {
		return "", err
	}
	if err := safefile.Tree(stateDir).WriteFile(cachedName(key), data, 0o644); err != nil {
		return "", err
	}
	return CachedFile(stateDir, key), nil
}
