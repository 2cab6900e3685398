package haloforge

import (
	"bufio"
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// ledgerRow is one fact of scripts/SOURCES.md.
type ledgerRow struct {
	fact, kind, source, checked string
	line                        int
}

var (
	reLedgerRow = regexp.MustCompile("^\\| `([^`]+)` \\| ([^|]+) \\| (.+) \\| ([0-9]{4}-[0-9]{2}-[0-9]{2}) \\|$")
	reURL       = regexp.MustCompile(`https?://[A-Za-z0-9._~:/?#@!&*+,;=%-]+`)
	reImageRef  = regexp.MustCompile(`(?:docker\.io|registry\.fedoraproject\.org|quay\.io|ghcr\.io)/[a-z0-9._/-]+(?::[A-Za-z0-9_.-]+)?(?:@sha256:[0-9a-f]{64})?`)
)

// ownURLPrefix is this project's own address (image source labels): not an upstream fact.
const ownURLPrefix = "https://github.com/haloforge/haloforge/"

func readLedger(t *testing.T) []ledgerRow {
	t.Helper()
	data, err := os.ReadFile("scripts/SOURCES.md")
	if err != nil {
		t.Fatal(err)
	}
	var rows []ledgerRow
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		m := reLedgerRow.FindStringSubmatch(line)
		if m == nil {
			t.Errorf("scripts/SOURCES.md:%d: a fact row needs `fact` | kind | source | YYYY-MM-DD", n)
			continue
		}
		rows = append(rows, ledgerRow{fact: m[1], kind: strings.TrimSpace(m[2]), source: strings.TrimSpace(m[3]), checked: m[4], line: n})
	}
	if len(rows) == 0 {
		t.Fatal("scripts/SOURCES.md has no fact rows")
	}
	return rows
}

// reliedOn is every embedded file whose content the scripts rely on: the step scripts and
// their data (not the tests, not the READMEs), the container definitions, versions.env and
// the pin sets `pins use` writes into it; and the release configuration (.goreleaser.yaml,
// the Makefile).
func reliedOn(t *testing.T) map[string]string {
	t.Helper()
	files := map[string]string{"versions.env": string(VersionsEnv)}
	for _, tree := range []fs.FS{Scripts, Toolbox} {
		err := fs.WalkDir(tree, ".", func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if path == "scripts/tests" {
					return fs.SkipDir
				}
				return nil
			}
			if strings.HasSuffix(path, ".md") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			data, err := fs.ReadFile(tree, path)
			if err != nil {
				return err
			}
			files[path] = string(data)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// The known-good pin sets carry pins too (`haloforge pins use` writes them into
	// versions.env); their `# evidence:` header lines are the sources themselves.
	setFiles, err := filepath.Glob("pins/sets/*.env")
	if err != nil || len(setFiles) == 0 {
		t.Fatalf("pins/sets: %v", err)
	}
	for _, path := range setFiles {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var kept []string
		for _, line := range strings.Split(string(data), "\n") {
			if !strings.HasPrefix(line, "# evidence:") {
				kept = append(kept, line)
			}
		}
		files[path] = strings.Join(kept, "\n")
	}
	// The release configuration relies on packaging layouts and the release tool's behaviour.
	for _, path := range []string{".goreleaser.yaml", "Makefile"} {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		files[path] = string(data)
	}
	// The per-node commands of haloforge cluster are built in Go (steps/cluster), and so
	// are the requests of haloforge verify (steps/verify): the engines' flags, variables
	// and API fields they rely on are upstream facts too.
	var gos []string
	for _, dir := range []string{"steps/cluster", "steps/verify"} {
		found, err := filepath.Glob(dir + "/*.go")
		if err != nil || len(found) == 0 {
			t.Fatalf("%s: %v", dir, err)
		}
		gos = append(gos, found...)
	}
	for _, path := range gos {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		files[path] = string(data)
	}
	return files
}

// externalRefs extracts the URLs and registry image references a text uses.
func externalRefs(text string) []string {
	var out []string
	for _, u := range reURL.FindAllString(text, -1) {
		u = strings.TrimRight(u, ".,;:")
		if strings.HasPrefix(u+"/", ownURLPrefix) || strings.Contains(u, "127.0.0.1") || strings.Contains(u, "localhost") {
			continue
		}
		out = append(out, u)
	}
	for _, ref := range reImageRef.FindAllString(text, -1) {
		ref = strings.TrimRight(ref, ".,;:")
		if strings.HasSuffix(ref, "/") {
			continue // a prefix such as docker.io/library/ that the code completes
		}
		out = append(out, ref)
	}
	return out
}

// TestSourcesLedgerCoversEveryExternalReference: a script, a Containerfile or versions.env
// that uses a URL or an image the ledger does not list fails here, and so does a ledger
// entry nothing uses.
func TestSourcesLedgerCoversEveryExternalReference(t *testing.T) {
	rows := readLedger(t)
	files := reliedOn(t)
	known := map[string]bool{}
	for _, r := range rows {
		if known[r.fact] {
			t.Errorf("scripts/SOURCES.md:%d: %s is listed twice", r.line, r.fact)
		}
		known[r.fact] = true
	}
	var paths []string
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		for _, ref := range externalRefs(files[p]) {
			if !known[ref] {
				t.Errorf("%s uses %s, which scripts/SOURCES.md does not list with its upstream source", p, ref)
			}
		}
	}
	for _, r := range rows {
		used := false
		for _, p := range paths {
			if strings.Contains(files[p], r.fact) {
				used = true
				break
			}
		}
		if !used {
			t.Errorf("scripts/SOURCES.md:%d: %s is used by no script, Containerfile or versions.env: remove it", r.line, r.fact)
		}
	}
}

func TestExternalRefsExtraction(t *testing.T) {
	got := externalRefs(`pip install --index-url "https://repo.amd.com/rocm/whl-multi-arch/" x
FROM docker.io/library/ubuntu:24.04
curl http://127.0.0.1:$PORT/api
LABEL src="https://github.com/haloforge/haloforge/blob/main/x"
ref=docker.io/library/$ref
img=registry.fedoraproject.org/fedora:43.`)
	want := []string{"https://repo.amd.com/rocm/whl-multi-arch/", "docker.io/library/ubuntu:24.04", "registry.fedoraproject.org/fedora:43"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("externalRefs = %q, want %q", got, want)
	}
}

// pipInstalls returns each `pip install` command of a shell script or Containerfile, its
// continuation lines joined, cut at the end of the command (&&, ||, ;, |).
func pipInstalls(text string) []string {
	joined := strings.ReplaceAll(text, "\\\n", " ")
	var out []string
	for _, line := range strings.Split(joined, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "#") || strings.HasPrefix(trimmed, "log_") || strings.HasPrefix(trimmed, "printf") || strings.HasPrefix(trimmed, "echo") {
			continue // a comment or a message that shows a command, not one that runs
		}
		for {
			i := strings.Index(line, "pip install")
			if i < 0 {
				break
			}
			cmd := line[i+len("pip install"):]
			end := len(cmd)
			for _, sep := range []string{"&&", "||", ";", " | "} {
				if j := strings.Index(cmd, sep); j >= 0 && j < end {
					end = j
				}
			}
			out = append(out, strings.TrimSpace(cmd[:end]))
			line = cmd[end:]
		}
	}
	return out
}

// unpinnedArgs lists the requirement arguments of one pip install that carry no exact
// version: a name without ==, or -r FILE / a computed list without haloforge's constraints.
func unpinnedArgs(args string, pinned map[string]string) []string {
	fields := strings.Fields(args)
	withOptions := map[string]bool{"--index-url": true, "--extra-index-url": true, "--constraint": true, "-c": true,
		"--retries": true, "--timeout": true, "-w": true, "--find-links": true, "-r": true, "--requirement": true}
	constrained := strings.Contains(args, "HF_PYTHON_PINS") || strings.Contains(args, "python-pins.txt")
	noDeps := strings.Contains(args, "--no-deps") // exactly the named files, nothing resolved
	var bad []string
	for i := 0; i < len(fields); i++ {
		f := strings.Trim(fields[i], `"'`)
		if strings.HasPrefix(f, "<") { // a dry run's placeholder, "<… of $src>"
			for i < len(fields) && !strings.HasSuffix(strings.Trim(fields[i], `"'`), ">") {
				i++
			}
			continue
		}
		switch {
		case f == "-r" || f == "--requirement":
			if !constrained {
				bad = append(bad, "-r "+strings.Trim(fields[min(i+1, len(fields)-1)], `"'`)+" without --constraint python-pins.txt")
			}
			i++
		case withOptions[f]:
			i++
		case strings.HasPrefix(f, "-"):
		case strings.Contains(f, "=="):
			name := strings.ToLower(strings.SplitN(f, "==", 2)[0])
			if want, ok := pinned[name]; ok && !strings.Contains(f, "$") && f != name+"=="+want {
				bad = append(bad, f+" differs from python-pins.txt "+name+"=="+want)
			}
		case strings.HasPrefix(f, "/") || strings.HasPrefix(f, "./") || strings.HasSuffix(f, ".whl") || strings.HasPrefix(f, "$"):
			switch {
			case constrained || noDeps:
			case strings.Contains(f, "[@]"):
				bad = append(bad, f+" (a computed list) without --constraint python-pins.txt")
			case strings.HasSuffix(f, ".whl"):
				// pip resolves a local wheel's dependencies as freely as a name's.
				bad = append(bad, f+" (a local wheel, its dependencies resolved) without --constraint python-pins.txt or --no-deps")
			}
		default:
			bad = append(bad, f)
		}
	}
	return bad
}

func readPythonPins(t *testing.T) map[string]string {
	t.Helper()
	data, err := fs.ReadFile(Scripts, "scripts/lib/python-pins.txt")
	if err != nil {
		t.Fatal(err)
	}
	pins := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(strings.SplitN(line, "#", 2)[0])
		if line == "" {
			continue
		}
		name, version, ok := strings.Cut(line, "==")
		if !ok || version == "" {
			t.Fatalf("python-pins.txt: %q is not NAME==VERSION", line)
		}
		pins[strings.ToLower(name)] = version
	}
	return pins
}

// TestEveryInstallIsPinned: no script or Containerfile installs a
// Python package without an exact version; upstream requirement files and computed lists
// go through --constraint python-pins.txt, and literal pins of the build tools agree with it.
func TestEveryInstallIsPinned(t *testing.T) {
	pinned := readPythonPins(t)
	files := reliedOn(t)
	var paths []string
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	count := 0
	for _, p := range paths {
		if !strings.HasSuffix(p, ".sh") && !strings.Contains(p, "Containerfile") && !strings.Contains(p, "Dockerfile") {
			continue
		}
		for _, cmd := range pipInstalls(files[p]) {
			count++
			if bad := unpinnedArgs(cmd, pinned); len(bad) > 0 {
				t.Errorf("%s: pip install %s: unpinned: %s", p, cmd, strings.Join(bad, "; "))
			}
		}
	}
	if count < 10 {
		t.Fatalf("found only %d pip install commands: the scan is broken", count)
	}
}

func TestUnpinnedArgsCatches(t *testing.T) {
	pins := map[string]string{"setuptools": "79.0.1", "pip": "25.2"}
	for _, tt := range []struct{ args, want string }{
		{"--upgrade pip setuptools wheel packaging", "pip setuptools wheel packaging"},
		{`--no-cache-dir pip==25.2 setuptools==79.0.1`, ""},
		{`setuptools==80.0.0`, "setuptools==80.0.0 differs from python-pins.txt setuptools==79.0.1"},
		{`-r /tmp/build-requirements.txt`, "-r /tmp/build-requirements.txt without --constraint python-pins.txt"},
		{`--constraint "$HF_PYTHON_PINS" -r "$reqs"`, ""},
		{`--index-url "$X" "torch==${TORCH_VERSION}" /wheels/vllm-*.whl`, "/wheels/vllm-*.whl (a local wheel, its dependencies resolved) without --constraint python-pins.txt or --no-deps"},
		{`--constraint /haloforge/python-pins.txt /wheels/torch-*.whl`, ""},
		{`--no-deps /wheels/torchvision-*.whl`, ""},
		{`"${specs[@]}"`, `${specs[@]} (a computed list) without --constraint python-pins.txt`},
	} {
		if got := strings.Join(unpinnedArgs(tt.args, pins), "; "); got != strings.ReplaceAll(tt.want, " pip setuptools", "; pip; setuptools") && !(tt.want == "pip setuptools wheel packaging" && got == "pip; setuptools; wheel; packaging") {
			t.Errorf("unpinnedArgs(%q) = %q, want %q", tt.args, got, tt.want)
		}
	}
}
