package pins

// Kind is what a pin's value must look like.
type Kind string

// Pin kinds; each has its validator in validate.go.
const (
	KindSHA     Kind = "sha"     // a full 40-hex git commit
	KindRef     Kind = "ref"     // a git commit, tag or branch (branches float)
	KindTag     Kind = "tag"     // a git tag such as v0.10.2 or b10590
	KindBranch  Kind = "branch"  // a git branch: always floating
	KindDigest  Kind = "digest"  // sha256:<64 hex>
	KindImage   Kind = "image"   // an OCI image reference (tag and/or digest)
	KindRepo    Kind = "repo"    // an OCI image repository, used with a digest pin
	KindURL     Kind = "url"     // an https URL
	KindVersion Kind = "version" // a package version such as 2.11.0+rocm7.14.0
	KindPath    Kind = "path"    // a file system path (may be empty)
	KindInt     Kind = "int"     // a non-negative integer
	KindName    Kind = "name"    // a container or box name
	KindGFX     Kind = "gfx"     // one or more LLVM targets, ';' separated
	KindModel   Kind = "model"   // a Hugging Face model ID (org/name) or an absolute path
)

// Spec describes one known pin name.
type Spec struct {
	Name     string
	Kind     Kind
	Optional bool // may be empty
	Help     string
}

// specs lists every name versions.env may define, grouped by track.
var specs = []Spec{
	// shared by the TheRock tracks and most others
	{Name: "GPU_TARGET", Kind: KindGFX, Help: "LLVM target of the GPU"},
	{Name: "PYTORCH_ROCM_ARCH", Kind: KindGFX, Help: "architectures PyTorch extensions are built for"},
	{Name: "PYTHON_VERSION", Kind: KindVersion, Help: "Python of the venv"},
	// therock-toolbox
	{Name: "TOOLBOX_NAME", Kind: KindName, Help: "distrobox name"},
	{Name: "TOOLBOX_IMAGE", Kind: KindImage, Help: "image the distrobox runs"},
	{Name: "TOOLBOX_IMAGE_FEDORA", Kind: KindImage, Help: "Fedora toolbox image (Containerfile.therock-fedora)"},
	{Name: "THEROCK_INDEX_URL", Kind: KindURL, Help: "TheRock wheel index"},
	{Name: "TORCH_INDEX_URL", Kind: KindURL, Optional: true, Help: "torch's own wheel index (empty: THEROCK_INDEX_URL)"},
	{Name: "ROCM_VERSION", Kind: KindVersion, Help: "TheRock ROCm SDK version"},
	{Name: "TORCH_VERSION", Kind: KindVersion, Help: "torch wheel version"},
	{Name: "TORCHVISION_VERSION", Kind: KindVersion, Help: "torchvision wheel version"},
	{Name: "TORCHAUDIO_VERSION", Kind: KindVersion, Help: "torchaudio wheel version"},
	{Name: "AITER_REPO", Kind: KindURL, Help: "AITER git repository"},
	{Name: "AITER_REF", Kind: KindRef, Help: "AITER commit"},
	{Name: "FLASH_ATTENTION_REPO", Kind: KindURL, Help: "ROCm flash-attention git repository"},
	{Name: "FLASH_ATTENTION_REF", Kind: KindRef, Help: "flash-attention commit"},
	{Name: "VLLM_REPO", Kind: KindURL, Help: "vLLM git repository"},
	{Name: "VLLM_REF", Kind: KindRef, Help: "vLLM commit"},
	{Name: "VERIFY_MODEL", Kind: KindModel, Optional: true, Help: "small public model the verify steps generate with (empty: not verified)"},
	// vllm-image
	{Name: "VLLM_IMAGE", Kind: KindImage, Help: "AMD's prebuilt vLLM image"},
	{Name: "VLLM_PORT", Kind: KindInt, Help: "port the launcher publishes"},
	// nightly-spoof and locked-spoof
	{Name: "NIGHTLY_IMAGE", Kind: KindImage, Help: "nightly vLLM image (floats)"},
	{Name: "SPOOF_GFX_VERSION", Kind: KindVersion, Help: "HSA_OVERRIDE_GFX_VERSION of the spoof tracks"},
	{Name: "SPOOF_BASE_IMAGE", Kind: KindRepo, Help: "repository of the locked spoof base"},
	{Name: "SPOOF_BASE_DIGEST", Kind: KindDigest, Help: "digest of the locked spoof base"},
	{Name: "SPOOF_LOCKED_IMAGE", Kind: KindImage, Help: "name of the image build_spoof_locked.sh makes"},
	// source-stable
	{Name: "SOURCE_BASE_IMAGE", Kind: KindImage, Help: "Fedora base of the source build"},
	{Name: "SOURCE_ROCM_VERSION", Kind: KindVersion, Help: "ROCm of the source build"},
	{Name: "SOURCE_TORCH_VERSION", Kind: KindVersion, Help: "PyTorch of the source build"},
	{Name: "SOURCE_TORCH_INDEX_URL", Kind: KindURL, Help: "PyTorch ROCm wheel index"},
	{Name: "SOURCE_VLLM_REF", Kind: KindRef, Help: "vLLM commit of the source build"},
	{Name: "SOURCE_FLASH_ATTENTION_REF", Kind: KindRef, Help: "flash-attention commit of the source build"},
	{Name: "SOURCE_IMAGE", Kind: KindImage, Help: "name of the image build_pipeline.sh makes"},
	// llamacpp-vulkan and llamacpp-rocm
	{Name: "LLAMACPP_REPO", Kind: KindURL, Help: "llama.cpp git repository"},
	{Name: "LLAMACPP_REF", Kind: KindRef, Help: "llama.cpp release tag"},
	{Name: "VULKAN_BASE_IMAGE", Kind: KindImage, Help: "base of Dockerfile.vulkan"},
	{Name: "VULKAN_IMAGE", Kind: KindImage, Help: "name of the image build_vulkan.sh makes"},
	{Name: "LLAMA_MODEL", Kind: KindPath, Optional: true, Help: "GGUF model for llama-bench, the ladder and the ollama verify"},
	{Name: "LLAMACPP_ROCM_IMAGE", Kind: KindImage, Help: "llama.cpp ROCm toolbox image"},
	{Name: "LLAMACPP_ROCM_NIGHTLY_IMAGE", Kind: KindImage, Help: "llama.cpp on a TheRock nightly"},
	{Name: "LLAMA_STALL_TIMEOUT", Kind: KindInt, Help: "seconds without output before a ladder rung counts as hung"},
	{Name: "LLAMACPP_ROCM_PREBUILT_URL", Kind: KindURL, Help: "prebuilt gfx1151 llama.cpp ROCm build (a release zip) the ladder's prebuilt rung runs"},
	{Name: "LLAMACPP_ROCM_PREBUILT_SHA256", Kind: KindDigest, Help: "sha256 of LLAMACPP_ROCM_PREBUILT_URL's file, checked before it is unpacked"},
	// ollama
	{Name: "OLLAMA_BACKEND", Kind: KindName, Help: "Ollama's GPU engine: rocm (OLLAMA_IMAGE) or vulkan (OLLAMA_VULKAN_IMAGE)"},
	{Name: "OLLAMA_IMAGE", Kind: KindImage, Help: "Ollama ROCm image"},
	{Name: "OLLAMA_VULKAN_IMAGE", Kind: KindImage, Help: "Ollama image with the Vulkan engine (the plain, non -rocm one)"},
	{Name: "OLLAMA_PORT", Kind: KindInt, Help: "Ollama API port"},
	{Name: "OLLAMA_GPU_OVERHEAD", Kind: KindInt, Help: "bytes of GPU memory Ollama keeps free (OLLAMA_GPU_OVERHEAD)"},
	// therock-aotriton
	{Name: "THEROCK_REPO", Kind: KindURL, Help: "TheRock git repository"},
	{Name: "THEROCK_REF", Kind: KindRef, Help: "TheRock commit"},
	{Name: "PYTORCH_REPO", Kind: KindURL, Help: "PyTorch repository TheRock checks out (--gitrepo-origin): the ROCm fork"},
	{Name: "PYTORCH_REF", Kind: KindRef, Help: "ref of PYTORCH_REPO TheRock checks out (--repo-hashtag); audio and vision follow its related_commits"},
	{Name: "CK_REPO", Kind: KindURL, Help: "Composable Kernel git repository"},
	{Name: "CK_REF", Kind: KindRef, Help: "Composable Kernel release tag"},
	// legacy-gfx803
	{Name: "GFX803_BASE_IMAGE", Kind: KindImage, Help: "ROCm base image for Polaris"},
	{Name: "GFX803_PYTORCH_REPO", Kind: KindURL, Help: "ROCm PyTorch fork"},
	{Name: "GFX803_PYTORCH_REF", Kind: KindRef, Help: "PyTorch branch for gfx803"},
	{Name: "GFX803_VISION_REF", Kind: KindRef, Help: "torchvision branch"},
	{Name: "GFX803_AUDIO_REF", Kind: KindRef, Help: "torchaudio tag"},
	{Name: "GFX803_LOCAL_BASE_IMAGE", Kind: KindImage, Help: "name of the base image 00-build-base.sh makes"},
	{Name: "GFX803_IMAGE", Kind: KindImage, Help: "name of the PyTorch image the gfx803 steps make"},
	// llamacpp-distro: llama.cpp from the distribution's packages, no build
	{Name: "LLAMACPP_DISTRO_IMAGE", Kind: KindImage, Help: "image of the llamacpp-distro box (Debian sid, Ubuntu 26.04 or Fedora)"},
	{Name: "LLAMACPP_DISTRO_BOX", Kind: KindName, Help: "distrobox name of the llamacpp-distro track"},
	{Name: "LLAMACPP_DISTRO_BACKEND", Kind: KindName, Help: "ggml GPU backend: auto (HIP when it has code for the GPU, else Vulkan), vulkan or hip"},
}

// Specs returns every known pin name with its kind.
func Specs() []Spec { return append([]Spec(nil), specs...) }

// Lookup returns the spec of a known name.
func Lookup(name string) (Spec, bool) {
	for _, s := range specs {
		if s.Name == name {
			return s, true
		}
	}
	return Spec{}, false
}
