package upstream

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/haloforge/haloforge/pins"
)

// Methods: how a pin is checked.
const (
	methodIndex     = "simple-index" // the exact name==version on a PEP 691/503 index
	methodIndexRoot = "index-root"   // the index answers at all
	methodRegistry  = "oci-registry" // manifest HEAD on the OCI distribution API (go-containerregistry)
	methodGit       = "git"          // git ls-remote (and a fetch by SHA when needed)
	methodHub       = "hf-hub"       // the Hugging Face Hub's model API
	methodNone      = "none"         // nothing upstream to ask
)

// WheelRule says which wheels a version pin stands for, on which index.
// Packages may name {GPU}: one package per target of GPU_TARGET.
type WheelRule struct {
	Pin      string
	Index    []string // the pins that may hold the index URL, the first set one wins
	Packages []string
	Source   string // what the step script installs
}

// index is the URL the rule's packages are looked up on, and its pin.
func (w WheelRule) index(values map[string]string) (url, pin string) {
	for _, p := range w.Index {
		if v := values[p]; v != "" {
			return v, p
		}
	}
	return "", w.Index[len(w.Index)-1]
}

// WheelRules: TheRock's multi-arch packages (build_tools/packaging/python,
// ROCm/TheRock@89553ce3, 2026-08-22): the `rocm` meta package and its
// `device-gfxNNNN` extra `rocm-sdk-device-gfxNNNN`; torch and torchvision with
// their `device-gfxNNNN` extras `amd-torch-device-gfxNNNN` and
// `amd-torchvision-device-gfxNNNN` (RELEASES.md, rocm_whl_next_ownership.yaml);
// torchaudio has no device package. scripts/therock-toolbox/02-install-rocm.sh
// installs exactly these, torch's from TORCH_INDEX_URL when it is set (ROCm
// 10 puts torch on its own index), else from THEROCK_INDEX_URL.
// source-stable installs `torch==SOURCE_TORCH_VERSION`
// from PyTorch's own index (toolbox/Containerfile.source-stable).
var WheelRules = []WheelRule{
	{Pin: "ROCM_VERSION", Index: []string{"THEROCK_INDEX_URL"}, Packages: []string{"rocm", "rocm-sdk-device-{GPU}"}, Source: "rocm[libraries,devel,device-{GPU}]"},
	{Pin: "TORCH_VERSION", Index: torchIndexes, Packages: []string{"torch", "amd-torch-device-{GPU}"}, Source: "torch[device-{GPU}]"},
	{Pin: "TORCHVISION_VERSION", Index: torchIndexes, Packages: []string{"torchvision", "amd-torchvision-device-{GPU}"}, Source: "torchvision[device-{GPU}]"},
	{Pin: "TORCHAUDIO_VERSION", Index: torchIndexes, Packages: []string{"torchaudio"}, Source: "torchaudio (no device package)"},
	{Pin: "SOURCE_TORCH_VERSION", Index: []string{"SOURCE_TORCH_INDEX_URL"}, Packages: []string{"torch"}, Source: "torch (PyTorch's ROCm index)"},
}

var torchIndexes = []string{"TORCH_INDEX_URL", "THEROCK_INDEX_URL"}

// GitRepos maps a git ref pin to the pin holding its repository, or to a
// fixed URL where a Dockerfile names the repository itself.
var GitRepos = map[string]string{
	"AITER_REF":                  "AITER_REPO",
	"FLASH_ATTENTION_REF":        "FLASH_ATTENTION_REPO",
	"VLLM_REF":                   "VLLM_REPO",
	"SOURCE_VLLM_REF":            "VLLM_REPO",
	"SOURCE_FLASH_ATTENTION_REF": "FLASH_ATTENTION_REPO",
	"LLAMACPP_REF":               "LLAMACPP_REPO",
	"THEROCK_REF":                "THEROCK_REPO",
	"CK_REF":                     "CK_REPO",
	"GFX803_PYTORCH_REF":         "GFX803_PYTORCH_REPO",
	// toolbox/Dockerfile_rocm64_pytorch clones these by URL
	"GFX803_VISION_REF": "https://github.com/pytorch/vision.git",
	"GFX803_AUDIO_REF":  "https://github.com/pytorch/audio.git",
	// checked out by TheRock's pytorch_torch_repo.py --gitrepo-origin PYTORCH_REPO
	// --repo-hashtag PYTORCH_REF (audio and vision follow its related_commits)
	"PYTORCH_REF": "PYTORCH_REPO",
}

// ModelPins are Hugging Face model pins (an org/name ID, or a local path).
var ModelPins = map[string]bool{"VERIFY_MODEL": true}

// DigestRepos maps an image digest pin to the pin holding its repository.
var DigestRepos = map[string]string{"SPOOF_BASE_DIGEST": "SPOOF_BASE_IMAGE"}

// localWhy explains the pins that have nothing upstream.
var localWhy = map[string]string{
	"PYTHON_VERSION":      "local setting (the wheel checks use it to pick the cpXY wheel)",
	"SOURCE_ROCM_VERSION": "ROCm series Fedora's own packages must ship; checked by the build (dnf), not here",
	"SPOOF_GFX_VERSION":   "local setting (HSA_OVERRIDE_GFX_VERSION)",
	"LLAMA_MODEL":         "a local file",
	// a GitHub release asset: the download itself is the check (00-pull-images.sh
	// compares its sha256 before unpacking), no index or registry answers for it
	"LLAMACPP_ROCM_PREBUILT_URL":    "a release asset: 00-pull-images.sh downloads it and checks its sha256",
	"LLAMACPP_ROCM_PREBUILT_SHA256": "the sha256 of LLAMACPP_ROCM_PREBUILT_URL's file, checked at its download",
	"OLLAMA_BACKEND":                "local setting (rocm or vulkan)",
}

// plan is how one pin will be checked.
type plan struct {
	pin      pins.Pin
	method   string
	upstream string // shown in results and in the table
	why      string // for methodNone
	run      func(ctx context.Context, c *checker) Result
}

func (p plan) result(s State, detail string) Result {
	return Result{Name: p.pin.Name, Value: p.pin.Value, Kind: p.pin.Kind, State: s, Detail: detail, Upstream: p.upstream, Method: p.method}
}

// planAll decides, for every pin of f in file order, what to ask and where.
func planAll(f *pins.File) []plan {
	values := f.Values()
	repoOf := map[string][]string{} // repo pin -> ref pins reading it
	for _, p := range f.Pins {
		if src, ok := gitRepoSource(p.Name); ok && !strings.Contains(src, "://") {
			repoOf[src] = append(repoOf[src], p.Name)
		}
	}
	digestOf := map[string]string{}
	for d, repo := range DigestRepos {
		digestOf[repo] = d
	}
	indexOf := map[string][]string{}
	for _, w := range WheelRules {
		if _, ok := values[w.Pin]; ok {
			_, pin := w.index(values)
			indexOf[pin] = append(indexOf[pin], w.Pin)
		}
	}
	var out []plan
	for _, p := range f.Pins {
		out = append(out, planPin(p, values, repoOf, digestOf, indexOf))
	}
	return out
}

func planPin(p pins.Pin, values map[string]string, repoOf map[string][]string, digestOf map[string]string, indexOf map[string][]string) plan {
	pl := plan{pin: p, method: methodNone}
	none := func(why string) plan {
		pl.why = why
		pl.run = func(context.Context, *checker) Result { return pl.result(Unchecked, why) }
		return pl
	}
	if p.Value == "" {
		var readers []string
		next := ""
		for _, w := range WheelRules {
			if i := slices.Index(w.Index, p.Name); i >= 0 && i < len(w.Index)-1 {
				readers, next = append(readers, w.Pin), w.Index[i+1]
			}
		}
		if len(readers) > 0 {
			return none("empty: " + strings.Join(readers, ", ") + " are looked up on " + next)
		}
		return none("empty: nothing to check")
	}
	if w, ok := wheelRule(p.Name); ok {
		index, indexPin := w.index(values)
		if index == "" {
			return none(fmt.Sprintf("no %s pin to look it up on", indexPin))
		}
		pkgs := expandPackages(w.Packages, values["GPU_TARGET"])
		pl.method, pl.upstream = methodIndex, index
		pl.run = func(ctx context.Context, c *checker) Result {
			return checkWheels(ctx, c, pl, index, pkgs, values["PYTHON_VERSION"])
		}
		return pl
	}
	if readers, ok := indexOf[p.Name]; ok || strings.HasSuffix(p.Name, "_INDEX_URL") {
		pl.method, pl.upstream = methodIndexRoot, p.Value
		pl.run = func(ctx context.Context, c *checker) Result { return checkIndexRoot(ctx, c, pl, readers) }
		return pl
	}
	if repo, ok := gitRepo(p.Name, values); ok {
		pl.method, pl.upstream = methodGit, repo
		pl.run = func(ctx context.Context, c *checker) Result { return checkGitRef(ctx, c, pl, repo) }
		return pl
	}
	if ModelPins[p.Name] || p.Kind == "model" {
		if !reModelID.MatchString(p.Value) {
			return none("a local model file or directory: nothing upstream")
		}
		endpoint, err := hubEndpoint()
		pl.method, pl.upstream = methodHub, endpoint+"/"+p.Value
		if err != nil {
			// a mirror the user set that cannot be asked: say so, and do
			// not ask huggingface.co in its place
			pl.upstream = "HF_ENDPOINT"
			pl.run = func(context.Context, *checker) Result { return pl.result(Unchecked, err.Error()) }
			return pl
		}
		pl.run = func(ctx context.Context, c *checker) Result { return checkModel(ctx, c, pl, endpoint) }
		return pl
	}
	if refs, ok := repoOf[p.Name]; ok && p.Kind == pins.KindURL {
		sort.Strings(refs)
		pl.method, pl.upstream = methodGit, p.Value
		pl.run = func(ctx context.Context, c *checker) Result { return checkGitRepo(ctx, c, pl, refs) }
		return pl
	}
	switch p.Kind {
	case pins.KindImage:
		ref, err := ParseImageRef(p.Value)
		if err != nil {
			return none("not an image reference haloforge can resolve: " + err.Error())
		}
		if ref.Local() {
			return none("built locally by its track (localhost/…): nothing upstream")
		}
		pl.method, pl.upstream = methodRegistry, ref.Registry()+"/"+ref.Repository()
		pl.run = func(ctx context.Context, c *checker) Result { return checkImage(ctx, c, pl, ref) }
		return pl
	case pins.KindDigest:
		if why, ok := localWhy[p.Name]; ok {
			return none(why)
		}
		repoPin, ok := DigestRepos[p.Name]
		if !ok {
			repoPin = strings.TrimSuffix(p.Name, "_DIGEST") + "_IMAGE"
		}
		ref, err := ParseImageRef(values[repoPin] + "@" + p.Value)
		if values[repoPin] == "" || err != nil {
			return none(fmt.Sprintf("no %s pin naming the repository of this digest", repoPin))
		}
		pl.method, pl.upstream = methodRegistry, ref.Registry()+"/"+ref.Repository()
		pl.run = func(ctx context.Context, c *checker) Result { return checkImage(ctx, c, pl, ref) }
		return pl
	case pins.KindRepo:
		ref, err := ParseImageRef(p.Value)
		if err != nil || ref.Local() {
			return none("a local repository name: nothing upstream")
		}
		digestPin := digestOf[p.Name]
		if digestPin == "" || values[digestPin] == "" {
			return none("an image repository with no digest pin: nothing to resolve")
		}
		full, err := ParseImageRef(p.Value + "@" + values[digestPin])
		if err != nil {
			return none("not an image repository haloforge can resolve: " + err.Error())
		}
		pl.method, pl.upstream = methodRegistry, ref.Registry()+"/"+ref.Repository()
		pl.run = func(ctx context.Context, c *checker) Result { return checkImageRepo(ctx, c, pl, full, digestPin) }
		return pl
	}
	if why, ok := localWhy[p.Name]; ok {
		return none(why)
	}
	switch p.Kind {
	case pins.KindURL:
		return none("a URL no check reads (not a git repository or wheel index of a known pin)")
	case pins.KindVersion:
		return none("a version with no known wheel or package upstream")
	}
	return none("local setting: nothing upstream")
}

func wheelRule(name string) (WheelRule, bool) {
	for _, w := range WheelRules {
		if w.Pin == name {
			return w, true
		}
	}
	return WheelRule{}, false
}

// gitRepoSource names where a ref pin's repository comes from: the table,
// else NAME_REPO for a NAME_REF; ok is false for pins that are no git ref.
func gitRepoSource(name string) (string, bool) {
	switch spec, _ := pins.Lookup(name); spec.Kind {
	case pins.KindSHA, pins.KindRef, pins.KindTag, pins.KindBranch:
	default:
		return "", false
	}
	if src, ok := GitRepos[name]; ok {
		return src, true
	}
	return strings.TrimSuffix(name, "_REF") + "_REPO", true
}

// gitRepo is the repository URL of a ref pin.
func gitRepo(name string, values map[string]string) (string, bool) {
	src, ok := gitRepoSource(name)
	if !ok {
		return "", false
	}
	if strings.Contains(src, "://") {
		return src, true
	}
	v := values[src]
	return v, v != ""
}

// expandPackages fills {GPU} with each target of GPU_TARGET.
func expandPackages(templates []string, gpu string) []string {
	var out []string
	for _, t := range templates {
		if !strings.Contains(t, "{GPU}") {
			out = append(out, t)
			continue
		}
		for _, g := range strings.Split(gpu, ";") {
			if g != "" {
				out = append(out, strings.ReplaceAll(t, "{GPU}", g))
			}
		}
	}
	return out
}

// Row is one line of the resolution table.
type Row struct {
	Pin, Upstream, Method string
}

// Table is the resolution table for every known pin name, as the checks
// would run on f: which upstream, which method. README.md shows it.
func Table(f *pins.File) []Row {
	var rows []Row
	for _, p := range planAll(f) {
		up := p.upstream
		if w, ok := wheelRule(p.pin.Name); ok && p.method == methodIndex {
			_, indexPin := w.index(f.Values())
			up = fmt.Sprintf("%s on `%s`: %s", strings.Join(quoteAll(expandPackages(w.Packages, "gfx1151")), ", "), indexPin, strings.ReplaceAll(w.Source, "{GPU}", "gfx1151"))
		} else if p.method == methodNone {
			up = p.why
		} else if p.method == methodGit {
			if src, ok := GitRepos[p.pin.Name]; ok && !strings.Contains(src, "://") {
				up = "`" + src + "`"
			} else if p.pin.Kind == pins.KindURL {
				up = "itself: the repository answers"
			} else {
				up = "`" + up + "` (cloned by URL)"
			}
		} else if p.method == methodRegistry {
			up = "its registry: tag → digest, or the digest exists"
			if d, ok := DigestRepos[p.pin.Name]; ok {
				up = "`" + d + "`'s repository: the digest exists"
			} else if p.pin.Kind == pins.KindRepo {
				up = "its registry: the repository exists (`tags/list`)"
			}
		} else if p.method == methodHub {
			up = "the Hugging Face Hub (`HF_ENDPOINT`, default https://huggingface.co)"
		} else if p.method == methodIndexRoot {
			up = "itself: the index answers"
		}
		rows = append(rows, Row{Pin: p.pin.Name, Upstream: up, Method: methodText[p.method]})
	}
	return rows
}

var methodText = map[string]string{
	methodIndex:     "simple index: project page (PEP 691, else 503), exact `==version` for `PYTHON_VERSION`",
	methodIndexRoot: "simple index: GET of the root",
	methodRegistry:  "OCI registry: manifest HEAD (podman's credentials, else anonymous)",
	methodGit:       "`git ls-remote`; a SHA that is no tip: one-commit fetch by SHA",
	methodHub:       "Hugging Face Hub: GET /api/models/ID/revision/main",
	methodNone:      "unchecked",
}

func quoteAll(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = "`" + v + "`"
	}
	return out
}

// MarkdownTable renders Table as the README's markdown table.
func MarkdownTable(rows []Row) string {
	var sb strings.Builder
	sb.WriteString("| pin | upstream | method |\n|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&sb, "| `%s` | %s | %s |\n", r.Pin, strings.ReplaceAll(r.Upstream, "|", "\\|"), r.Method)
	}
	return sb.String()
}
