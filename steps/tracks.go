package steps

import "github.com/haloforge/haloforge/detect"

// gfx1151 is Strix Halo's LLVM target; the main tracks build for it natively.
var gfxStrixHalo = []string{"gfx1151"}

// Container flags that hand the GPU to a served engine (ServeSpec.Devices),
// as the tracks' own scripts pass them (scripts/vllm-image/launcher-body.sh,
// scripts/ollama/run_ollama.sh).
var (
	rocmDevices   = []string{"--device", "/dev/kfd", "--device", "/dev/dri", "--group-add", "keep-groups", "--security-opt", "seccomp=unconfined", "--ipc=host"}
	vulkanDevices = []string{"--device", "/dev/dri", "--group-add", "keep-groups"}
)

// pickOrder is the order an owner should consider the tracks in today
// (Catalogue, `tracks`, the picker): the native build, the prebuilt image,
// the numerically sound GGUF paths, the simple server, the experiments, the
// tracks for other GPUs, and last what is kept as history.
var pickOrder = []string{
	"therock-toolbox", "vllm-image", "llamacpp-vulkan", "llamacpp-distro", "ollama",
	"llamacpp-rocm", "therock-aotriton", "source-stable", "legacy-gfx803",
	"nightly-spoof", "locked-spoof",
}

// catalogue is every track of the seeds (Catalogue orders them by pickOrder).
// Step IDs and script names of therock-toolbox are part of the contract (docs/ids.md).
var catalogue = []Track{
	{
		ID:     "therock-toolbox",
		Title:  "TheRock toolbox: PyTorch + vLLM built for gfx1151",
		Status: StatusRecommended,
		Source: "the project's first build recipe: AITER, flash-attention and vLLM wheels on TheRock for gfx1151",
		Description: "A distrobox toolbox on your host with TheRock's ROCm SDK wheels " +
			"(rocm-sdk init) and torch for gfx1151 from AMD's ROCm 10 index (the rocm-10.0 pin set; " +
			"rocm-7.14 is the previous one), then an optional AITER (whose Triton flash attention is " +
			"what vLLM's ROCm path imports from v0.26), a flash-attention wheel (ROCm fork, Triton AMD) " +
			"for your own flash_attn code, which vLLM does not import, and vLLM built as wheels " +
			"against that torch. Native gfx1151 kernels, no spoofing, every wheel " +
			"kept and reused. Pick it on a Strix Halo box: it is the path most owners take and the " +
			"one haloforge knows best. Needs a few hours of compiling the first time.",
		Pros:           []string{"native gfx1151 kernels, no HSA override", "every pin reproducible, wheels cached", "runs by hand without the wizard"},
		Cons:           []string{"hours of compiling on the first run", "gfx1151 is experimental in AITER; optional"},
		GFX:            gfxStrixHalo,
		Requires:       []string{"a kernel with gfx1151's KFD fixes: " + detect.FixedKernelsText(), "podman and distrobox", "/dev/kfd and /dev/dri reachable (groups render, video)", "about 60 GB free disk"},
		BlockingChecks: []detect.CheckID{detect.CheckGPU, detect.CheckKFDAccess, detect.CheckContainerEngine, detect.CheckDistrobox, detect.CheckDiskSpace},
		Env:            map[string]string{"HSA_OVERRIDE_GFX_VERSION": ""},
		Steps: []Step{
			{ID: "toolbox", Title: "Create the distrobox toolbox", Script: "00-setup-toolbox.sh", Pins: []string{"TOOLBOX_NAME", "TOOLBOX_IMAGE"}},
			{ID: "tools", Title: "Install build tools from the distro", Script: "01-install-tools.sh", Pins: []string{"PYTHON_VERSION"}, DependsOn: []string{"toolbox"}},
			{ID: "rocm", Title: "Install TheRock ROCm SDK and torch", Script: "02-install-rocm.sh", Pins: []string{"THEROCK_INDEX_URL", "TORCH_INDEX_URL", "ROCM_VERSION", "TORCH_VERSION", "TORCHVISION_VERSION", "TORCHAUDIO_VERSION", "GPU_TARGET"}, DependsOn: []string{"tools"}},
			{ID: "aiter", Title: "Build AITER", Script: "03-build-aiter.sh", Pins: []string{"AITER_REPO", "AITER_REF", "PYTORCH_ROCM_ARCH"}, DependsOn: []string{"rocm"}, Optional: true,
				Why: "gfx1151 is experimental in AITER (v0.1.19; most of its CK and asm kernels are CDNA-only); optional: vLLM works without it"},
			{ID: "flash-attention", Title: "Build flash-attention (for your code, not vLLM)", Script: "04-build-fa.sh", Pins: []string{"FLASH_ATTENTION_REPO", "FLASH_ATTENTION_REF", "PYTORCH_ROCM_ARCH"}, DependsOn: []string{"rocm"}},
			{ID: "vllm", Title: "Build vLLM", Script: "05-build-vllm.sh", Pins: []string{"VLLM_REPO", "VLLM_REF", "PYTORCH_ROCM_ARCH", "GPU_TARGET"}, DependsOn: []string{"rocm"}},
			{ID: "verify", Title: "Verify torch, attention and vLLM", Script: "06-verify.sh", Pins: []string{"GPU_TARGET", "VERIFY_MODEL"}, DependsOn: []string{"aiter", "flash-attention", "vllm"}},
		},
		// The native build first; a host that cannot compile for hours gets
		// AMD's prebuilt image, one without a working ROCm gets Vulkan.
		RecommendWhen: &Recommendation{For: gfxStrixHalo, Rank: 1, Unless: []Obstacle{ROCmBroken, CannotBuild}},
		Next: []string{
			"haloforge serve --track therock-toolbox --model Qwen/Qwen3-0.6B",
			"haloforge bench --track therock-toolbox --model Qwen/Qwen3-0.6B",
			"distrobox enter $TOOLBOX_NAME -- /opt/venv/bin/vllm serve <model> --gpu-memory-utilization 0.85",
		},
		Serve: &ServeSpec{Engine: "vllm", BoxPin: "TOOLBOX_NAME", PortPin: "VLLM_PORT", ModelPin: "VERIFY_MODEL"},
	},
	{
		ID:     "vllm-image",
		Title:  "A prebuilt vLLM image (AMD's ROCm 10 image, or vLLM's own)",
		Status: StatusStable,
		Source: "the project's continuous-build spec, option A: a prebuilt vLLM image",
		Description: "Pulls a prebuilt vLLM container at a pinned digest or tag and runs it with the GPU " +
			"devices, host IPC and the memory advice for the unified-memory APU. The default is AMD's " +
			"rocm/vllm image on ROCm 10.0 (vLLM 0.27.0), pinned by the digest a third party verified on " +
			"a Radeon 8060S; `haloforge pins use vllm-openai-rocm` switches to vLLM's own image, " +
			"vllm/vllm-openai-rocm (built with gfx1151 kernels; its entrypoint is `vllm serve`, which " +
			"the launcher handles), recorded by digest on the first pull. Zero build time: the fastest " +
			"way to a working vLLM; you get the versions the image shipped, not the newest.",
		Pros:           []string{"no build at all", "gfx1151 kernels in both images"},
		Cons:           []string{"versions are what the image has", "rocm/vllm is deprecated upstream; vLLM's own image has no digest on record until you pull it"},
		GFX:            []string{"gfx1151", "gfx1100", "gfx1101", "gfx942", "gfx90a"},
		Requires:       []string{"podman or docker", "/dev/kfd and /dev/dri", "about 30 GB free disk"},
		BlockingChecks: []detect.CheckID{detect.CheckGPU, detect.CheckKFDAccess, detect.CheckContainerEngine},
		Steps: []Step{
			{ID: "pull", Title: "Pull the pinned vLLM image", Script: "00-pull-image.sh", Pins: []string{"VLLM_IMAGE"}},
			{ID: "launcher", Title: "Write the launcher script", Script: "01-write-launcher.sh", Pins: []string{"VLLM_IMAGE", "VLLM_PORT"}, DependsOn: []string{"pull"}},
			{ID: "verify", Title: "Verify torch and vLLM in the image", Script: "02-verify.sh", Pins: []string{"VLLM_IMAGE", "GPU_TARGET", "VERIFY_MODEL"}, DependsOn: []string{"launcher"}},
		},
		RecommendWhen: &Recommendation{For: []string{"gfx1151", "gfx1100", "gfx1101", "gfx90a", "gfx942"}, Rank: 2, Unless: []Obstacle{ROCmBroken}},
		Next:          []string{"haloforge serve --track vllm-image --model <model>", "$HALOFORGE_STATE_DIR/vllm-image/start-vllm.sh <model>"},
		Serve:         &ServeSpec{Engine: "vllm", ImagePin: "VLLM_IMAGE", PortPin: "VLLM_PORT", ModelPin: "VERIFY_MODEL", Devices: rocmDevices, Entrypoint: true},
	},
	{
		ID:     "source-stable",
		Title:  "Fedora source build with stable pins, for RDNA3/4 and Instinct (not Strix Halo)",
		Status: StatusStable,
		Source: "the project's continuous-build spec, option B: build from source with stable versions",
		Description: "A Fedora 43 container (Red Hat aligned: dnf, podman, clean layers) that builds " +
			"vLLM v0.10.2 and flash-attention from source against PyTorch 2.8 on ROCm 6.4. Not for " +
			"Strix Halo with these pins: PyTorch's ROCm 6.4 wheels carry no gfx1151 kernels " +
			"(pytorch#167299 added gfx115x later, for ROCm 7 wheels), so build_pipeline.sh refuses " +
			"GPU_TARGET=gfx1151 before any download; on a Strix Halo pick therock-toolbox. For the " +
			"RDNA3/4 or Instinct card in another box, set GPU_TARGET. build_pipeline.sh takes versions " +
			"and hashes as arguments, defaults to versions.env, labels the image with every git hash " +
			"and freezes requirements.lock. Pick it for a reproducible continuous build or an upstream path.",
		Pros: []string{"stable releases, not nightlies", "image labels record every pin", "Red Hat aligned"},
		Cons: []string{"not for gfx1151: torch 2.8.0+rocm6.4 has no Strix Halo kernels", "older vLLM", "long build"},
		// The targets both torch 2.8.0+rocm6.4's wheels (pytorch#141667, #148562) and vLLM
		// v0.10.2's HIP_SUPPORTED_ARCHS carry; the image checks torch's arch list itself.
		GFX:            []string{"gfx1100", "gfx1101", "gfx1200", "gfx1201", "gfx1030", "gfx942", "gfx90a"},
		Requires:       []string{"podman", "about 80 GB free disk", "32 GB RAM or more for the build"},
		BlockingChecks: []detect.CheckID{detect.CheckContainerEngine, detect.CheckDiskSpace},
		Steps: []Step{
			{ID: "image", Title: "Build the Fedora image from source", Script: "build_pipeline.sh", Pins: []string{"SOURCE_BASE_IMAGE", "SOURCE_ROCM_VERSION", "PYTHON_VERSION", "SOURCE_TORCH_VERSION", "SOURCE_TORCH_INDEX_URL", "VLLM_REPO", "SOURCE_VLLM_REF", "FLASH_ATTENTION_REPO", "SOURCE_FLASH_ATTENTION_REF", "GPU_TARGET", "SOURCE_IMAGE"}},
			{ID: "lock", Title: "Export requirements.lock", Script: "01-export-lock.sh", Pins: []string{"SOURCE_IMAGE"}, DependsOn: []string{"image"}},
			{ID: "verify", Title: "Verify the image", Script: "02-verify.sh", Pins: []string{"SOURCE_IMAGE", "GPU_TARGET", "VERIFY_MODEL"}, DependsOn: []string{"lock"}},
		},
		Next: []string{"podman run --rm -it --device /dev/kfd --device /dev/dri --group-add keep-groups --ipc=host $SOURCE_IMAGE"},
	},
	{
		ID:     "nightly-spoof",
		Title:  "Nightly vLLM image, spoofed as gfx1100 (history)",
		Status: StatusHistory,
		Source: "the project's continuous-build spec, track C: the nightly spoof",
		History: "the gfx1100 spoof was the 2025 workaround for images without gfx1151 kernels; vLLM's " +
			"ROCm base image and TheRock's torch now carry gfx1151 code and rocm/vllm-dev is deprecated, " +
			"so pick vllm-image or therock-toolbox. Kept to reproduce or compare a 2025 setup.",
		Description: "Runs the floating rocm/vllm-dev:nightly image with HSA_OVERRIDE_GFX_VERSION=11.0.0, " +
			"so the runtime treats the 8060S as a Navi31 (gfx1100). Zero build time and verified working " +
			"once, but it relies on RDNA3 kernels running on RDNA3.5: illegal-instruction crashes are a " +
			"real risk and the image changes under you. A stop-gap, not a setup.",
		Pros:           []string{"zero build time"},
		Cons:           []string{"illegal instruction crashes possible", "floating tag: not reproducible"},
		GFX:            gfxStrixHalo,
		Requires:       []string{"podman or docker", "/dev/kfd and /dev/dri"},
		BlockingChecks: []detect.CheckID{detect.CheckGPU, detect.CheckKFDAccess, detect.CheckContainerEngine},
		Env:            map[string]string{"HSA_OVERRIDE_GFX_VERSION": "11.0.0"},
		Steps: []Step{
			{ID: "pull", Title: "Pull the nightly image", Script: "00-pull-image.sh", Pins: []string{"NIGHTLY_IMAGE"}},
			{ID: "verify", Title: "Verify under the gfx1100 spoof", Script: "01-verify.sh", Pins: []string{"NIGHTLY_IMAGE", "SPOOF_GFX_VERSION", "VERIFY_MODEL"}, DependsOn: []string{"pull"}},
		},
		Next: []string{"scripts/nightly-spoof/run_nightly_spoof.sh <model>"},
	},
	{
		ID:     "locked-spoof",
		Title:  "Pinned-digest image with the spoof baked in (history)",
		Status: StatusHistory,
		Source: "the project's continuous-build spec, track D: the locked spoof",
		History: "the same 2025 gfx1100 spoof, frozen by digest: today's images carry gfx1151 kernels and " +
			"rocm/vllm-dev is deprecated, so pick vllm-image or therock-toolbox. Kept to reproduce a " +
			"setup that worked for you.",
		Description: "Builds a small image FROM a pinned rocm/vllm-dev digest with the gfx1100 spoof " +
			"variables baked in (Dockerfile.spoof_locked, build_spoof_locked.sh). The same trade-off as " +
			"the nightly spoof, but reproducible: the digest never moves. Pick it when the spoof works " +
			"for you and you want it to keep working.",
		Pros:           []string{"reproducible: pinned by digest", "tiny build"},
		Cons:           []string{"still a spoof: illegal instruction risk", "old vLLM in the base"},
		GFX:            gfxStrixHalo,
		Requires:       []string{"podman or docker", "/dev/kfd and /dev/dri"},
		BlockingChecks: []detect.CheckID{detect.CheckGPU, detect.CheckKFDAccess, detect.CheckContainerEngine},
		Steps: []Step{
			{ID: "image", Title: "Build the locked spoof image", Script: "build_spoof_locked.sh", Pins: []string{"SPOOF_BASE_IMAGE", "SPOOF_BASE_DIGEST", "SPOOF_GFX_VERSION", "SPOOF_LOCKED_IMAGE"}},
			{ID: "verify", Title: "Verify the locked image", Script: "01-verify.sh", Pins: []string{"SPOOF_LOCKED_IMAGE", "VERIFY_MODEL"}, DependsOn: []string{"image"}},
		},
		Next: []string{"podman run --rm -it --device /dev/kfd --device /dev/dri --group-add keep-groups --ipc=host $SPOOF_LOCKED_IMAGE"},
	},
	{
		ID:     "llamacpp-vulkan",
		Title:  "llama.cpp on Vulkan (RADV)",
		Status: StatusStable,
		Source: "the project's continuous-build spec, track E: llama.cpp on Vulkan",
		Description: "Builds llama.cpp with GGML_VULKAN=ON in a container and runs it on Mesa's RADV " +
			"driver. No ROCm at all, so no kernel-driver or ROCm hangs: about 2.5x faster prompt " +
			"processing than HIP on Strix Halo (721-884 tok/s reported), slower token generation. " +
			"Pick it for GGUF models and when ROCm misbehaves; it is not vLLM.",
		Pros:           []string{"fastest prompt processing", "no ROCm dependency", "works when ROCm hangs"},
		Cons:           []string{"slower generation than HIP", "llama.cpp API, not vLLM"},
		GFX:            []string{"gfx1151", "gfx1150", "gfx1100", "gfx1101", "gfx1102", "gfx1030", "gfx803", "gfx900"},
		Requires:       []string{"podman or docker", "/dev/dri", "Mesa RADV"},
		BlockingChecks: []detect.CheckID{detect.CheckContainerEngine},
		Steps: []Step{
			{ID: "image", Title: "Build llama.cpp with Vulkan", Script: "build_vulkan.sh", Pins: []string{"VULKAN_BASE_IMAGE", "LLAMACPP_REPO", "LLAMACPP_REF", "VULKAN_IMAGE"}},
			{ID: "verify", Title: "Verify, and llama-bench when a model is given", Script: "01-verify.sh", Pins: []string{"VULKAN_IMAGE", "LLAMA_MODEL"}, DependsOn: []string{"image"}},
		},
		// The fallback for any GPU: Vulkan needs no ROCm and no compiling on the host.
		RecommendWhen: &Recommendation{Rank: 9},
		Next: []string{
			"haloforge serve --track llamacpp-vulkan --model <model>.gguf",
			"haloforge bench --track llamacpp-vulkan --model <model>.gguf",
			"podman run --rm -it --device /dev/dri -v ~/models:/models $VULKAN_IMAGE llama-server -m /models/<model>.gguf -ngl 999",
		},
		Serve: &ServeSpec{Engine: "llama.cpp", ImagePin: "VULKAN_IMAGE", ModelPin: "LLAMA_MODEL", Devices: vulkanDevices},
	},
	{
		ID:     "ollama",
		Title:  "Ollama, the simple server (ROCm, or Vulkan)",
		Status: StatusStable,
		Source: "the project's continuous-build spec, track F: Ollama",
		Description: "Runs the official Ollama container at a pinned release with the GPU devices " +
			"and memory settings Ollama really reads (there is no OLLAMA_GPU_MEMORY: see TUTORIAL.md). " +
			"OLLAMA_BACKEND picks the engine: rocm (the default: the -rocm image, where gfx1151 is a " +
			"built-in target that Ollama admits on its own) or vulkan (the plain image with " +
			"OLLAMA_VULKAN=1 and OLLAMA_IGPU_ENABLE=1, which Ollama needs to keep an integrated GPU on " +
			"Vulkan; only /dev/dri). The easiest deployment; less control than vLLM or llama.cpp.",
		Pros:           []string{"easiest to run", "gfx1151 built in", "a Vulkan engine when ROCm misbehaves"},
		Cons:           []string{"less control", "memory comes from GTT: size it on the host"},
		GFX:            []string{"gfx1151", "gfx1150", "gfx1100", "gfx1101", "gfx1102", "gfx1030", "gfx90a", "gfx942"},
		Requires:       []string{"podman or docker", "/dev/kfd and /dev/dri"},
		BlockingChecks: []detect.CheckID{detect.CheckGPU, detect.CheckKFDAccess, detect.CheckContainerEngine},
		Steps: []Step{
			{ID: "pull", Title: "Pull the Ollama image", Script: "00-pull-image.sh", Pins: []string{"OLLAMA_BACKEND", "OLLAMA_IMAGE", "OLLAMA_VULKAN_IMAGE"}},
			{ID: "serve", Title: "Start Ollama", Script: "run_ollama.sh", Pins: []string{"OLLAMA_BACKEND", "OLLAMA_IMAGE", "OLLAMA_VULKAN_IMAGE", "OLLAMA_PORT", "OLLAMA_GPU_OVERHEAD"}, DependsOn: []string{"pull"}},
			{ID: "verify", Title: "Verify a model runs on Ollama's GPU and answers right", Script: "02-verify.sh", Pins: []string{"OLLAMA_BACKEND", "OLLAMA_PORT", "LLAMA_MODEL"}, DependsOn: []string{"serve"}},
		},
		RecommendWhen: &Recommendation{For: []string{"gfx1150", "gfx1102", "gfx1030"}, Rank: 2, Unless: []Obstacle{ROCmBroken}},
		Next:          []string{"haloforge serve --track ollama --model <model>", "podman exec -it haloforge-ollama ollama run <model>"},
		Serve: &ServeSpec{Engine: "ollama", ImagePin: "OLLAMA_IMAGE", PortPin: "OLLAMA_PORT", Devices: rocmDevices,
			// Ollama on Vulkan (OLLAMA_BACKEND=vulkan) runs the plain image with
			// /dev/dri only, as scripts/ollama's ollama_engine does: its Vulkan
			// backend is opt-in, and it drops an integrated GPU from its Vulkan
			// devices unless told (discover/runner.go at the pinned release).
			Alt: &ServeAlt{Pin: "OLLAMA_BACKEND", Value: "vulkan", Spec: ServeSpec{
				Engine: "ollama", ImagePin: "OLLAMA_VULKAN_IMAGE", PortPin: "OLLAMA_PORT", Devices: vulkanDevices,
				Env: map[string]string{"OLLAMA_VULKAN": "1", "OLLAMA_IGPU_ENABLE": "1"}}}},
	},
	{
		ID:     "therock-aotriton",
		Title:  "TheRock PyTorch from source with AOTriton flash attention",
		Status: StatusExperimental,
		Source: "the project's TheRock + AOTriton build guide for gfx1151",
		Description: "For a custom AOTriton or PyTorch commit only: TheRock's own torch wheels (the " +
			"therock-toolbox track) are already built with AOTriton flash attention for gfx11 " +
			"(build_prod_wheels.py enables it for the gfx11 prefix) and that track's SDPA check proves " +
			"it. This one sets up a Python 3.12 environment with TheRock's ROCm SDK, builds AOTriton at " +
			"PyTorch's own pin, then PyTorch (TheRock flavour) for gfx1151 only with AOTriton and the " +
			"FBGEMM GenAI patches, in stages that resume. Installs exactly the wheels built and checks " +
			"that SDPA picks AOTriton flash attention. Pick it when you change PYTORCH_REF or " +
			"AOTriton; the optional CK build does not change SDPA on RDNA.",
		Pros:           []string{"your own AOTriton/PyTorch commit", "builds only gfx1151 (hours, not a day)"},
		Cons:           []string{"long build for what TheRock's wheels already have", "needs TORCH_ROCM_AOTRITON_ENABLE_EXPERIMENTAL=1 at runtime"},
		GFX:            gfxStrixHalo,
		Requires:       []string{"64 GB RAM or more for the build", "about 100 GB free disk", "/dev/kfd for the checks"},
		BlockingChecks: []detect.CheckID{detect.CheckGPU, detect.CheckDiskSpace, detect.CheckBuildMemory},
		Env:            map[string]string{"TORCH_ROCM_AOTRITON_ENABLE_EXPERIMENTAL": "1", "TORCH_ROCM_AOTRITON_PREFER_DEFAULT": "1", "HIP_VISIBLE_DEVICES": "0"},
		Steps: []Step{
			{ID: "env", Title: "Set up the environment and ROCm SDK", Script: "00-setup-env.sh", Pins: []string{"PYTHON_VERSION", "THEROCK_INDEX_URL", "ROCM_VERSION", "GPU_TARGET"}},
			{ID: "aotriton", Title: "Build AOTriton at PyTorch's pin", Script: "01-build-aotriton.sh", Pins: []string{"THEROCK_REPO", "THEROCK_REF", "PYTORCH_REPO", "PYTORCH_REF", "GPU_TARGET"}, DependsOn: []string{"env"}},
			{ID: "pytorch", Title: "Build PyTorch with AOTriton for gfx1151", Script: "02-build-pytorch-with-aotriton-gfx1151.sh", Pins: []string{"THEROCK_REF", "THEROCK_INDEX_URL", "ROCM_VERSION", "GPU_TARGET"}, DependsOn: []string{"aotriton"}},
			{ID: "install", Title: "Install the wheels just built", Script: "04-install-wheels.sh", DependsOn: []string{"pytorch"}},
			{ID: "verify", Title: "Backend check: AOTriton flash attention", Script: "run-backend-check.sh", Pins: []string{"GPU_TARGET"}, DependsOn: []string{"install"}},
			{ID: "ck", Title: "Build Composable Kernel", Script: "03-build-ck.sh", Pins: []string{"CK_REPO", "CK_REF", "GPU_TARGET"}, DependsOn: []string{"install"}, Optional: true,
				Why: "CK's fused MHA is gated to CDNA targets; on gfx1151 SDPA stays on AOTriton, so CK is only for experiments"},
			{ID: "bench", Title: "Attention benchmark", Script: "05-attention-bench.sh", DependsOn: []string{"verify"}, Optional: true,
				Why: "a timing run with AMD_SERIALIZE_KERNEL=0; nothing depends on it"},
		},
		Next: []string{"TORCH_ROCM_AOTRITON_ENABLE_EXPERIMENTAL=1 python your_script.py"},
	},
	{
		ID:     "legacy-gfx803",
		Title:  "Legacy Polaris (gfx803) PyTorch from source",
		Status: StatusStable,
		Source: "the project's gfx803 (Polaris) PyTorch workflow",
		Description: "Builds PyTorch, torchvision and torchaudio from source for Polaris cards " +
			"(RX 470/480/570/580, gfx803) in a container, with the environment they need " +
			"(ROC_ENABLE_PRE_VEGA=1, HSA_OVERRIDE_GFX_VERSION=8.0.3), the CMake >= 4 fixes in the " +
			"third_party trees, torchvision built in a clean environment, and a layer order that keeps " +
			"the long torch build cached. Not for Strix Halo: for the old card in the next box.",
		Pros:           []string{"keeps old Polaris cards useful", "cache-friendly layers"},
		Cons:           []string{"old PyTorch branch", "not for gfx1151"},
		GFX:            []string{"gfx803"},
		Requires:       []string{"podman", "about 60 GB free disk"},
		BlockingChecks: []detect.CheckID{detect.CheckContainerEngine, detect.CheckDiskSpace},
		Env:            map[string]string{"HSA_OVERRIDE_GFX_VERSION": "8.0.3", "ROC_ENABLE_PRE_VEGA": "1", "PYTORCH_ROCM_ARCH": "gfx803"},
		Steps: []Step{
			{ID: "base", Title: "Build the ROCm base image", Script: "00-build-base.sh", Pins: []string{"GFX803_BASE_IMAGE", "GFX803_LOCAL_BASE_IMAGE"}},
			{ID: "pytorch", Title: "Build PyTorch (with CMake 4 fixes)", Script: "01-build-pytorch.sh", Pins: []string{"GFX803_LOCAL_BASE_IMAGE", "GFX803_PYTORCH_REPO", "GFX803_PYTORCH_REF"}, DependsOn: []string{"base"}},
			{ID: "vision", Title: "Build torchvision in a clean environment", Script: "02-build-torchvision.sh", Pins: []string{"GFX803_VISION_REF"}, DependsOn: []string{"pytorch"}},
			{ID: "audio", Title: "Build torchaudio", Script: "03-build-torchaudio.sh", Pins: []string{"GFX803_AUDIO_REF"}, DependsOn: []string{"pytorch"}},
			{ID: "verify", Title: "Verify torch on gfx803", Script: "04-verify.sh", Pins: []string{"GFX803_IMAGE"}, DependsOn: []string{"vision", "audio"}},
		},
		// The only stack that still builds for Polaris.
		RecommendWhen: &Recommendation{For: []string{"gfx803"}, Rank: 1},
		Next:          []string{"podman run --rm -it --device /dev/kfd --device /dev/dri --group-add keep-groups $GFX803_IMAGE"},
	},
	{
		ID:     "llamacpp-rocm",
		Title:  "llama.cpp on ROCm (HIP): as shipped, prebuilt, then the 2025 workarounds",
		Status: StatusExperimental,
		Source: "the project's investigation of llama.cpp's ROCm backend on gfx1151 (2025-12), and 2026's prebuilt builds",
		Description: "llama.cpp's HIP backend on gfx1151, tried in order until one loads your GGUF and " +
			"generates on the GPU (device evidence, not the backend name): kyuz0's rocm-7.14 toolbox as " +
			"shipped (his \"Recommended for Performance\" image; ROCm 7.14 runs the same model right in " +
			"TheRock#7714), then lemonade-sdk's prebuilt gfx1151 build, downloaded and checked against " +
			"its pinned sha256, then the 2025 hang workarounds as history (SDMA off, flash attention off, " +
			"CWSR off, a TheRock nightly), each with a stall timeout and every result recorded. " +
			"Experimental: a rung that runs is measured for speed and placement; its answers are not " +
			"checked yet, and ROCm on gfx1151 has produced wrong tokens on some kernel/firmware pairs.",
		Pros:           []string{"the first rung is the image as shipped: no workaround", "a prebuilt upstream build, checksum-verified", "every attempt recorded"},
		Cons:           []string{"needs a GGUF model", "answers not checked yet: compare with llamacpp-vulkan"},
		GFX:            gfxStrixHalo,
		Requires:       []string{"podman or docker", "/dev/kfd and /dev/dri", "a GGUF model file"},
		BlockingChecks: []detect.CheckID{detect.CheckGPU, detect.CheckKFDAccess, detect.CheckContainerEngine},
		Steps: []Step{
			{ID: "pull", Title: "Pull the images and fetch the prebuilt build", Script: "00-pull-images.sh", Pins: []string{"LLAMACPP_ROCM_IMAGE", "LLAMACPP_ROCM_NIGHTLY_IMAGE", "LLAMACPP_ROCM_PREBUILT_URL", "LLAMACPP_ROCM_PREBUILT_SHA256"}},
			{ID: "ladder", Title: "Try each rung with a stall timeout", Script: "01-run-ladder.sh", Pins: []string{"LLAMACPP_ROCM_IMAGE", "LLAMACPP_ROCM_NIGHTLY_IMAGE", "LLAMACPP_ROCM_PREBUILT_SHA256", "LLAMA_MODEL", "LLAMA_STALL_TIMEOUT"}, DependsOn: []string{"pull"}, Needs: []string{"LLAMA_MODEL"}},
			{ID: "verify", Title: "Report the ladder's result", Script: "02-verify.sh", DependsOn: []string{"ladder"}},
		},
		Next: []string{"cat $HALOFORGE_STATE_DIR/llamacpp-rocm/ladder.json"},
	},
	// llamacpp-distro: appended; the distribution's own llama.cpp packages.
	{
		ID:     "llamacpp-distro",
		Title:  "llama.cpp from your distribution's packages (Vulkan or HIP)",
		Status: StatusStable,
		Source: "2026: Debian sid / Ubuntu 26.04 / Fedora package ROCm and llama.cpp",
		Description: "No build at all: a distrobox from Debian sid (or Ubuntu 26.04, or Fedora) with the " +
			"distribution's llama.cpp (llama-server, llama-bench, llama-cli, ggml-rpc-server) and its ggml " +
			"GPU backend. The backend is chosen from your machine: HIP when /dev/kfd works and the " +
			"distribution's HIP build has code for your GPU, else Vulkan (Debian sid's ROCm 6.4 build has " +
			"no gfx1151 code in November 2026, so a Strix Halo gets Vulkan/RADV). The verify step runs " +
			"llama-bench on that backend and passes only when it reports it (not CPU): with LLAMA_MODEL, on " +
			"your model with its speeds; without one, on a tiny random-weight model written on the spot with " +
			"python3-gguf (proof that kernels run, no speed claim). Pick it for GGUF models in minutes, to " +
			"check a box before a long build, or as the base of haloforge serve and bench.",
		Pros:           []string{"minutes, not hours: nothing is compiled", "the distribution keeps it updated", "proves the GPU backend runs, even without a model"},
		Cons:           []string{"the distribution's llama.cpp build, not the newest tag", "HIP only where the distribution built it for your GPU"},
		GFX:            []string{"gfx1151", "gfx1150", "gfx1100", "gfx1101", "gfx1102", "gfx1030", "gfx90a"},
		Requires:       []string{"podman and distrobox", "/dev/dri (Vulkan) or /dev/kfd (HIP) reachable (groups render, video)", "about 2 GB free disk (Vulkan), 3 GB more for HIP"},
		BlockingChecks: []detect.CheckID{detect.CheckContainerEngine, detect.CheckDistrobox},
		Steps: []Step{
			{ID: "toolbox", Title: "Create the distrobox box", Script: "00-setup-box.sh", Pins: []string{"LLAMACPP_DISTRO_BOX", "LLAMACPP_DISTRO_IMAGE"}},
			{ID: "packages", Title: "Install llama.cpp and the GPU backend from the distribution", Script: "01-install-packages.sh", Pins: []string{"LLAMACPP_DISTRO_BACKEND"}, DependsOn: []string{"toolbox"}},
			{ID: "verify", Title: "llama-bench on the GPU backend", Script: "02-verify.sh", Pins: []string{"LLAMA_MODEL"}, DependsOn: []string{"packages"}},
		},
		Next: []string{
			"haloforge serve --track llamacpp-distro --model <model>.gguf",
			"haloforge bench --track llamacpp-distro --model <model>.gguf",
			"distrobox enter $LLAMACPP_DISTRO_BOX -- llama-server -m <model>.gguf -ngl 999 --host 127.0.0.1",
		},
		Serve: &ServeSpec{Engine: "llama.cpp", BoxPin: "LLAMACPP_DISTRO_BOX", ModelPin: "LLAMA_MODEL"},
	},
}
