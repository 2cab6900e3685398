package verify

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func sha(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func TestModelKey(t *testing.T) {
	state := t.TempDir()
	dir := t.TempDir()
	file := filepath.Join(dir, "m.gguf")
	if err := os.WriteFile(file, []byte("weights A"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Run("a file is its SHA-256", func(t *testing.T) {
		k, err := ModelKey(state, file)
		if err != nil || k != sha("weights A") {
			t.Fatalf("ModelKey = %q, %v; want %s", k, err, sha("weights A"))
		}
	})
	t.Run("the hash is remembered per path and stamp", func(t *testing.T) {
		files, _ := os.ReadDir(filepath.Join(state, "verify", "hashes"))
		if len(files) != 1 {
			t.Fatalf("%d remembered hashes, want 1", len(files))
		}
		// A remembered hash is used while the stamp is the same: a
		// planted one proves the file was not read again.
		abs, _ := filepath.Abs(file)
		st, _ := os.Stat(abs)
		rememberHash(state, abs, fileStamp(st), sha("planted"))
		if k, _ := ModelKey(state, file); k != sha("planted") {
			t.Fatalf("the remembered hash was not used: %s", k)
		}
	})
	t.Run("a changed file is hashed again", func(t *testing.T) {
		if err := os.WriteFile(file, []byte("weights B, longer"), 0o644); err != nil {
			t.Fatal(err)
		}
		if k, _ := ModelKey(state, file); k != sha("weights B, longer") {
			t.Fatalf("ModelKey after a change = %s", k)
		}
	})
	t.Run("a directory is its files' names and contents", func(t *testing.T) {
		d := filepath.Join(dir, "hf")
		os.MkdirAll(filepath.Join(d, ".cache"), 0o755)
		os.WriteFile(filepath.Join(d, "config.json"), []byte("{}"), 0o644)
		os.WriteFile(filepath.Join(d, "model.safetensors"), []byte("w"), 0o644)
		os.WriteFile(filepath.Join(d, ".cache", "x"), []byte("ignored"), 0o644)
		k1, err := ModelKey("", d)
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(d, ".cache", "x"), []byte("still ignored"), 0o644)
		k2, _ := ModelKey("", d)
		os.WriteFile(filepath.Join(d, "model.safetensors"), []byte("v"), 0o644)
		k3, _ := ModelKey("", d)
		if k1 != k2 || k1 == k3 || !isHex(k1, 64) {
			t.Fatalf("keys %s %s %s: want the first two equal, the third different", k1, k2, k3)
		}
	})
	t.Run("bad input", func(t *testing.T) {
		if _, err := ModelKey(state, filepath.Join(dir, "none.gguf")); err == nil || !strings.Contains(err.Error(), "no such file") {
			t.Fatalf("missing file: %v", err)
		}
		fifo := filepath.Join(dir, "fifo.gguf")
		if err := syscall.Mkfifo(fifo, 0o644); err == nil {
			if _, err := ModelKey(state, fifo); err == nil || !strings.Contains(err.Error(), "FIFO") {
				t.Fatalf("a FIFO: %v", err)
			}
		}
	})
}

func TestReferenceCache(t *testing.T) {
	state := t.TempDir()
	key := sha("weights")
	t.Run("none kept", func(t *testing.T) {
		if _, err := LookupReference(state, key); !errors.Is(err, ErrNoCachedReference) {
			t.Fatalf("LookupReference = %v, want ErrNoCachedReference", err)
		}
	})
	t.Run("stored and found", func(t *testing.T) {
		file, err := StoreReference(state, key, goodRecord())
		if err != nil {
			t.Fatal(err)
		}
		if want := CachedFile(state, key); file != want || !strings.HasPrefix(file, CacheDir(state)) {
			t.Fatalf("stored as %s, want %s", file, want)
		}
		c, err := LookupReference(state, key)
		if err != nil || c.File != file || c.Record.ModelKey != key || c.Record.Backend != "CPU" {
			t.Fatalf("LookupReference = %+v, %v", c, err)
		}
	})
	t.Run("another prompt set's key is another file", func(t *testing.T) {
		if !strings.HasSuffix(CachedFile(state, key), "-"+PromptSetKey()+".json") || len(PromptSetKey()) != 16 {
			t.Fatalf("cache file %s", CachedFile(state, key))
		}
	})
	t.Run("a reference kept under another model's key is refused", func(t *testing.T) {
		other := sha("other weights")
		data, _ := os.ReadFile(CachedFile(state, key))
		os.WriteFile(CachedFile(state, other), data, 0o644)
		if _, err := LookupReference(state, other); err == nil || !strings.Contains(err.Error(), "recorded for model") {
			t.Fatalf("a copied reference: %v", err)
		}
	})
	t.Run("a link in the cache is not followed", func(t *testing.T) {
		k := sha("linked")
		target := filepath.Join(t.TempDir(), "elsewhere.json")
		data, _ := os.ReadFile(CachedFile(state, key))
		os.WriteFile(target, data, 0o644)
		if err := os.Symlink(target, CachedFile(state, k)); err != nil {
			t.Fatal(err)
		}
		if _, err := LookupReference(state, k); err == nil || !strings.Contains(err.Error(), "symbolic link") {
			t.Fatalf("a link: %v", err)
		}
	})
	t.Run("a linked cache directory is refused for writing", func(t *testing.T) {
		s2 := t.TempDir()
		elsewhere := t.TempDir()
		os.MkdirAll(filepath.Join(s2, "verify"), 0o755)
		os.Symlink(elsewhere, filepath.Join(s2, "verify", "references"))
		if _, err := StoreReference(s2, key, goodRecord()); err == nil || !strings.Contains(err.Error(), "follows no link") {
			t.Fatalf("StoreReference through a link: %v", err)
		}
		if files, _ := os.ReadDir(elsewhere); len(files) != 0 {
			t.Fatalf("written through the link: %v", files)
		}
	})
	t.Run("degenerate answers are never kept", func(t *testing.T) {
		rec := goodRecord()
		rec.Answers[0] = answerOf("!", "!", "!", "!", "!", "!", "!", "!")
		rec.Answers[0].ID, rec.Answers[0].Endpoint, rec.Answers[0].Prompt, rec.Answers[0].MaxTokens = prompts[0].ID, prompts[0].Endpoint, prompts[0].Text, prompts[0].MaxTokens
		if _, err := StoreReference(state, sha("junk"), rec); err == nil {
			t.Fatal("a degenerate record was stored")
		}
	})
	t.Run("a key that is not a SHA-256", func(t *testing.T) {
		if _, err := StoreReference(state, "../../x", goodRecord()); err == nil {
			t.Fatal("a path as a key was accepted")
		}
	})
}

func TestLastVerdict(t *testing.T) {
	state := t.TempDir()
	if _, ok, err := ReadLast(state, "llamacpp-distro"); ok || err != nil {
		t.Fatalf("none kept: ok=%v err=%v", ok, err)
	}
	res := Result{Verdict: Wrong, Check: CheckReference, Reason: "prompt 1 \x1b[31m", Model: "m", URL: "http://x"}
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	if err := RecordLast(state, "llamacpp-distro", "serve", res, now); err != nil {
		t.Fatal(err)
	}
	l, ok, err := ReadLast(state, "llamacpp-distro")
	if err != nil || !ok || l.Verdict != Wrong || l.By != "serve" || !l.At.Equal(now) || strings.Contains(l.Line, "\x1b") {
		t.Fatalf("ReadLast = %+v, %v, %v", l, ok, err)
	}
	if !strings.HasPrefix(l.Line, "WRONG OUTPUT: ") {
		t.Errorf("line %q", l.Line)
	}
	if err := RecordLast(state, "no-such-track", "serve", res, now); err == nil {
		t.Error("an unknown track was kept")
	}
	os.WriteFile(LastFile(state, "ollama"), []byte(`{"schema":"haloforge/verify-last/v1","track":"ollama","verdict":"fine"}`), 0o644)
	if _, _, err := ReadLast(state, "ollama"); err == nil {
		t.Error("an unknown verdict was read")
	}
}

// FuzzReadLast: whatever the file of a track's last verdict holds, ReadLast
// returns an error or a verdict of the three with printable text: its
// fields reach bench's terminal output and report.
func FuzzReadLast(f *testing.F) {
	f.Add([]byte(`{"schema":"haloforge/verify-last/v1","track":"ollama","verdict":"wrong","line":"WRONG OUTPUT: \u001b[31m\u202e!!","by":"serve"}`))
	f.Add([]byte(`{"schema":"haloforge/verify-last/v1","track":"ollama","verdict":"fine"}`))
	f.Add([]byte(`{"schema":"haloforge/verify-last/v1","track":"other","verdict":"right"}`))
	f.Add([]byte("\x00\xff{"))
	state := f.TempDir()
	if err := os.MkdirAll(filepath.Dir(LastFile(state, "ollama")), 0o755); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(LastFile(state, "ollama"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		l, ok, err := ReadLast(state, "ollama")
		if err != nil || !ok {
			return
		}
		if l.Verdict != Right && l.Verdict != Wrong && l.Verdict != NotVerified {
			t.Fatalf("verdict %q read", l.Verdict)
		}
		for _, s := range []string{l.Line, l.Model, l.URL, l.By} {
			for _, r := range s {
				if r < 0x20 || (r >= 0x7f && r < 0xa0) || r == 0x202e {
					t.Fatalf("%q reached the reader", s)
				}
			}
		}
	})
}
