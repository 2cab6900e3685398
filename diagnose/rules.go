package diagnose

import (
	"slices"
	"strconv"
)

// rules is the failure taxonomy (testdata/FAILURES.md) as data: one entry per
// family, in the same order. Links are the public threads the shared
// corpus took its excerpts from. The wording of each signature was checked
// against those excerpts; seed families use the design notes' signature.
//
// To add a family: add real excerpts with their threads and dates to the
// wordings corpus first (testdata/coverage.jsonl, near misses as "none"
// rows; corpus.jsonl is a copy of the shared corpus, the held-out sets
// stay blind), then a Rule here with literals of at least minLiteral bytes
// that the excerpts hold verbatim, a regexp, context or veto context
// (unless) only where the literal alone would fire on healthy output or on
// another cause's, and regenerate TUTORIAL.md
// (go test ./diagnose -run TestTutorialReference -update). A hang family
// has no error line to fix, so it also gets a Ladder: what to try, cheapest
// first (a kernel with the KFD fixes, linux-firmware without MES 0x83,
// cwsr_enable=0 as a stop-gap: ROCm#5590, #5724; the rows in
// testdata/FAILURES.md), naming the host facts of hostfacts.go.
var rules = withSignals([]Rule{
	{
		ID:      "therock-amdsmi-double-free",
		Title:   "Double free at exit after import torch (TheRock + amdsmi)",
		Summary: "glibc aborts with a double free when Python exits after importing a TheRock torch with the amdsmi package installed.",
		Cause:   "TheRock's rocm_sdk preloads the ROCm libraries with RTLD_GLOBAL; the standalone amdsmi package loads a second copy of the same amd::smi symbols, and both destructors run at exit.",
		Fix: "pip uninstall -y amdsmi   # in the venv that imports torch (vLLM's ROCm build requirements pull it in)\n" +
			"# or stop the global preload: in $(python -c 'import rocm_sdk,os;print(os.path.dirname(rocm_sdk.__file__))')/__init__.py\n" +
			"#   set rtld_global=False in preload_libraries() / initialize_process()",
		Links: issues("ROCm/TheRock#1059", "ROCm/TheRock#2269", "ROCm/ROCm#4909"),
		// glibc names the check that failed; the amdsmi clash is always (!prev).
		// Other double frees (a Vulkan allocation failure in llama.cpp#15256)
		// end in "(out)" and are not this family.
		pats: []pat{{lit: "double free or corruption (!prev)"}},
	},
	{
		ID:      "hip-invalid-device-function",
		Title:   "HIP invalid device function: no kernels for this GPU",
		Summary: "A kernel launch failed because the binary holds no code for this GPU's architecture.",
		Cause:   "torch, vLLM or llama.cpp was built or downloaded for other gfx targets than this GPU (gfx1151 on Strix Halo).",
		Fix: "export PYTORCH_ROCM_ARCH=gfx1151 GPU_ARCHS=gfx1151 VLLM_TARGET_DEVICE=rocm   # then rebuild\n" +
			"pip install --index-url https://rocm.nightlies.amd.com/whl-multi-arch/ \"torch[device-gfx1151]\"   # or wheels built for gfx1151\n" +
			"# last resort only: HSA_OVERRIDE_GFX_VERSION=11.0.0 (a spoof; see hsa-override-spoof-crash)",
		Links: issues("pytorch/pytorch#164346", "etched-ai/open-oasis#27", "ggml-org/llama.cpp#8504", "lllyasviel/Fooocus#1288"),
		pats: []pat{
			// CUDA prints the same words on NVIDIA, and ROCm builds of ggml and
			// of PyTorch on Windows print "CUDA error: …" too: only another
			// vendor's device in the stream, or CUDA's own API on the line
			// (caffe's "cudaSuccess", voxcraft's "CUDA Function Error"),
			// tells them apart.
			{lit: "invalid device function", unless: nvidiaContext, not: []string{"cudaSuccess", "CUDA Function Error"}},
			{lit: "hipErrorInvalidDeviceFunction"},
		},
	},
	{
		ID:      "hip-no-binary-for-gpu",
		Title:   "No code object for this GPU (hipErrorNoBinaryForGpu)",
		Summary: "The HIP loader found no code object for this GPU in a library or extension.",
		Cause:   "The library was compiled for other gfx targets; the loader reports it before any kernel runs.",
		Fix: "export PYTORCH_ROCM_ARCH=gfx1151 GPU_ARCHS=gfx1151 GPU_TARGETS=gfx1151   # rebuild the library named in the log\n" +
			"pip install --index-url https://rocm.nightlies.amd.com/whl-multi-arch/ \"torch[device-gfx1151]\"   # or wheels that include gfx1151\n" +
			"# last resort only: HSA_OVERRIDE_GFX_VERSION=11.0.0",
		Links: issues("lamikr/rocm_sdk_builder#246", "ggml-org/llama.cpp#19949"),
		pats: []pat{
			{lit: "hipErrorNoBinaryForGpu"},
			// ROCm ≤ 6.1's loader (ROCm/clr hip_code_object.cpp)
			{lit: "Unable to find code object for all current devices"},
			{lit: "No compatible code objects found"},
			{lit: "Missing CO for these ISAs"},
			// CUDA's wording too: an RTX 5090 under a torch without sm_120
			{lit: "no kernel image is available for execution", unless: nvidiaContext},
			// older HIP reports a fat binary without this arch as a failed
			// module initialisation
			{lit: "hipErrorSharedObjectInitFailed"},
			{lit: "shared object initialization failed"},
		},
	},
	{
		ID:      "hip-invalid-image",
		Title:   "Device kernel image is invalid",
		Summary: "The runtime rejected a code object built for a different or incompatible target.",
		Cause:   "The kernels were compiled for another gfx target, often under a wrong HSA_OVERRIDE_GFX_VERSION spoof.",
		Fix: "unset HSA_OVERRIDE_GFX_VERSION   # remove a spoof that does not match the build\n" +
			"export PYTORCH_ROCM_ARCH=gfx1151 GPU_ARCHS=gfx1151   # and rebuild for the real arch",
		Links: issues("charlie12345/vLLM_for_AMD#15"),
		pats: []pat{
			{lit: "device kernel image is invalid", unless: nvidiaContext},
			{lit: "hipErrorInvalidImage"},
			// the HSA runtime's names for a code object it cannot load
			{lit: "HSA_STATUS_ERROR_INVALID_CODE_OBJECT"},
			// HIP's text for hipErrorInvalidKernelFile: a code object file for
			// another target (danielblnc/DLSS-NR-on-AMD#29, gfx1201 kernels on gfx1200)
			{lit: "invalid kernel file"},
			{lit: "hipErrorInvalidKernelFile"},
			// the runtime's build log when it loads a code object for another
			// ISA, or one it cannot unpack (ROCm/clr devprogram.cpp, hip_fatbin.cpp)
			{lit: "is not compatible with the device ISA"},
			{lit: "Could not find the program ISA"},
			{lit: "Failed to unbundle code object"},
			{lit: "HSA_STATUS_ERROR_INVALID_ISA"},
		},
	},
	{
		ID:      "rocblas-tensile-missing-arch",
		Title:   "rocBLAS has no Tensile library for this GPU",
		Summary: "rocBLAS cannot read a TensileLibrary for this GPU arch: the installed rocBLAS was built without it.",
		Cause:   "The ROCm build lacks this architecture's Tensile kernels (distro ROCm or a per-arch wheel for another GPU).",
		Fix: "pip install --index-url https://rocm.nightlies.amd.com/whl-multi-arch/ \"rocm[libraries,devel,device-gfx1151]\"   # ROCm with gfx1151\n" +
			"ls $(rocm-sdk path --root)/lib/rocblas/library | grep gfx1151   # must list TensileLibrary files\n" +
			"# last resort only: HSA_OVERRIDE_GFX_VERSION=11.0.0",
		Links: issues("ROCm/AMDMIGraphX#3517"),
		pats: []pat{
			// Older rocBLAS prints no "for GPU arch" suffix, only the errno
			// ("Illegal seek", "No such file or directory").
			{lit: "TensileLibrary", re: `rocBLAS error: Cannot read .*TensileLibrary|Cannot read .*TensileLibrary.*for GPU arch`},
			// hipBLASLt's copy of the same Tensile loader (ollama/ollama#11555):
			// "rocblaslt error: Cannot read …/TensileLibrary_lazy_gfx1201.dat"
			{lit: "TensileLibrary", re: `(?i)(rocblaslt|hipblaslt) error: (Cannot read|Could not load) .*TensileLibrary`},
			// any loader wording for the arch's Tensile file: rocBLAS also says
			// "Could not load …TensileLibrary_lazy_gfx1103.dat"
			// (likelovewant/ROCmLibs-for-gfx1103-AMD780M-APU#12)
			{lit: "TensileLibrary", re: `(?i)(cannot|could not|unable to|failed to) (read|load|find|open) .*TensileLibrary`},
			// no code objects for the arch, and a bundle without the library
			// directory at all (ROCm/rocBLAS tensile_host.cpp)
			{lit: "ROCBLAS_TENSILE_LIBPATH is set correctly"},
			{lit: "directory iterator cannot open directory", re: `(?i)(rocblas|hipblaslt|tensile)`},
			// the same message with the path wrapped onto the next line
			// (ROCm/rocBLAS#1267)
			{lit: "TensileLibrary", after: []string{"rocBLAS error: Cannot read"}, within: 1},
		},
	},
	{
		ID:      "gfx-arch-not-in-allowlist",
		Title:   "gfx1151 missing from an upstream allow-list",
		Summary: "A build or import refused this GPU because the project's list of supported architectures lacks it.",
		Cause:   "Upstream allow-lists (vLLM CMake, AITER chip_info, Tensile, rocWMMA) lag new hardware.",
		Fix: "# vLLM: add gfx1151 to HIP_SUPPORTED_ARCHS in CMakeLists.txt (haloforge's patch step does this)\n" +
			"grep -n HIP_SUPPORTED_ARCHS CMakeLists.txt\n" +
			"# otherwise move the pin to a release that lists gfx1151, or leave the component out (AITER, rocWMMA paths are optional)",
		Links: issues("ROCm/TheRock#154", "ROCm/TheRock#2221", "ROCm/rocm-libraries#4618", "ROCm/TheRock#2127"),
		pats: []pat{
			{lit: "ROCm architectures", re: `None of the detected ROCm architectures.*is supported`},
			// CMake re-wraps the message: "is supported" lands on the next line
			{lit: "None of the detected ROCm architectures"},
			// AITER's kernel tables and TheRock's rocm sdist (aiter chip_info.py,
			// TheRock rocm/setup.py)
			{lit: "Unknown LDS capacity for architecture"},
			{lit: "is not available in the distribution", re: `ROCM_SDK_TARGET_FAMILY=\S+ is not available in the distribution`},
			// an RDNA 3/3.5/4 target named on a line that refuses it, in any
			// tool's words; not a warning that carries on
			{lit: " not supported", re: `\bgfx1[12]\d[\da-f]\b.*\bnot supported\b|\bnot supported\b.*\bgfx1[12]\d[\da-f]\b`,
				not: []string{"arning", "WARN", "fall back", "falling back", "fallback", "Falling back", "skipping", "One of GPU archs", "Flash-Attention", "target feature"}},
			{lit: "nsupported GPU", re: `(?i)unsupported gpu.*\bgfx1[12]\d[\da-f]\b|\bgfx1[12]\d[\da-f]\b.*unsupported gpu`,
				not: []string{"arning", "WARN", "fall back", "falling back", "fallback", "Falling back", "skipping", "One of GPU archs", "Flash-Attention", "target feature"}},
			{lit: "KeyError: 'gfx"},
			{lit: "Architecture gfx", re: `Architecture gfx\w+ (is )?not supported`},
			{lit: "Unsupported GPU target"},
			// AITER's chip_info and projects that copy its arch table
			// (ROCm/aiter#1552, gpustack/gpustack#3880)
			{lit: "Unknown GPU architecture: gfx"},
			{lit: "Unsupported architecture", re: `(error|assert).*Unsupported architecture`},
			// AITER's JIT build-target table (aiter/jit/utils/build_targets.py):
			// "Unknown gfx 'gfx1100' in GPU_ARCHS — add it to GFX_CU_NUM_MAP",
			// raised for any arch the table lacks, with or without a GPU
			// (ROCm/aiter#4512).
			{lit: "Unknown gfx 'gfx"},
			// ollama's own allow-list, and its iGPU filter
			{lit: "amdgpu is not supported", re: `amdgpu is not supported \(supported types`},
			{lit: "unsupported Radeon iGPU detected"},
			{lit: "architecture gfx", re: `architecture gfx\w+ (is )?not supported`},
			// rocRoller parses the arch name into its own enum and aborts on
			// one it lacks: "Invalid fromString: type name:
			// N9rocRoller18GPUArchitectureGFXE, string input: gfx1150"
			// (ROCm/rocm-libraries#3377).
			{lit: "string input: gfx", re: `GPUArchitectureGFX\w*, string input: gfx[0-9a-f]+`},
		},
	},
	{
		ID:      "cmake4-policy-version-minimum",
		Title:   "CMake 4 rejects an old cmake_minimum_required",
		Summary: "CMake ≥ 4 stopped accepting projects that declare compatibility with CMake < 3.5.",
		Cause:   "Old third_party CMakeLists (protobuf, psimd, FP16, NNPACK, ittapi, gloo, ideep) still say cmake_minimum_required(VERSION 2.x/3.0).",
		Fix: "export CMAKE_POLICY_VERSION_MINIMUM=3.5   # then re-run the build\n" +
			"# or bump cmake_minimum_required to 3.5 in the third_party CMakeLists.txt named in the error",
		Links: issues("pytorch/pytorch#150167", "pytorch/pytorch#150328", "ROCm/TheRock#1916"),
		// CMake 3.x prints a harmless deprecation warning with the same
		// opening ("… will be removed from a future version", pytorch#129906);
		// only CMake 4's error says "has been removed".
		pats: []pat{{lit: "Compatibility with CMake < 3.5", not: []string{"will be removed"}}},
	},
	{
		ID:      "pip-cmake-broken-shim",
		Title:   "A pip-installed cmake shadows the system one",
		Summary: "The cmake on PATH is a pip wheel's shim that cannot find its own files or the venv's Python.",
		Cause:   "pip installed the cmake package into the venv (often as a build dependency); its bin/cmake wins over /usr/bin/cmake.",
		Fix: "pip uninstall -y cmake\n" +
			"hash -r; which cmake   # must print /usr/bin/cmake",
		Links: issues("scikit-build/cmake-python-distributions#557", "actions/runner-images#10941", "vllm-project/vllm#6999"),
		pats: []pat{
			{lit: "Could not find CMAKE_ROOT"},
			{lit: "No module named 'cmake'"},
			{lit: "Unable to find python matching"},
		},
	},
	{
		ID:      "two-torch-pybind-already-registered",
		Title:   "Two torch builds loaded in one process",
		Summary: "pybind11 refused to register a torch type twice: two copies of torch were imported.",
		Cause:   "A torch source tree on PYTHONPATH, a user-site install or a second wheel is loaded next to the installed torch.",
		Fix: "export PYTHONNOUSERSITE=1 PYTHONPATH=   # build and run without the user site or a source tree\n" +
			"python -c 'import torch; print(torch.__file__)'   # must point into the venv\n" +
			"# after installing the wheel, remove or move away the PyTorch source tree",
		Links: issues("pytorch/pytorch#21363", "pytorch/pytorch#32270", "pytorch/vision#1897"),
		pats: []pat{
			{lit: "generic_type: cannot initialize type"},
			// two torch builds registering one operator namespace, and torch
			// imported from its source tree (pytorch library.cpp, torch/__init__.py)
			{lit: "Only a single TORCH_LIBRARY can be used to register the namespace"},
			{lit: "folder of the PyTorch repository"},
			{lit: "is already registered", re: `type "[^"]+" is already registered`},
		},
	},
	{
		ID:      "fbgemm-genai-link",
		Title:   "FBGEMM GenAI cannot link on ROCm",
		Summary: "The PyTorch build tries to link FBGEMM GenAI, which is CUDA-oriented and not built on this ROCm target.",
		Cause:   "USE_FBGEMM_GENAI defaults on for ROCm builds of recent PyTorch; its gen_ai library is missing for gfx11.",
		Fix: "export USE_FBGEMM_GENAI=0   # then rebuild PyTorch\n" +
			"# and drop fbgemm_genai from the link line if a patch still adds it",
		Seed:  true,
		Links: issues("pytorch/FBGEMM#3126"),
		pats:  []pat{{lit: "-lfbgemm_genai"}},
	},
	{
		ID:      "fbgemm-genai-rocm-build",
		Title:   "FBGEMM GenAI fails to compile on ROCm",
		Summary: "FBGEMM's experimental gen_ai kernels need composable_kernel headers that this ROCm does not have.",
		Cause:   "FBGEMM GenAI on ROCm tracks a newer composable_kernel than the installed one and only targets gfx94x.",
		Fix:     "export USE_FBGEMM_GENAI=0   # then rebuild PyTorch (TheRock disables it except on gfx94X)",
		Links:   issues("pytorch/FBGEMM#3126"),
		pats: []pat{
			{lit: "file not found", re: `gen_ai/.*error: '(ck|ck_tile)/[^']+' file not found`},
			// The build tool's own failure line for a gen_ai object, when the
			// compiler's error scrolled off or was not quoted (ROCm/TheRock#1408):
			// ninja's FAILED and make's "*** [target] Error".
			{lit: "experimental/gen_ai/", re: `(^|\s)FAILED: .*fbgemm_gpu/experimental/gen_ai/`},
			{lit: "experimental/gen_ai/", re: `gen_ai/.*fatal error: (ck|ck_tile)/\S+: No such file or directory`},
			{lit: "fbgemm_genai.dir/", re: `(^|\s)FAILED: .*fbgemm_genai\.dir/`},
			{lit: "experimental/gen_ai/", re: `\*\*\* \[[^]]*fbgemm_gpu/experimental/gen_ai/[^]]*\] Error \d+`},
		},
	},
	{
		ID:      "rocm-device-lib-not-found",
		Title:   "clang cannot find the ROCm device libraries",
		Summary: "The HIP compiler cannot find the bitcode device libraries (ocml.bc and friends).",
		Cause:   "With the pip-installed ROCm SDK the bitcode lives under the SDK root, not /opt/rocm, and clang is not told where.",
		Fix: "export ROCM_PATH=$(rocm-sdk path --root) ROCM_HOME=$(rocm-sdk path --root)\n" +
			"export HIP_DEVICE_LIB_PATH=$ROCM_PATH/lib/llvm/amdgcn/bitcode\n" +
			"export HIPFLAGS=\"--rocm-device-lib-path=$HIP_DEVICE_LIB_PATH\"",
		Links: issues("ROCm/hipCUB#179", "ROCm/ROCR-Runtime#110", "ROCm/ROCm-Device-Libs#81"),
		pats: []pat{
			{lit: "cannot find ROCm device library"},
			// clang's wording when the whole ROCm tree is not where it looks
			{lit: "cannot find HIP runtime"},
			// torch's extension builder without a ROCm root (cpp_extension.py)
			{lit: "ROCM_HOME environment variable is not set"},
			{lit: "cannot find device library"},
			// clang ≤ 11 said "installation" for the same missing device
			// libraries (hence -nogpulib), ROCm/hip#2086
			{lit: "cannot find ROCm installation"},
			{lit: "ocml.bc: No such file"},
			{lit: "ocml.bc' not found"},
			{lit: "ocml.bc not found"},
			// CMake projects that look for the bitcode themselves:
			// "ROCm Device Libs not found. Use -DROCM_DEVICE_LIB_DIR=…"
			// (ROCm/hcc#1078)
			{lit: "Device Libs not found", re: `ROCm Device Libs not found`},
		},
	},
	{
		ID:      "therock-hip-lang-cmake-missing",
		Title:   "ROCm SDK root lacks the HIP CMake package",
		Summary: "CMake cannot find the HIP package (hip-lang-config.cmake or hip-config.cmake) under the ROCm root it was given.",
		Cause:   "The devel wheel of TheRock's ROCm SDK is missing, `rocm-sdk init` has not unpacked it, or the build looks for ROCm under /opt/rocm instead of the SDK root.",
		Fix: "pip install --index-url https://rocm.nightlies.amd.com/whl-multi-arch/ \"rocm[libraries,devel,device-gfx1151]\"\n" +
			"rocm-sdk init\n" +
			"ls $(rocm-sdk path --root)/lib/cmake/hip-lang/hip-lang-config.cmake $(rocm-sdk path --root)/lib/cmake/hip/hip-config.cmake\n" +
			"export ROCM_PATH=$(rocm-sdk path --root) CMAKE_PREFIX_PATH=$(rocm-sdk path --root)   # llama.cpp's ggml-hip reads ROCM_PATH, not HIP_PATH",
		Links: issues("ROCm/TheRock#2177"),
		pats: []pat{
			{lit: "Failed to find ROCm root directory"}, // CMakeDetermineHIPCompiler: no root at all
			// rocm_sdk without its devel package, or with a broken one (_devel.py)
			{lit: "rocm_sdk_devel module for the ROCm SDK development package is not installed"},
			{lit: "No distribution candidates found for 'rocm_sdk_devel'"},
			{lit: "Expected to find _devel.tar"},
			{lit: "does not contain the HIP runtime CMake package"},
			{lit: `provided by "hip-lang"`},
			// find_package(hip) in config mode, CMake's own wording for a
			// missing hip-config.cmake: llama.cpp's ggml-hip with pip-installed
			// ROCm (ggml-org/llama.cpp#26060), rocBLAS's find_dependency
			// (ROCm/pytorch#361). The closing quote keeps hipblas & co. out.
			{lit: `provided by "hip"`},
		},
	},
	{
		ID:      "vllm-torch-version-conflict",
		Title:   "The vLLM build replaced the ROCm torch",
		Summary: "pip pulled vLLM's pinned torch over the ROCm torch (or into an isolated build env).",
		Cause:   "vLLM's requirements pin an exact torch; with build isolation or a plain pip install it downloads that (CUDA) torch.",
		Fix: "python use_existing_torch.py   # in the vLLM checkout: drops the torch pins from the requirements\n" +
			"pip install -r requirements/build/rocm.txt   # requirements/rocm-build.txt before Apr 2026\n" +
			"pip install --no-build-isolation -v .\n" +
			"python -c 'import torch; print(f\"torch=={torch.__version__}\")' > torch.constraint\n" +
			"pip install -c torch.constraint …   # later installs keep the ROCm torch or fail loudly",
		Links:       issues("vllm-project/vllm#34224", "vllm-project/vllm#6200", "SystemPanic/vllm-windows#20"),
		ExceptSteps: []string{"rocm", "env", "install", "pytorch", "base"},
		pats: []pat{
			{lit: "requires torch==", re: `requires torch==\S+,? but you have torch`},
			// pip ≤ 20.2's wording of the same conflict
			{lit: "has requirement torch", re: `has requirement torch\S*, but you'll have torch`},
			// the resolvers refusing vLLM's pin outright: uv (hiyouga/LlamaFactory#8309)
			// and pip's ResolutionImpossible (NineAbyss/S2R#2); a line with an
			// environment marker is another platform's build (vllm-ascend#9225)
			{lit: "depends on torch==", re: `Because vllm\S* depends on torch==|^\s*vllm [\d.]+\S* depends on torch==[^;]*$`},
			// torch's extension builder finding a torch that is not a ROCm
			// build, and vLLM's CMake finding an older torch than it needs
			{lit: "No ROCm runtime is found, using ROCM_HOME"},
			{lit: "expected for ROCm build, saw"},
			{lit: "Attempting uninstall: torch", re: `Attempting uninstall: torch\s*$`},
			{lit: "Successfully uninstalled torch-"},
			{lit: "Collecting torch==", after: []string{"install build dependencies"}, within: 200},
		},
	},
	{
		ID:      "gfx11-inline-asm-unsupported",
		Title:   "CDNA-only inline assembly on an RDNA GPU",
		Summary: "Kernels with CDNA (MI200/MI300) assembly do not assemble for RDNA 3/3.5.",
		Cause:   "AITER and some custom kernels use instructions, registers or DPP modes that gfx11 does not have.",
		Fix: "# AITER is optional on gfx1151: skip its step and keep it off at runtime\n" +
			"unset VLLM_ROCM_USE_AITER   # never VLLM_ROCM_USE_AITER=1 on gfx1151",
		Links: issues("vllm-project/vllm#6565", "ROCm/MIOpen#3793", "ROCm/MIOpen#1528", "ROCm/TheRock#154", "ROCm/ROCm#2685"),
		pats: []pat{
			{lit: "instruction not supported on this GPU"},
			{lit: "directive requires gfx"},
			// newer LLVM's wording for a CDNA-only hardware register
			{lit: "hardware register is not supported on this GPU"},
			// AITER's own report of a JIT module that did not build: on gfx1151
			// that is its CDNA code, and the fix is to leave AITER out
			{lit: "failed jit build ["},
			{lit: "invalid hardware register"},
			{lit: "not a valid operand", re: `error: not a valid operand`},
			// The assembler's other wording for the same CDNA-only asm, e.g.
			// wave64 "v_cmpx_le_u32 exec, …" in ck_tile on RDNA
			// (ROCm/composable_kernel#1646); the inline asm it points at is
			// quoted only on the lines after it.
			{lit: "error: invalid operand for instruction"},
			{lit: "not valid for this GPU or mode"},
			{lit: "Invalid dpp_ctrl value"},
		},
	},
	{
		ID:      "aiter-fp8-conversion-insts-gfx11",
		Title:   "AITER fp8 code needs CDNA3 instructions",
		Summary: "AITER's fp8 conversion builtins need the fp8-conversion-insts feature, absent on RDNA 3/3.5.",
		Cause:   "AITER compiles fp8 paths eagerly; gfx1151 has no fp8 conversion instructions.",
		Fix: "# AITER is optional on gfx1151: skip its step and keep it off at runtime\n" +
			"unset VLLM_ROCM_USE_AITER",
		Links: issues("ROCm/aiter#3860"),
		pats: []pat{
			{lit: "needs target feature fp8-conversion-insts"},
			{lit: "needs target feature fp8-insts"}, // AITER's fp8 MFMA builtins
		},
	},
	{
		ID:      "vllm-aiter-arch-invalid",
		Title:   "AITER enabled on an unsupported GPU",
		Summary: "vLLM's AITER path rejected gfx1151 as an unsupported arch.",
		Cause:   "VLLM_ROCM_USE_AITER=1 turns on AITER, and this AITER lists no kernels for the GPU (gfx1151 is experimental in AITER from v0.1.12; most of its CK and asm kernels are CDNA-only).",
		Fix:     "unset VLLM_ROCM_USE_AITER   # or export VLLM_ROCM_USE_AITER=0",
		Seed:    true,
		pats: []pat{
			// The assertion is AITER's own JIT arch check: a standalone AITER
			// build raises it too (ROCm/aiter#4512), where unsetting
			// VLLM_ROCM_USE_AITER means nothing. Only vLLM's use of AITER is
			// this family, so the stream must show vLLM before it: the switch
			// itself, vLLM's start-up line or a vLLM frame in the traceback.
			{lit: "One of GPU archs of", re: `One of GPU archs of .* is invalid or not supported`, not: []string{"Flash-Attention"},
				after: vllmContext},
		},
	},
	{
		ID:      "llamacpp-rocm-load-hang-sdma",
		Title:   "llama.cpp hangs while loading the model (SDMA)",
		Summary: "Output stopped during model load on the ROCm backend: the upload is stuck on the APU's SDMA path.",
		Cause:   "hipMemcpy from mmap'ed pageable memory stops signalling completion on gfx1151's SDMA engine; the runtime busy-waits forever.",
		Fix: "export HSA_ENABLE_SDMA=0   # copy with shaders instead of SDMA\n" +
			"llama-server --no-mmap …   # or load without mmap\n" +
			"# still stuck: use the llamacpp-vulkan track",
		Links:  issues("charlie12345/ROCmFPX#39"),
		Tracks: []string{"llamacpp-rocm", "ollama"},
		Stall:  true,
		Ladder: []Rung{
			{"Confirm it is the load hang", "the log ends at `load_all_data: using async uploads for device ROCm0` and nothing follows for minutes; that line alone is normal"},
			{"Copy without SDMA", "export HSA_ENABLE_SDMA=0, then start llama.cpp again"},
			{"Load without mmap", "llama-server --no-mmap … (pageable mmap memory is what stalls the SDMA path)"},
			{"Check kernel and firmware", "haloforge doctor: kernel-version (the KFD fixes: " + fixedKernels + "), mes-firmware not 0x83, linux-firmware ≥ " + fixedFirmware},
			{"Fall back to Vulkan", "haloforge build --track llamacpp-vulkan"},
		},
		pats: []pat{
			{lit: "load_all_data: using async uploads", marker: true},
			{lit: "load_tensors: loading model tensors", marker: true},
			{lit: "BusyWaitSignal::WaitRelaxed", after: []string{"::load_all_data", "load_all_data: "}, within: 30},
		},
	},
	{
		ID:      "llamacpp-rocm-graph-reserve-hang",
		Title:   "llama.cpp hangs reserving the compute graph",
		Summary: "Output stopped at graph_reserve: the first GPU kernels never finished on the ROCm backend.",
		Cause:   "A ROCm kernel execution hang on gfx1151 (ROCm#5534 family), fixed in newer kernels and ROCm.",
		Fix: "haloforge doctor   # kernel-version: the KFD fixes (" + fixedKernels + "); without them add amdgpu.cwsr_enable=0\n" +
			"# update ROCm to the pinned TheRock release; still stuck: use the llamacpp-vulkan track",
		Links:  issues("ROCm/ROCm#5534"),
		Tracks: []string{"llamacpp-rocm", "ollama"},
		Stall:  true,
		Seed:   true,
		Ladder: []Rung{
			{"Confirm it is the graph hang", "the log ends at `graph_reserve: reserving a graph for ubatch` and nothing follows"},
			{"Check kernel and firmware", "haloforge doctor: kernel-version (the KFD fixes: " + fixedKernels + "), mes-firmware not 0x83, linux-firmware ≥ " + fixedFirmware},
			{"Stop-gap on older kernels", "add amdgpu.cwsr_enable=0 to the kernel command line and reboot; drop it once the KFD topology lists cwsr_size"},
			{"Newer ROCm", "bump ROCM_VERSION in versions.env to the pinned TheRock release; haloforge pins diff shows what re-runs"},
			{"Fall back to Vulkan", "haloforge build --track llamacpp-vulkan"},
		},
		pats: []pat{
			{lit: "graph_reserve: reserving a graph", marker: true},
			{lit: "BusyWaitSignal::WaitRelaxed", after: []string{"::graph_reserve", "graph_reserve: "}, within: 30},
		},
	},
	{
		ID:      "amdgpu-mes-hang",
		Title:   "MES firmware hang (ring timeout)",
		Summary: "The kernel driver reports a ring timeout or an unresponsive MES: the GPU's scheduler firmware hung.",
		Cause:   "A MES firmware bug (0x83 in linux-firmware " + badFirmware + ") or a kernel without the gfx1151 KFD fixes (" + fixedKernels + ").",
		Fix: "sudo grep MES /sys/kernel/debug/dri/*/amdgpu_firmware_info   # 0x83 hangs; no other version is known to\n" +
			"# install linux-firmware ≥ " + fixedFirmware + " (avoid " + badFirmware + ") and a kernel with the KFD fixes (" + fixedKernels + "), rebuild the initramfs, then reboot",
		Links: issues("ROCm/ROCm#6273", "ROCm/ROCm#2196", "ROCm/ROCm#5724"),
		Ladder: []Rung{
			{"Read the firmware version", "sudo grep MES /sys/kernel/debug/dri/*/amdgpu_firmware_info: 0x83 is the bad one"},
			{"Update linux-firmware", "≥ " + fixedFirmware + " (the MES 0x83 revert); avoid " + badFirmware + "; then rebuild the initramfs"},
			{"Update the kernel", fixedKernels + " carry the KFD/CWSR fixes for gfx1151 (haloforge doctor, check kernel-version)"},
			{"Collect a bundle", "haloforge doctor --collect DIR, attach it to a ROCm issue"},
		},
		pats: []pat{
			{lit: "MES failed to respond to msg"},
			{lit: "MES failed to response msg"}, // older kernels' spelling
			// newer MES code names the instance: "MES(0, 0) failed to respond
			// to msg=…"; and the lines around a wedged MES (mes_v11_0.c,
			// amdgpu_mes.c, kfd_device_queue_manager.c)
			{lit: "failed to respond to msg=", re: `MES\(\d+, ?\d+\) failed to respond to msg=`},
			{lit: "MES ring buffer is full"},
			{lit: "failed to reg_write_reg_wait"},
			{lit: "hardware queue from MES"},
			{lit: "hardware queue to MES"},
			{lit: "MES might be in unrecoverable state"},
			{lit: "timeout, signaled seq=", re: `ring (gfx|comp)_[\d.]+ timeout`},
			// the same hang seen from the copy engine's ring
			{lit: "timeout, signaled seq=", re: `ring sdma\d+ timeout`},
		},
	},
	{
		ID:      "gpu-hang-cwsr",
		Title:   "GPU hang (CWSR/MES) reported by the runtime",
		Summary: "The HSA runtime reported a hardware exception: the GPU hung.",
		Cause:   "Compute wave save/restore (CWSR) and MES hangs on gfx1151 with kernels without the KFD fixes (" + fixedKernels + ").",
		Fix: "haloforge doctor   # kernel-version and cwsr: the KFD fixes are in " + fixedKernels + "\n" +
			"# on a kernel without them only: add amdgpu.cwsr_enable=0 to the kernel command line and reboot",
		Links: issues("segurac/force-host-alloction-APU#2", "ROCm/ROCm#5590"),
		Ladder: []Rung{
			{"Check the kernel", "haloforge doctor, check cwsr: a kernel with the fix lists cwsr_size in the KFD topology"},
			{"Stop-gap on older kernels", "amdgpu.cwsr_enable=0 on the kernel command line, then reboot"},
			{"Check the firmware", "haloforge doctor, check mes-firmware: 0x83 hangs"},
			{"Collect a bundle", "haloforge doctor --collect DIR, attach it to a ROCm issue"},
		},
		pats: []pat{
			{lit: "HW Exception by GPU node"},
			{lit: "reason :GPU Hang"},
			// a queue aborted on a hardware exception (ROCm/clr rocdevice.cpp)
			{lit: "HSA_STATUS_ERROR_EXCEPTION"},
		},
	},
	{
		ID:      "gpu-page-fault",
		Title:   "GPU page fault in the kernel log",
		Summary: "amdgpu logged a GPU page fault: a kernel accessed memory it does not own.",
		Cause:   "A driver or firmware bug, or an invalid access by a kernel (often under an arch spoof).",
		Fix: "# update the kernel (" + fixedKernels + ") and linux-firmware, then retry\n" +
			"haloforge doctor --collect bundle/   # attach the bundle when you report it upstream",
		Links: issues("ROCm/rocm-libraries#1132"),
		pats: []pat{
			{lit: "page fault (src_id:", re: `\[(gfx|mm)hub\d*\]`},
			// GCVM_ on gfx11, MMVM_ and VM_ on other hubs and older GPUs
			{lit: "L2_PROTECTION_FAULT_STATUS"},
			{lit: "Faulty UTCL2 client ID"},
		},
	},
	{
		ID:      "gpu-memory-access-fault",
		Title:   "Memory access fault by GPU",
		Summary: "The HSA runtime killed the process after a GPU memory access fault.",
		Cause:   "An invalid access, most often kernels built for another arch running under HSA_OVERRIDE_GFX_VERSION.",
		Fix: "unset HSA_OVERRIDE_GFX_VERSION   # remove the spoof\n" +
			"# use native gfx1151 builds (therock-toolbox track)",
		Links: issues("ollama/ollama#12131"),
		pats: []pat{
			{lit: "Memory access fault by GPU"},
			// the fault's reason and the HSA status names for it
			{lit: "Page not present or supervisor privilege"},
			{lit: "HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION"},
			{lit: "HSA_STATUS_ERROR_MEMORY_FAULT"},
			// HIP's own report of the same fault, as PyTorch raises it
			// (ROCm/ROCm#5245): hipErrorIllegalAddress.
			{lit: "an illegal memory access was encountered", re: `HIP error: an illegal memory access was encountered`},
			{lit: "hipErrorIllegalAddress"},
		},
	},
	{
		ID:      "hsa-memory-in-use",
		Title:   "HSA memory critical error: memory in use",
		Summary: "The HSA runtime aborted with a memory critical error (memory in use).",
		Cause:   "A ROCm runtime memory-management bug, triggered under memory pressure.",
		Fix: "# update ROCm to the pinned TheRock release\n" +
			"# lower memory pressure: smaller context or batch, vLLM --gpu-memory-utilization 0.85",
		Links: issues("ggml-org/llama.cpp#14999"),
		pats:  []pat{{lit: "Memory critical error by agent"}},
	},
	{
		ID:      "hip-oom-apu-gtt",
		Title:   "Out of GPU memory on the APU (GTT too small)",
		Summary: "A GPU allocation failed: the GTT pool the iGPU can use is smaller than the model needs.",
		Cause:   "TTM limits GTT to about half of RAM by default, and a large BIOS carve-out shrinks it further.",
		Fix: "# BIOS: set the UMA frame buffer (carve-out) to the minimum, 512 MB\n" +
			"# kernel command line: ttm.pages_limit=<GiB × 262144>, e.g. 124 GiB:\n" +
			"ttm.pages_limit=32505856 ttm.page_pool_size=32505856\n" +
			"vllm serve … --gpu-memory-utilization 0.90   # not higher on the APU",
		Links: issues("kyuz0/amd-strix-halo-vllm-toolboxes#11", "ROCm/TheRock#1054", "kyuz0/amd-strix-halo-toolboxes#65"),
		pats: []pat{
			{lit: "HIP out of memory"},
			{lit: "HIP error: out of memory"},
			// the HIP runtime's and ggml's own words (ROCm/clr hip_memory.cpp,
			// ggml-alloc.c, llama-model.cpp)
			{lit: "Allocation failed : Device memory"},
			{lit: "Video memory allocation failed"},
			{lit: "unable to allocate ROCm", re: `unable to allocate ROCm\d+ buffer`},
			{lit: "Available Free mem", re: `HSA_STATUS_ERROR_OUT_OF_RESOURCES.*Available Free mem`},
			// out of memory on a line that names the GPU side, in any tool's
			// words; not CUDA's, and not the host's malloc
			{lit: " out of memory", re: `(?i)\b(hip|rocm|gtt|vram|amdgpu|gpu)\b.*\bout of memory\b`,
				not: []string{"CUDA", "malloc failed", "Out of memory: Killed"}},
			// vLLM's own words when the memory it may use is too small
			{lit: "No available memory for the cache blocks"},
			// "… larger than the available KV cache memory … estimated maximum
			// model length is N" is vllm-max-model-len: the context, not the pool.
			{lit: "is less than desired GPU memory utilization"},
			{lit: "hipErrorOutOfMemory"},
			// ggml's HIP backend keeps CUDA's name in this message; on an
			// NVIDIA card it is that card's memory (llama.cpp#7293)
			{lit: "cudaMalloc failed: out of memory", unless: nvidiaContext},
			{lit: "failed to allocate ROCm", re: `failed to allocate ROCm\d+ buffer`},
			// hipErrorOutOfMemory's text ("out of memory") after a ROCm/HIP
			// backend's own allocation message: ds4 prints "ROCm tensor alloc
			// failed: out of memory" (antirez/ds4#475), others "hipMalloc
			// failed: out of memory".
			{lit: "alloc failed: out of memory", re: `(ROCm|HIP|hip).*alloc failed: out of memory`},
			// ggml's HIP backend names its errors "ROCm error: …"; out of
			// memory there is hipErrorOutOfMemory (gpustack/gpustack#1547).
			{lit: "ROCm error: out of memory"},
		},
	},
	{
		ID:      "ttm-gtt-config",
		Title:   "Deprecated or mismatched GTT/TTM settings",
		Summary: "The kernel warns that amdgpu.gttsize is deprecated or disagrees with the TTM limit.",
		Cause:   "amdgpu.gttsize is deprecated; the GTT size now follows ttm.pages_limit.",
		Fix: "# kernel command line: remove amdgpu.gttsize=…, set (GiB × 262144):\n" +
			"ttm.pages_limit=32505856\n" +
			"# with amdgpu-dkms loaded also: amdttm.pages_limit=32505856",
		Links: issues("HarbourMasters/Shipwright#6048"),
		pats: []pat{
			{lit: "Configuring gttsize via module parameter is deprecated"},
			// a misspelt parameter, so no GTT change applies at all
			{lit: "unknown parameter 'gtt", re: `amdgpu: unknown parameter 'gtt\w*' ignored`},
			{lit: "GTT size has been set as", re: `GTT size has been set as .*TTM size has been set as`},
		},
	},
	{
		ID:      "vulkan-device-memory-limit",
		Title:   "Vulkan out of device memory",
		Summary: "A Vulkan allocation exceeded the device heap or the single-allocation limit.",
		Cause:   "The Vulkan heap follows GTT (ttm.pages_limit); AMDVLK also caps one buffer at 2 GiB.",
		Fix: "# kernel command line: ttm.pages_limit=<GiB × 262144>, e.g. 32505856 for 124 GiB\n" +
			"export VK_DRIVER_FILES=/usr/share/vulkan/icd.d/radeon_icd.x86_64.json   # RADV only, not AMDVLK (VK_ICD_FILENAMES on older loaders)\n" +
			"vulkaninfo --summary | grep -i driverName   # must say radv",
		Links: issues("ggml-org/llama.cpp#15009"),
		pats: []pat{
			// not ggml's pinned host memory: it falls back to a plain buffer
			{lit: "ErrorOutOfDeviceMemory", not: []string{"pinned memory"}},
			// the C API's name for it (Mesa, TVM; mlc-ai/mlc-llm#974, llama.cpp#8492's title)
			{lit: "VK_ERROR_OUT_OF_DEVICE_MEMORY"},
			{lit: "exceeds device memory allocation limit"},
			// ggml's Vulkan backend in its own words
			{lit: "Device memory allocation of size", re: `Device memory allocation of size \d+ failed`},
			// RADV out of GTT for a submission's buffers (leejet/stable-diffusion.cpp#2015)
			{lit: "Not enough memory for command submission"},
			// ggml's Vulkan back end: its older wording, and buffers named Vulkan0
			{lit: "Memory allocation of size", re: `ggml_vulkan: Memory allocation of size \d+ failed`},
			{lit: "to allocate Vulkan", re: `(failed|unable) to allocate Vulkan\d+ buffer`},
			{lit: "Failed to allocate a buffer", re: `radv.*Failed to allocate a buffer`},
		},
	},
	{
		ID:      "kfd-permission-no-gpu",
		Title:   "No access to the GPU (/dev/kfd)",
		Summary: "ROCm sees no usable GPU: /dev/kfd or /dev/dri cannot be opened by this user or container.",
		Cause:   "The user is not in the render and video groups, the devices are not passed into the container, or nomodeset is set.",
		Fix: "sudo usermod -aG render,video $USER   # then log out and in\n" +
			"podman run --device /dev/kfd --device /dev/dri --group-add keep-groups …   # containers\n" +
			"grep -w nomodeset /proc/cmdline   # must print nothing",
		Links: issues("ROCm/ROCm#1758", "ROCm/ROCm#1070", "kyuz0/amd-strix-halo-toolboxes#53", "kyuz0/amd-strix-halo-toolboxes#16",
			"kyuz0/amd-r9700-vllm-toolboxes#1", "lemonade-sdk/vllm-rocm#13"),
		pats: []pat{
			{lit: "Unable to open /dev/kfd"},
			// at start-up (rocminfo, hsa_init); a queue that ran out of memory
			// says so with its free memory, and is hip-oom-apu-gtt
			{lit: "HSA_STATUS_ERROR_OUT_OF_RESOURCES", not: []string{"Available Free mem"}},
			{lit: "no ROCm-capable device is detected"},
			{lit: "No HIP GPUs are available"},
			// llama.cpp's ROCm back end failing to start, whatever it names
			{lit: "failed to initialize ROCm"},
			{lit: "hipErrorNoDevice"},
			{lit: "hipGetDeviceCount", re: `hipGetDeviceCount.*hipErrorInvalidDevice|hipErrorInvalidDevice.*hipGetDeviceCount`},
			{lit: "AMDSMI_STATUS_FILE_ERROR"},
			// rocminfo, the kernel and vLLM saying the GPU is not there for ROCm
			{lit: "ROCk module is NOT loaded"},
			// the kernel's KFD without this GPU's IP version; an old second GPU
			// named by its ASIC ("TOPAZ not supported in kfd") is harmless
			{lit: "not supported in kfd", re: `GC IP [0-9a-f]+ not supported in kfd`},
			// the BLAS libraries and ollama finding no GPU they may use
			{lit: "Tensile host: No devices found"},
			{lit: "permission problems block access"},
			// rocminfo in a container whose uid has no passwd entry
			{lit: "to check for video group"},
			{lit: "to check for render group"},
			{lit: "Failed to infer device type"},
			// AITER asking rocminfo for the arch and getting no GPU
			{lit: "Get GPU arch from rocminfo failed", not: []string{"Unknown GPU architecture"}}, // that one is the allow-list
			{lit: "No gfx arch found in rocminfo output"},
			// Opening the GPU's device nodes themselves is refused, in a
			// container or not (containers/podman#25897: a render node under
			// keep-groups with the wrong runtime).
			{lit: ": Permission denied", re: `/dev/(kfd|dri/renderD\d+)'?: Permission denied`},
		},
	},
	{
		ID:      "distrobox-podman-device-group",
		Title:   "Container created without GPU devices or groups",
		Summary: "The container cannot use the GPU: devices were not added, or a named group does not map under rootless podman.",
		Cause:   "Rootless podman ignores or rejects named --group-add groups; devices must be passed explicitly.",
		Fix: "distrobox rm <name>\n" +
			"distrobox create -n <name> --image <image> --additional-flags \"--device /dev/kfd --device /dev/dri --group-add keep-groups --security-opt seccomp=unconfined\"",
		Links: issues("kyuz0/amd-strix-halo-vllm-toolboxes#53", "hydrian/stable-diffusion-webui-rocm#17", "Firstbober/rocm-pytorch-gfx803-docker#4", "ollama/ollama#6685"),
		pats: []pat{
			{lit: "unable to find group render"},
			{lit: "unable to find group video"},
			// podman wraps it when it looks up supplemental groups (jvdillon/netv#10)
			{lit: "Unable to find group render"},
			{lit: "Unable to find group video"},
			{lit: "error gathering device information while adding custom device"},
			{lit: "the default DRM access group"},
			// podman refusing keep-groups with other groups, or remotely
			{lit: "option is not allowed with any other --group-add"},
			{lit: "keep-groups' option is not supported in remote mode"},
			// Any named group the engine cannot map, e.g. docker taking
			// podman's keep-groups for a group name (lamikr/rocm_sdk_builder#247).
			{lit: "no matching entries in group file", re: `(?i)unable to find group \S+: no matching entries in group file`},
		},
	},
	{
		ID:      "sdpa-flash-attn-not-available",
		Title:   "Flash attention not available in torch",
		Summary: "scaled_dot_product_attention found no flash or memory-efficient kernel (AOTriton off or not built).",
		Cause:   "AOTriton flash attention is experimental on gfx11 and disabled at runtime, or torch was built without it.",
		Fix: "export TORCH_ROCM_AOTRITON_ENABLE_EXPERIMENTAL=1   # before importing torch\n" +
			"# building torch: export USE_FLASH_ATTENTION=1 USE_MEM_EFF_ATTENTION=1 (therock-aotriton track)\n" +
			"export FLASH_ATTENTION_TRITON_AMD_ENABLE=TRUE   # flash-attention package: Triton AMD backend",
		Links: issues("ROCm/TheRock#1364", "pytorch/pytorch#112997", "ROCm/flash-attention#37"),
		pats: []pat{
			{lit: "TORCH_ROCM_AOTRITON_ENABLE_EXPERIMENTAL", re: `Enable it with TORCH_ROCM_AOTRITON_ENABLE_EXPERIMENTAL`},
			{lit: "No available kernel. Aborting execution", unless: nvidiaContext},
			{lit: "FlashAttention only supports", re: `only supports (AMD )?(MI\d+|RX ?\d{4}|gfx)`},
			// PyTorch prints why each backend was refused only when none was
			// left, right before "No available kernel" (pytorch/pytorch#138864).
			{lit: "kernel not used because", unless: nvidiaContext},
			// the same debug pass when flash SDP was switched off, and vLLM
			// finding no attention backend for the GPU
			{lit: "Flash attention has been runtime disabled"},
			{lit: "No valid attention backend found for"},
			{lit: "not compiled with flash attention"},
			{lit: "not compiled with memory efficient"},
			{lit: "not supported by Flash-Attention"},
			// sdp_utils.cpp when AOTriton has no kernels for the arch (or the
			// experimental gate is closed): "Flash attention was not compiled
			// for current AMD GPU architecture" (ROCm/TheRock#1908); the
			// memory-efficient check words it the same way.
			{lit: "attention was not compiled for current AMD GPU"},
			// the flash_attn package's own arch check on ROCm
			{lit: "FlashAttention currently only supports", re: `only supports (MI\d+|RX ?\d{4}|gfx)`},
		},
	},
	{
		ID:      "triton-amd-llvm-isel-unsupported",
		Title:   "Triton/LLVM cannot compile a kernel for this GPU",
		Summary: "LLVM or Triton's AMD backend cannot lower a kernel for this architecture.",
		Cause:   "The kernel uses an intrinsic or path the AMD backend does not support on this gfx target.",
		Fix: "# update Triton/ROCm to the pinned TheRock release\n" +
			"export VLLM_USE_TRITON_FLASH_ATTN=0   # or pick another attention backend",
		Links: issues("llvm/llvm-project#102981", "unslothai/unsloth#5337", "Said-Akbar/triton-gcn5#4"),
		pats: []pat{
			{lit: "Cannot select: intrinsic", re: `Cannot select: intrinsic %llvm\.amdgcn`},
			// any instruction LLVM's AMDGPU back end cannot select, not only
			// an intrinsic: a node of a type the target lacks
			{lit: "LLVM ERROR: Cannot select", re: `LLVM ERROR: Cannot select: .*(amdgcn|AMDGPU|addrspace\([3-7]\)|t\d+: \S+ = )`},
			{lit: "unsupported target: 'gfx"},
			{lit: "PassManager::run failed", unless: nvidiaContext},
			// GlobalISel's lower-case wording, vector legalisation of fp8/WMMA
			// types, and an LLVM that predates the target (llvm-project)
			{lit: "LLVM ERROR: cannot select:", re: `amdgcn`},
			{lit: "Do not know how to split this operator's operand"},
			{lit: "is not a recognized processor for this target", re: `'gfx\w+' is not a recognized processor`},
			// Triton's own lowering giving up on the kernel for this target
			// (pytorch/pytorch#101137)
			{lit: "Failed to translate TritonGPU to LLVM IR", unless: nvidiaContext},
		},
	},
	{
		ID:      "hsa-runtime-segfault-init",
		Title:   "ROCm runtime segfaults at start-up",
		Summary: "rocminfo or `import torch` crashed with a segmentation fault inside the HSA runtime.",
		Cause:   "A broken runtime build (e.g. TheRock nightlies 7.14.0a20260609–0612 crash in libhsa-runtime64 on gfx1151).",
		Fix: "rocm-sdk version   # 7.14.0a20260609 … 7.14.0a20260612 are known bad (TheRock#5763)\n" +
			"# set ROCM_VERSION and TORCH_VERSION in versions.env to a nightly ≥ 20260613 or a stable release, then:\n" +
			"haloforge build --track therock-toolbox --from rocm",
		Links: issues("ROCm/TheRock#5985", "ROCm/TheRock#3081", "ROCm/TheRock#2850", "ROCm/TheRock#5763"),
		pats: slices.Concat([]pat{
			{lit: "libhsa-runtime64", re: `segfault at .* in libhsa-runtime64`},
			{lit: "Segmentation fault", re: `Segmentation fault.*\b(rocminfo|rocm-smi|amd-smi|rocm-sdk|hipInfo)\b`},
			// a crash report naming the runtime's own libraries or frames on
			// its line, in either order
			{lit: "Segmentation fault", re: `Segmentation fault.*(libhsa-runtime64|libamdhip64|\brocr::)`},
			{lit: "libhsa-runtime64", re: `libhsa-runtime64.*(Segmentation fault|SIGSEGV|segfault)`},
			// gdb names the program first: Thread 1 "rocminfo" received signal
			// SIGSEGV (ROCm/rocm-systems#7071); its backtrace then runs through
			// the runtime's own frames, whichever program loaded it.
			{lit: "received signal SIGSEGV", re: `"(rocminfo|rocm-smi|amd-smi|rocm-sdk|hipInfo)" received signal SIGSEGV`},
			// Python's subprocess naming the tool that died: "Command
			// '[…/rocminfo]' died with <Signals.SIGSEGV: 11>" (ROCm/TheRock#5779)
			{lit: "Signals.SIGSEGV", re: `\b(rocminfo|rocm-smi|amd-smi|rocm-sdk|hipInfo)\b.*Signals\.SIGSEGV`},
			{lit: "libhsa-runtime64", re: `^(#\d+\s+)?0x[0-9a-f]+ in rocr::\S+.*libhsa-runtime64`,
				after: []string{"received signal SIGSEGV", "Segmentation fault", "signal SIGSEGV: segmentation"}, within: 4},
		},
			// Other reports of the same SIGSEGV: zsh and Go say it in lower
			// case, Python's subprocess names the signal, container runtimes
			// give the exit status (128+11), and a report with no log says
			// "SIGSEGV (exit 139)" (kyuz0/amd-strix-halo-vllm-toolboxes#61).
			// A segfault is only this family right after the runtime starts.
			initCrash("Segmentation fault"),
			initCrash("segmentation fault"),
			initCrash("Signals.SIGSEGV"),
			initCrash("SIGSEGV (exit 139)"),
			initCrash("exit 139 (SIGSEGV)"),
			initCrash("exited with code 139"),
		),
	},
	{
		ID:      "therock-shared-lib-not-found",
		Title:   "A ROCm library is missing at import",
		Summary: "A ROCm shared library cannot be found when torch (or an extension) loads.",
		Cause:   "The ROCm SDK wheels are missing, from another index than torch, or not initialised.",
		Fix: "pip install --index-url https://rocm.nightlies.amd.com/whl-multi-arch/ \"rocm[libraries,devel,device-gfx1151]\" \"torch[device-gfx1151]\"   # same index for both\n" +
			"rocm-sdk init\n" +
			"rocm-sdk test",
		Links: issues("pytorch/pytorch#188561", "pccr10001/comfyui-gfx1151-fa#1"),
		pats: []pat{
			{lit: "cannot open shared object file", re: `lib(rocm|MIOpen|amdhip|hip|hsa|roc|rccl|amd_comgr|amd_smi|migraphx)\S*\.so[\d.]*: cannot open shared object file`},
			// TensorFlow's loader wording (ROCmSoftwarePlatform/hiptensorflow#58)
			{lit: "Couldn't open CUDA library lib", re: `Couldn't open CUDA library lib(rocm|MIOpen|amdhip|hip|hsa|roc|rccl)`},
			// rocm_sdk's preload asks for a library the installed rocm
			// wheels do not ship (torch and rocm from different nightlies,
			// ROCm/TheRock#2345: KeyError: 'hipsparselt'); the traceback
			// runs through the SDK's library finder whatever the exception.
			{lit: "in find_libraries", re: `rocm_sdk[/\\]__init__\.py", line \d+, in find_libraries`},
			// rocm_sdk's own messages for a library the installed wheels lack
			// (TheRock rocm_sdk/__init__.py find_libraries, initialize_process)
			{lit: "Could not find rocm library '"},
			{lit: "Missing required rocm libraries"},
			{lit: "Unknown rocm library '"},
			{lit: "Could not preload libraries from environment variable ROCM_SDK_PRELOAD_LIBRARIES"},
			// A system library TheRock's SDK bundles as rocm_sysdeps (xz,
			// zlib, zstd, bzip2, elfutils, numactl, libdrm, sqlite), missing
			// when torch's extension loads: the bundle ships it renamed, so a
			// torch outside the SDK's set-up asks for the plain name, e.g.
			// liblzma.so.5 (noamsto/nix-amd-ai#114). Not torch's own libshm
			// nor CUDA's libraries: those are other failures.
			{lit: "cannot open shared object file", re: `ImportError: lib(lzma|z|zstd|bz2|elf|dw|numa|drm|drm_amdgpu|sqlite3)\.so[\d.]*: cannot open shared object file`,
				after: []string{"from torch._C import"}, within: 3},
			// any library the ROCm SDK's own loader or self-test cannot open,
			// e.g. the OpenCL ICD loader its libraries need (ROCm/rocm-systems#5065)
			{lit: "cannot open shared object file", after: []string{"rocm_sdk.tests", "rocm_sdk/__init__.py"}, within: 8},
		},
	},
	{
		ID:      "rocm-version-mix-undefined-symbol",
		Title:   "Two ROCm versions mixed in one process",
		Summary: "A ROCm library needs a symbol the other loaded ROCm libraries do not have: libraries from two ROCm versions or builds are mixed.",
		Cause:   "LD_LIBRARY_PATH or a second install puts another ROCm's libraries (libhsa-runtime64, a self-built MIOpen or composable_kernel) next to this one.",
		Fix: "echo $LD_LIBRARY_PATH   # drop /opt/rocm* and self-built prefixes inside the TheRock venv\n" +
			"python -c 'import torch; print(torch.version.hip)'; rocm-sdk version   # one ROCm per environment\n" +
			"# self-built ROCm libraries: rebuild them against the same ROCm, or drop them for the release's own",
		Links: issues("Looong01/pyg-rocm-build#18"),
		pats: []pat{
			{lit: "undefined symbol: hsa_"},
			// a mangled C++ symbol of a ROCm library (composable_kernel,
			// rocBLAS, MIOpen, hipBLASLt), whoever asks for it
			{lit: "undefined symbol: _ZN", re: `undefined symbol: _ZN\d*(ck|rocblas|miopen|hipblaslt|rocsolver|rocprim|hipcub|rocwmma)\d`},
			// the dynamic linker naming the runtime's symbol version
			{lit: "' not found (required by", re: "version `(ROCR_|hip_|HIP_|hsa_|rocm)\\S*' not found \\(required by"},
			// A HIP runtime API symbol: the extension was built against another
			// HIP than the one loaded; versioned names such as
			// hipGetDevicePropertiesR0600 say which (ROCm/flash-attention#31).
			{lit: "undefined symbol: hip", re: `undefined symbol: hip[A-Za-z]\w*`},
			// torch's HIP library missing a symbol of a ROCm library it links
			// (RCCL's ncclCommInitRankScalable, ROCm/TheRock#723): another release
			{lit: "undefined symbol: ", re: `libtorch_hip\.so: undefined symbol: \w+`},
			// rocm_sdk's own check: torch built for one ROCm, another installed
			{lit: "The program was compiled against a ROCm version matching"},
			// A ROCm component library that cannot resolve a symbol of another
			// was built against a different release or build of it: a
			// self-built libMIOpen missing a composable_kernel symbol
			// (ROCm/pytorch#2893). Named libraries only: librocdxg's missing
			// hsaKmt symbol is a runtime bug (ROCm/rocm-systems#8837), not a mix.
			{lit: "undefined symbol: ", re: `/lib(MIOpen|rocblas|rocsolver|rocsparse|rocfft|rocrand|roctracer|rocprofiler|rocm_smi|hipblas|hipblaslt|hipsparse|hipsparselt|hipfft|hiprand|hipsolver|amdhip64|hsa-runtime64|rccl|amd_comgr|migraphx)\.so[\d.]*: undefined symbol`},
			// Any undefined symbol in a library under a versioned ROCm prefix:
			// the caller came from another release (ROCm/amdsmi#186).
			{lit: "undefined symbol: ", re: `/rocm-\d[\d.]*/\S*lib\S+\.so[\d.]*: undefined symbol`},
		},
	},
	{
		ID:      "hip-wrong-clang-unsupported-arch",
		Title:   "HIP code compiled by a non-ROCm clang",
		Summary: "A clang that is not ROCm's compiled HIP sources and does not know this gfx target.",
		Cause:   "CC/CXX point at the distro clang, which lacks (or mis-detects) the AMDGPU targets ROCm needs.",
		Fix: "export CC=$(rocm-sdk path --root)/lib/llvm/bin/clang CXX=$(rocm-sdk path --root)/lib/llvm/bin/clang++\n" +
			"export HIPCXX=$CXX   # then reconfigure from a clean build directory",
		Links: issues("leejet/stable-diffusion.cpp#464"),
		pats: []pat{
			{lit: "unsupported CUDA gpu architecture: gfx"},
			{lit: "unsupported HIP gpu architecture: gfx"},  // newer clang's wording
			{lit: "Unsupported CUDA gpu architecture: gfx"}, // clang ≤ 11 spelling
			// an LLVM older than the arch: the target CPU is unknown to it
			{lit: "unknown target CPU 'gfx"},
		},
	},
	{
		ID:      "build-oom-killed",
		Title:   "The compiler was killed (out of memory)",
		Summary: "The kernel's OOM killer stopped a compiler process: too many parallel jobs for the RAM.",
		Cause:   "Each HIP/C++ compile unit of torch, vLLM or composable_kernel can take several GiB; MAX_JOBS defaults to all cores.",
		Fix: "export MAX_JOBS=$(( $(free -g | awk '/Mem:/{print $2}') / 4 ))   # about RAM GiB / 4\n" +
			"export CMAKE_BUILD_PARALLEL_LEVEL=$MAX_JOBS   # read by PyTorch/vLLM setup.py (MAX_JOBS) and cmake --build",
		Links: issues("ROCm/TheRock#997"),
		pats: []pat{
			{lit: "Killed signal terminated program"},
			{lit: "unable to execute command: Killed"},
			// older GCC: "c++: internal compiler error: Killed (program
			// cc1plus)" (PaddlePaddle/Paddle#14435)
			{lit: "internal compiler error: Killed"},
			// the linker's and the kernel's wording of the same kill
			{lit: "terminated with signal 9 [Killed]"},
			{lit: "Out of memory: Killed process", re: `Killed process \d+ \((cc1plus|cc1|clang|clang\+\+|clang-\d+|ld|ld\.lld|lld|hipcc|nvcc|rustc)\)`},
			// kernels before 5.x: "Out of memory: Kill process N (rustc) score …
			// or sacrifice child" (BurntSushi/ripgrep#525)
			{lit: "or sacrifice child", re: `Out of memory: Kill process \d+ \((cc1plus|cc1|clang|clang\+\+|clang-\d+|ld|ld\.lld|lld|hipcc|nvcc|rustc)\)`},
			// cargo's report of a rustc the kernel killed, when a wheel builds
			// a Rust extension from source (hyperium/http#341)
			{lit: "(signal: 9, SIGKILL: kill)", re: "process didn't exit successfully: `\\S*rustc .*\\(signal: 9, SIGKILL: kill\\)"},
		},
	},
	{
		ID:      "hsa-override-spoof-crash",
		Title:   "Crash under an HSA_OVERRIDE_GFX_VERSION spoof",
		Summary: "The process died with an illegal instruction while the GPU arch was spoofed.",
		Cause:   "Kernels for the spoofed arch (gfx1100) do not all fit RDNA 3.5.",
		Fix: "unset HSA_OVERRIDE_GFX_VERSION\n" +
			"# prefer a native gfx1151 track (therock-toolbox); the spoof tracks are a stop-gap",
		Seed:   true,
		Tracks: nil,
		pats: []pat{
			// The shell's or the kernel's report, not a warning that quotes it
			// (the spoof tracks' own scripts warn about 'Illegal instruction').
			{lit: "Illegal instruction", re: `(^|[\s:\]])Illegal instruction( +\(core dumped\))?(\s|$)`,
				after: []string{"HSA_OVERRIDE_GFX_VERSION"}, not: []string{"detected", "error:"}},
		},
	},
	{
		ID:      "wheel-index-unreachable",
		Title:   "pip cannot get the ROCm wheels",
		Summary: "pip (or uv) found no matching wheel, or could not reach the package index.",
		Cause:   "A wrong or retired index URL (the per-family gfx1151 indexes were retired), a version the index does not carry, or no network.",
		Fix: "haloforge pins status   # do THEROCK_INDEX_URL, ROCM_VERSION, TORCH_VERSION, TORCHVISION_VERSION and TORCHAUDIO_VERSION\n" +
			"                        # (source-stable: SOURCE_TORCH_INDEX_URL, SOURCE_TORCH_VERSION) still resolve, with their device-gfx1151 wheels?\n" +
			"haloforge pins sets     # known-good sets with evidence; then haloforge pins use SET writes one and shows what rebuilds\n" +
			"source versions.env; pip download --no-deps -d /tmp/probe --index-url \"$THEROCK_INDEX_URL\" \"torch==$TORCH_VERSION\"   # pip's own answer",
		Seed: true,
		pats: []pat{
			{lit: "Could not find a version that satisfies the requirement"},
			{lit: "No matching distribution found for"},
			{lit: "Could not fetch URL", re: `Could not fetch URL https?://\S*(amd\.com|pytorch\.org)`},
			{lit: "Failed to establish a new connection", re: `(amd\.com|pytorch\.org).*Failed to establish a new connection`},
			// uv's wording of the same (ROCm/TheRock#2344, #5358)
			// pip and uv reporting the index itself failing: a retired index or
			// a stale link in it (ROCm/TheRock#1741, Comfy-Org/ComfyUI#12427)
			{lit: "while getting http", re: `HTTP error (40[34]|410|5\d\d) while getting https?://`},
			{lit: "HTTP status client error", re: `HTTP status client error \((40[34]|410)[^)]*\) for url`},
			{lit: "HTTP status server error", re: `HTTP status server error \(5\d\d[^)]*\) for url`},
			// pip giving up on the index host while it retries: DNS, refused
			// connections, timeouts (ROCm/TheRock#2884, bmaltais/kohya_ss#249).
			// pip names the index only in "Looking in indexes", which it
			// prints for every custom index, as the ROCm ones are.
			{lit: "after connection broken by", re: `Retrying \(Retry\(.*after connection broken by '(NewConnectionError|ConnectTimeoutError|ReadTimeoutError|ProxyError|SSLError)`,
				after: []string{"Looking in indexes:"}},
			// urllib3 and DNS giving up on the index host, which they name
			{lit: "Max retries exceeded with url", re: `host='[^']*(amd\.com|pytorch\.org)'.*Max retries exceeded`},
			{lit: "Temporary failure in name resolution", re: `(amd\.com|pytorch\.org)`},
			{lit: "Failed to fetch: `http", re: "Failed to fetch: `https?://[^`]*(amd\\.com|pytorch\\.org)"},
			// uv: the index has the package, not for this platform or Python
			{lit: "has no wheels with a matching"},
			{lit: "was not found in the package registry"},
			{lit: "error sending request for url", re: `error sending request for url \(https?://[^)]*(amd\.com|pytorch\.org)`},
			// uv's headline ("No solution found when resolving dependencies")
			// names no cause; the explanation under it does. Its conclusion
			// after vLLM's own torch pin is vllm-torch-version-conflict
			// (hiyouga/LlamaFactory#8309).
			{lit: "your requirements are unsatisfiable", unless: []string{"depends on torch=="}, unlessWithin: 5},
		},
	},
	// Families of serving (haloforge serve), from 2026 threads; each has its
	// excerpts first in testdata/holdout.jsonl (h38-h49) with near misses
	// that must stay quiet (n14-n19).
	{
		ID:      "vllm-max-model-len",
		Title:   "vLLM's KV cache cannot hold the model's context",
		Summary: "vLLM refused to start: one request at the configured context length needs more KV cache than the memory it may use holds.",
		Cause: "max_model_len defaults to the model's trained context (often 32k to 256k tokens); the KV cache left after the weights at this " +
			"--gpu-memory-utilization is smaller. vLLM says the length that would fit: \"the estimated maximum model length is N\".",
		Fix: "vllm serve … --max-model-len N   # N: the estimated maximum model length the line gives (V0: the KV cache tokens)\n" +
			"haloforge serve --track <track> --model <model> --ctx N   # the same through haloforge, which reads N from the log\n" +
			"# or more room for the cache: --gpu-memory-utilization up to 0.90 on the APU, a larger ttm.pages_limit, --kv-cache-dtype fp8",
		Links: issues("lemonade-sdk/vllm-rocm#5", "QwenLM/Qwen3#295", "vllm-project/vllm#2418"),
		pats: []pat{
			{lit: "estimated maximum model length is"},
			{lit: "larger than the available KV cache memory"},
			// vLLM before V1 (vllm/worker/worker.py raise_if_cache_size_invalid)
			{lit: "larger than the maximum number of tokens that can be stored in KV cache"},
		},
	},
	{
		ID:      "gpu-ring-timeout-lockup",
		Title:   "GPU job timed out and was reset on a long prompt (lockup_timeout)",
		Summary: "The kernel's GPU watchdog timed out a long compute job and reset its queue: the engine lost its device mid-request.",
		Cause: "amdgpu resets a ring whose job runs longer than amdgpu.lockup_timeout: by default " + watchdogBefore619 + " for every queue, compute included, " +
			"before Linux 6.19 and " + watchdogFrom619 + " from 6.19, so on every 7.x kernel (llama.cpp#25664). A long prefill at a deep context, or a large -ub batch, on gfx1151 can take longer than " +
			"that without being hung; the reset then kills the request or the server (the engine's side: vulkan-device-lost).",
		Fix: "# kernel command line, then reboot: 20 s for GFX and compute jobs (milliseconds; GFX,Compute), as haloforge doctor proposes\n" +
			"amdgpu.lockup_timeout=" + lockupBefore619 + "   # before Linux 6.19, where one value leaves compute at " + watchdogBefore619 + "\n" +
			"amdgpu.lockup_timeout=" + lockupFrom619 + "   # from Linux 6.19, where one value sets every queue; -1 also hides real hangs\n" +
			"llama-server … -ub 512   # smaller micro-batches: each GPU job ends sooner\n" +
			"sudo grep MES /sys/kernel/debug/dri/*/amdgpu_firmware_info   # a reset that fails is the MES hang instead (0x83 is bad)",
		Links: issues("ggml-org/llama.cpp#27076", "Nathanw1014/strix-halo-llamacpp#16", "defilantech/LLMKube#886", "ggml-org/llama.cpp#21724", "ggml-org/llama.cpp#25664"),
		pats: []pat{
			// the compute ring's reset that worked: the job was slow, not the
			// firmware dead (that reset fails, and is amdgpu-mes-hang). Not
			// the graphics ring's: a compositor's page fault ends in a gfx
			// ring reset too (pop-os/cosmic-comp#2149).
			{lit: "reset succeeded", re: `Ring comp_[\d.]+ reset succeeded`},
			{lit: "reset compute queue"},
			// the watchdog fired and the kernel cancelled the job without a
			// reset (llama.cpp#21724: "ring comp_1.1.0 timeout, but soft recovered")
			{lit: "but soft recovered", re: `ring comp_[\d.]+ timeout, but soft recovered`},
			// The engine's side of the reset (RADV's "the context is lost",
			// ggml's ErrorDeviceLost) is vulkan-device-lost.
		},
	},
	{
		ID:      "ollama-igpu-dropped",
		Title:   "Ollama dropped the integrated GPU: models run on the CPU",
		Summary: "Ollama's GPU discovery filtered the integrated GPU out, so every model runs on the CPU.",
		Cause: "Ollama 0.18 to 0.2x validates each GPU in a runner subprocess that fails on gfx1151 and drops it as not fully initialised " +
			"(ollama#14921, #15420); 0.30 and later drop integrated GPUs that are not on an allow-list, which has held gfx1151 since 0.30.",
		Fix: "ollama --version   # 0.18 to 0.2x drop the gfx1151 iGPU: use ≥ 0.30 (OLLAMA_IMAGE=docker.io/ollama/ollama:0.32.15-rocm)\n" +
			"OLLAMA_IGPU_ENABLE=1 ollama serve   # 0.30+: admit an integrated GPU that is not on the allow-list\n" +
			"OLLAMA_VULKAN=1 ollama serve   # or let Ollama use the Vulkan backend",
		Links: issues("ollama/ollama#14921", "ollama/ollama#16701", "ollama/ollama#15420", "ollama/ollama#13920"),
		pats: []pat{
			{lit: "filtering device which didn't fully initialize"},
			{lit: "dropping integrated GPU"},
		},
	},
	{
		ID:      "hip-vram-carveout-reported",
		Title:   "The runtime counts the BIOS carve-out as the GPU's memory",
		Summary: "HIP, and the engines that read it, report the BIOS carve-out (the VRAM pool) as the GPU's total memory instead of the GTT pool the APU uses.",
		Cause: "On the APU, hipMemGetInfo and hipGetDeviceProperties report the VRAM pool (the BIOS UMA carve-out, or the VRAM aperture) " +
			"(ROCm/hip#3892; newer ROCm adds GTT when GTT is larger, rocm-systems#5596). A large carve-out also takes that RAM from the OS and from GTT.",
		Fix: "# BIOS: set the UMA frame buffer (carve-out) to its minimum, 512 MB: the GPU then allocates from GTT\n" +
			"# kernel command line: ttm.pages_limit=<GiB × 262144>, e.g. 32505856 for 124 GiB (haloforge doctor: carveout, gtt-size)\n" +
			"# then a ROCm that reports GTT on the APU; for Ollama meanwhile, its Vulkan image sees the whole pool",
		Links: issues("ROCm/hip#3892", "ollama/ollama#16462", "ROCm/legacy-rocm-build#5444"),
		pats: []pat{
			// Ollama 0.30's ROCm backend with a 96 GB carve-out: the device's
			// total is the carve-out and its driver version unknown (ollama#16462)
			{lit: "libdirs=ollama,rocm", re: `library=ROCm .*driver=0\.0 total=`},
		},
	},
	{
		ID:      "vllm-no-rocm-platform",
		Title:   "vLLM found no ROCm platform (amdsmi)",
		Summary: "vLLM did not detect ROCm and runs on UnspecifiedPlatform: it cannot use the GPU and cannot infer the device type.",
		Cause: "vLLM detects ROCm by importing amdsmi and listing its GPUs. The amdsmi Python module is missing (TheRock's wheels do not " +
			"install it, ROCm/TheRock#3054), or it cannot open the GPU.",
		Fix: "python -c 'import amdsmi; amdsmi.amdsmi_init(); print(amdsmi.amdsmi_get_processor_handles())'   # must list the GPU\n" +
			"pip install /opt/rocm/share/amd_smi   # the amdsmi of the installed ROCm; TheRock: its _rocm_sdk_core/share/amd_smi, never the PyPI one (therock-amdsmi-double-free)\n" +
			"VLLM_LOGGING_LEVEL=DEBUG vllm serve …   # says why each platform is not available",
		Links: issues("vllm-project/vllm#24576", "ROCm/TheRock#3054", "vllm-project/vllm#39378"),
		pats: []pat{
			{lit: "ROCm platform is not available because"},
			{lit: "vLLM is running on UnspecifiedPlatform"},
		},
	},
	{
		ID:      "server-port-never-opens",
		Title:   "The server stalled in start-up and never opened its port",
		Summary: "The inference server stopped making progress during start-up and never answered on its port.",
		Cause: "A start-up phase stalled: vLLM's API server waiting for an engine core that never comes up (a crashed or GPU-less worker), " +
			"weights that never finish loading, a compile or a graph capture that hangs. haloforge serve names the phase.",
		Fix: "haloforge serve --track <track> --model <model>   # follows the start-up phase by phase and names the one that stalls\n" +
			"VLLM_LOGGING_LEVEL=DEBUG vllm serve …   # the engine core's own start-up\n" +
			"vllm serve … --enforce-eager   # no torch.compile or graph capture, when those never end",
		Links: issues("kyuz0/amd-strix-halo-vllm-toolboxes#12", "Project-HAMi/HAMi-core#261", "noamsto/nix-amd-ai#68"),
		Steps: []string{"serve"},
		Stall: true,
		Ladder: []Rung{
			{"Name the phase", "haloforge serve prints each start-up phase with its stall budget and names the one it stalled in; the full log is in its run directory"},
			{"An engine core that never starts", "vLLM repeating \"Waiting for … core engine proc(s) to start\": the engine process died or sees no GPU; read above for its traceback, then haloforge doctor (kfd-access)"},
			{"Weights that never load", "the model path or download (HF_HOME, free disk); llama.cpp on ROCm: llamacpp-rocm-load-hang-sdma"},
			{"Compile or graph capture", "a cold torch.compile takes up to 20 minutes on gfx1151; one that never ends: --enforce-eager"},
			{"Memory", "lower the context or the utilisation: haloforge serve --ctx N --util F checks the fit before it starts"},
		},
		pats: []pat{
			// vLLM's API server's heartbeat while it waits for its engine core
			// (vllm/v1/engine/utils.py): a log that ends on it never opened the port
			{lit: "core engine proc(s) to start", marker: true},
		},
	},
	// ---- clusters (haloforge cluster; field research 2026-11) ----
	// One block, appended, so parallel additions to the table merge cleanly.
	{
		ID:      "rpc-server-renamed",
		Title:   "rpc-server: command not found (renamed ggml-rpc-server)",
		Summary: "The shell finds no rpc-server: llama.cpp renamed its RPC server to ggml-rpc-server.",
		Cause:   "llama.cpp#25045 renamed the rpc-server tool to ggml-rpc-server; toolboxes and distributions rebuilt after it ship only the new name (Debian puts it in /usr/libexec/<triplet>/llama/bin).",
		Fix: "ggml-rpc-server -H <this node's cluster address> -p 50052 -c   # same flags as rpc-server\n" +
			"ls /usr/libexec/*/llama/bin/ggml-rpc-server   # Debian/Ubuntu: not on PATH\n" +
			"haloforge cluster up --inventory cluster.toml   # finds either name on each node and never binds 0.0.0.0",
		Links: []string{issue("kyuz0/amd-strix-halo-toolboxes#110"), "https://github.com/ggml-org/llama.cpp/pull/25045"},
		pats: []pat{
			// bash's, zsh's and fish's wordings; the new name not being found is
			// another problem (the package is missing), not this one.
			{lit: "rpc-server: command not found", not: []string{"ggml-rpc-server"}},
			{lit: "command not found: rpc-server"},
			{lit: "Unknown command: rpc-server"},
		},
	},
	{
		ID:      "ggml-rpc-backend-missing",
		Title:   "llama.cpp without its RPC backend",
		Summary: "ggml-rpc-server or llama-server cannot find ggml's RPC backend, so no RPC device exists on this node.",
		Cause:   "The RPC backend is a separate library loaded at start (Debian: libggml0-backend-rpc; a source build needs -DGGML_RPC=ON); a node without it, or a build that loads backends late (llama.cpp#22721), has no RPC.",
		Fix: "sudo apt-get install libggml0-backend-rpc   # Debian sid / Ubuntu 26.04, the same version as libggml0\n" +
			"cmake -B build -DGGML_RPC=ON …   # a source build\n" +
			"haloforge cluster check --inventory cluster.toml   # compares the ggml packages of every node",
		Links: issues("ggml-org/llama.cpp#22721"),
		pats: []pat{
			// tools/rpc/rpc-server.cpp, when ggml_backend_reg_by_name("RPC") is null
			{lit: "Failed to find RPC backend"},
			// llama-server and llama-cli offer --rpc only when the backend loaded
			{lit: "error: invalid argument: --rpc"},
		},
	},
	{
		ID:      "rccl-gfx1151-missing",
		Title:   "RCCL without gfx1151 code",
		Summary: "RCCL (ROCm's NCCL) fails to run its kernels on the gfx1151 GPU: upstream RCCL is not built for Strix Halo.",
		Cause:   "ROCm/rccl#2026: AMD does not build RCCL for gfx1151, so vLLM's collectives across nodes have no kernels for it; kyuz0 ships a librccl built from kyuz0/rocm-systems (branch gfx1151-rccl).",
		Fix: "haloforge cluster check --inventory cluster.toml --engine ray   # the rccl check looks for gfx1151 code in each node's librccl\n" +
			"# use an image or environment with a gfx1151 RCCL (kyuz0's vLLM toolbox bundles one); upstream RCCL cannot run it",
		Links: []string{issue("ROCm/rccl#2026"), "https://github.com/ROCm/rccl/pull/2075"},
		Seed:  true,
		pats: []pat{
			{lit: "HIP failure 'invalid device function'", after: []string{"NCCL INFO RCCL version", "NCCL INFO Hipruntime version"}},
			{lit: "HIP failure 'no kernel image is available", after: []string{"NCCL INFO RCCL version", "NCCL INFO Hipruntime version"}},
			{lit: "No compatible code objects found for: gfx1151", after: []string{"NCCL INFO RCCL version", "NCCL INFO Hipruntime version"}, within: 20},
		},
	},
	{
		ID:      "rdma-core-unknown-completion",
		Title:   "RCCL over RDMA: Unknown completion (old rdma-core)",
		Summary: "RCCL's RDMA transport got a completion it does not know from the NIC's verbs provider.",
		Cause:   "An rdma-core older than the kernel's RDMA driver (Ubuntu's rdma-core 50 with the Intel irdma driver of an E810): its provider reports completions RCCL cannot decode. kyuz0 pins rdma-core v62 in the image.",
		Fix: "ibv_devinfo -v | grep -i fw_ver; dpkg -l rdma-core ibverbs-providers   # rpm -q rdma-core libibverbs\n" +
			"# use rdma-core ≥ 62 inside the image that runs vLLM (the provider must match the host's kernel driver)\n" +
			"NCCL_IB_DISABLE=1   # meanwhile: TCP sockets (slower) — transport = \"ethernet\" in the inventory",
		Links: []string{"https://github.com/kyuz0/amd-strix-halo-vllm-toolboxes/blob/main/docs/USB4_RDMA_PLAN.md"},
		Seed:  true,
		pats: []pat{
			{lit: "Unknown completion", re: `(NCCL|RCCL|NET/IB|ibv_|irdma|rdma).*Unknown completion|Unknown completion.*(opcode|status|vendor err)`},
		},
	},
	{
		ID:      "nccl-comminit-internal-error",
		Title:   "ncclCommInitRank: NCCL internal error",
		Summary: "NCCL/RCCL could not set up the communicator between the nodes and reports an internal error.",
		Cause:   "On RDMA clusters most often an NCCL_IB_HCA prefix that matches more than one device or port (after a link reset, two rails), so ranks pair different HCAs; also a broken topology file or mismatched NCCL builds.",
		Fix: "rdma link   # which ports are ACTIVE on each node\n" +
			"ib_hca = \"rocep194s0:1\"   # per node in the inventory: haloforge passes NCCL_IB_HCA==rocep194s0:1 (\"=\" is an exact match, not a prefix)\n" +
			"NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET   # haloforge cluster up sets them: the log then names the HCA each rank took\n" +
			"NCCL_IB_DISABLE=1   # to confirm it is the RDMA path: TCP sockets",
		Links: issues("vllm-project/vllm#18997", "NVIDIA/nccl#1591", "ROCm/rccl-tests#50"),
		pats: []pat{
			{lit: "internal error - please report this issue to the NCCL developers"},
			{lit: "ncclCommInitRank failed", re: `ncclCommInitRank failed.*internal error`},
		},
	},
	{
		ID:      "ray-node-ip-mismatch",
		Title:   "Ray cannot place vLLM's workers (node IP mismatch)",
		Summary: "Ray waits for resources on a node named by an IP no Ray node has: vLLM's driver and the Ray cluster disagree on this box's address.",
		Cause:   "A box with several addresses (LAN, cluster link, Docker, Tailscale): vLLM asks for GPUs on the IP it guessed, Ray registered the node under another; or the cluster has fewer GPUs than --tensor-parallel-size.",
		Fix: "VLLM_HOST_IP=<this node's cluster address>   # on every node, for the Ray daemon and vllm serve\n" +
			"ray start … --node-ip-address=<the same address>\n" +
			"ray status   # lists every node and GPU; haloforge cluster up sets both and checks ray status first",
		Links: issues("vllm-project/vllm#14186", "vllm-project/vllm#12670", "vllm-project/vllm#7815"),
		pats: []pat{
			{lit: "No available node types can fulfill resource request", re: `\{'node:[^']+': 0\.001`},
		},
	},
	{
		ID:      "ray-gcs-unreachable",
		Title:   "Ray nodes cannot reach each other (GCS, heartbeats)",
		Summary: "A Ray worker cannot reach the head's GCS, or the head stops hearing a worker: the cluster falls apart.",
		Cause:   "A firewall (firewalld's default zone) drops Ray's GCS port and the random ports of its raylets and object managers; or a wrong --address / node IP, or an overloaded node.",
		Fix: "sudo firewall-cmd --permanent --zone=trusted --add-interface=<cluster interface> && sudo firewall-cmd --reload   # on every node\n" +
			"haloforge cluster check --inventory cluster.toml --engine ray   # tests the ports between the nodes\n" +
			"ray start --address=<head cluster address>:6379 --node-ip-address=<this node's cluster address>",
		Links: issues("vllm-project/vllm#19543", "vllm-project/vllm#15385", "ray-project/ray#45179", "ray-project/ray#44704"),
		Signals: []string{"Failed to connect to GCS at address", "Failed to connect to GCS within 60 seconds", "Unable to connect to GCS at",
			"Failed to send request to gcs, reconnecting", "Timed out while waiting for GCS to become available",
			"has been marked dead because the detector has missed too many heartbeats", "mistakenly been marked as dead by the GCS"},
		pats: []pat{
			{lit: "Failed to connect to GCS at address"},
			// other Ray releases' words for the same: a raylet giving up on
			// the GCS (2.x, ray-project/ray#44704), the worker's connection
			// retries (1.9+, ray-project/ray#23611, #22326) and KubeRay's
			// (ray-project/kuberay#2540)
			{lit: "Failed to connect to GCS within", re: `Failed to connect to GCS within \d+ seconds`},
			{lit: "Unable to connect to GCS at"},
			{lit: "Failed to send request to gcs, reconnecting"},
			{lit: "waiting for GCS to become", re: `Timed out while waiting for GCS to become available`},
			{lit: "has been marked dead because the detector has missed too many heartbeats"},
			{lit: "mistakenly been marked as dead by the GCS"},
		},
	},
	{
		ID:      "vllm-graph-capture-hang",
		Title:   "vLLM hangs capturing graphs across nodes",
		Summary: "Output stopped while vLLM captured CUDA/HIP graphs: on distributed APU nodes the capture can deadlock.",
		Cause:   "Graph capture with collectives across nodes deadlocks on distributed APU clusters (kyuz0 setup_guide §7) and with pipeline parallel (ROCm/rccl#2075); eager mode avoids it at a few per cent of speed.",
		Fix: "vllm serve … --enforce-eager   # haloforge cluster up --engine ray always passes it\n" +
			"# still stuck: the collectives themselves (NCCL_DEBUG=INFO shows the transport) — haloforge cluster check",
		Links: issues("vllm-project/vllm#17167", "vllm-project/vllm#39010", "vllm-project/vllm#4412"),
		Stall: true,
		Ladder: []Rung{
			{"Confirm it is the capture", "the log ends at `Capturing CUDA graph shapes` / `Capturing cudagraphs for decoding` and nothing follows for minutes"},
			{"Run eager", "add --enforce-eager (haloforge cluster up --engine ray passes it); it costs a few per cent of speed"},
			{"Check the collectives", "haloforge cluster check --engine ray: ports, firewall, RDMA; the log's NCCL lines must say NET/IB or NET/Socket"},
			{"One node first", "start the model with --tensor-parallel-size 1 on the head alone: a hang there is not the cluster"},
		},
		pats: []pat{
			// a finished capture (100%) that is the last line is not this hang
			{lit: "Capturing CUDA graph shapes", marker: true, not: []string{"100%|"}},
			{lit: "Capturing cudagraphs for decoding", marker: true},
			{lit: "Capturing CUDA graphs (", marker: true, not: []string{"100%|"}},
			// vLLM's own heartbeat right under a capture that stopped part-way
			// (vllm-project/vllm#39010, ROCm, TP=2)
			{lit: "No available shared memory broadcast block found", after: []string{"Capturing CUDA graphs (", "Capturing CUDA graph shapes"}, within: 1},
		},
	},
	// ---- field failures of 2026: lost Vulkan devices, lost RPC workers,
	// bundled engines that die at start-up, and stacks that answer wrong ----
	// Each has its real excerpts, with their threads and dates, in
	// testdata/coverage.jsonl, and its near misses next to them.
	{
		ID:      "vulkan-device-lost",
		Title:   "Vulkan device lost in the middle of a request",
		Summary: "The Vulkan driver lost the GPU in the middle of a request, with no failed allocation before it: the kernel reset a GPU job that ran too long (a long prompt at a deep context).",
		Cause: "ggml's Vulkan backend sends up to about 100 graph nodes in one vkQueueSubmit; at a deep context one submission (often flash attention over the whole KV cache) " +
			"runs longer than amdgpu's job watchdog, amdgpu.lockup_timeout. Linux 6.19 lowered every queue's default from " + watchdogBefore619 + " to " + watchdogFrom619 + " " +
			"(so on every 7.x kernel; llama.cpp#25664), and Strix Halo hits it at 50k–130k tokens. The kernel resets the queue; Mesa's RADV then says the context is lost, and " +
			"AMD's own driver (AMDVLK, and Adrenalin on Windows) reports ErrorDeviceLost at the next fence.",
		Fix: "amdgpu.lockup_timeout=" + lockupFrom619 + "   # kernel command line, then reboot: 20 s for every queue from Linux 6.19 (" + lockupBefore619 + " before: GFX,Compute ms), as haloforge doctor proposes\n" +
			"GGML_VK_MAX_NODES_PER_SUBMIT=8 llama-server …   # smaller submissions (llama.cpp from late June 2026, #24872)\n" +
			"llama-server … -ub 512   # smaller micro-batches: each GPU job ends sooner\n" +
			"GGML_VK_SERIALIZE_SUBMISSIONS=1 llama-server …   # names the operation that timed out (llama.cpp#26371); slow, for a report only\n" +
			"sudo dmesg | grep -E 'ring comp_|reset'   # the kernel's side of the same reset: gpu-ring-timeout-lockup",
		Links: issues("ggml-org/llama.cpp#25664", "ggml-org/llama.cpp#21724", "ggml-org/llama.cpp#24872", "ggml-org/llama.cpp#26371",
			"Nathanw1014/strix-halo-llamacpp#16", "TheTom/llama-cpp-turboquant#185"),
		pats: slices.Concat(
			lostDevice("ErrorDeviceLost"),       // vulkan.hpp: vk::Queue::submit, vk::Device::waitForFences
			lostDevice("vk::DeviceLostError"),   // the exception's type, when nothing catches it
			lostDevice("device lost on Vulkan"), // ggml_vulkan: device lost on Vulkan0
			// RADV: its submission cancelled by the reset, "This context is
			// innocent" (another job hung) or "guilty"
			lostDevice("the context is lost"),
		),
	},
	{
		ID:      "ggml-rpc-worker-crashed",
		Title:   "A ggml-rpc worker crashed or answered garbage",
		Summary: "llama.cpp's head lost a remote ggml-rpc worker, or could not parse its reply, while it sent the model's tensors or ran the graph.",
		Cause: "The head aborts on any short or malformed RPC reply, so the real failure is in the worker's own log: most often the worker ran out of device memory " +
			"placing its share of the weights or of the KV cache (a Vulkan worker's ErrorOutOfDeviceMemory, a ROCm worker's failed hipMalloc or an HSA fault on " +
			"gfx1151, llama.cpp#19745), or it runs another llama.cpp build whose RPC protocol differs (the protocol changed several times in 2026: " +
			"\"RPC server version mismatch\", \"HELLO request size mismatch\"). Builds before August 2025 also broke on tensors larger than one send() " +
			"(llama.cpp#15055, fixed by #15188).",
		Fix: "ssh <worker> tail -n 50 ~/.local/state/haloforge/cluster/rpc-server.log   # the worker's last lines (haloforge cluster up keeps them) name the failure\n" +
			"haloforge cluster check --inventory cluster.toml   # the same llama.cpp/ggml build on every node: the RPC protocol is the build's\n" +
			"llama-server … --rpc … --tensor-split 1,1 -c 32768   # a worker that ran out of memory: a smaller share, a smaller context\n" +
			"llama-server … --rpc … --no-mmap   # ROCm workers on gfx1151 that fault while the head uploads (llama.cpp#19745: --no-mmap or -dio)",
		Links: issues("ggml-org/llama.cpp#15055", "ggml-org/llama.cpp#26768", "ggml-org/llama.cpp#26392", "ggml-org/llama.cpp#19745", "ggml-org/llama.cpp#14076"),
		Signals: []string{"ggml-rpc.cpp:NNN: Remote RPC server crashed or returned malformed response", "ggml-rpc.cpp:NNN: GGML_ASSERT(status) failed",
			"RPC server version mismatch: X.Y.Z"},
		pats: []pat{
			// ggml-rpc's RPC_STATUS_ASSERT on the head (llama.cpp#14076, June 2025)
			// (anchored on its rarer half: the whole sentence cost 0.4 % of
			// the scan on healthy logs)
			{lit: "returned malformed response", re: `Remote RPC server crashed or returned malformed response`},
			// the same assertion in builds before it
			{lit: "GGML_ASSERT(status) failed", re: `ggml-rpc\.cpp:\d+: GGML_ASSERT\(status\) failed`},
			// the handshake: the head's check of the worker's protocol version,
			// and the worker's check of the head's request
			{lit: "version mismatch: ", re: `RPC server version mismatch: \d`},
		},
	},
	{
		ID:      "bundled-engine-crash-gfx1151",
		Title:   "A bundled or nightly engine crashes at start-up on gfx1151",
		Summary: "A prebuilt engine (the llama-server of Unsloth Studio, Lemonade or a nightly toolbox) died at start-up on the gfx1151 GPU with a segmentation fault and no HIP or ROCm error line.",
		Cause: "The engine ships its own ROCm runtime (libhsa-runtime64, libamdhip64) or was built on a nightly one, and that runtime crashes while it opens the GPU, " +
			"before anything can print an error. TheRock nightlies 7.14.0a20260609 to 0612 jump to the bogus address 0x100000001 in GpuAgent::InitDma on GPUs " +
			"with one SDMA engine (TheRock#5763, fixed by rocm-systems#7053); prebuilts bundling them segfaulted on every model (unslothai/unsloth#6276, " +
			"lemonade-sdk/llamacpp-rocm#113). The same binary on the system's ROCm, or a newer bundle, starts.",
		Fix: "<engine dir>/llama-server --version   # a crash here, before any model loads, is the bundled runtime\n" +
			"ldd <engine dir>/llama-server | grep -E 'hsa-runtime64|amdhip64'   # which ROCm it loads: the bundle's or /opt/rocm's\n" +
			"# move the bundle's libhsa-runtime64.so*/libamdhip64.so* aside so the system ROCm loads (unslothai/unsloth#6276), or update the engine\n" +
			"# to a bundle built on a nightly from July 2026 on (7.15.0a20260707 runs, AMD-Ecosystem/llama.cpp#38); meanwhile the llamacpp-vulkan track",
		Links: issues("ROCm/TheRock#5763", "unslothai/unsloth#6276", "unslothai/unsloth#6308", "unslothai/unsloth#7310", "lemonade-sdk/llamacpp-rocm#113"),
		Signals: []string{"llama-server crashed at startup", "segfault at 100000001 ip 0000000100000001",
			"Segmentation fault right after llama-server --version"},
		pats: []pat{
			// Unsloth Studio's own words for it
			{lit: "llama-server crashed at startup"},
			// the kernel's report of the jump to 0x100000001 (TheRock#5763)
			{lit: "at 100000001 ip", re: `segfault at 100000001 ip 0000000100000001`},
			// --version prints the devices and exits: a crash there is the
			// runtime opening the GPU, not a model
			{lit: "Segmentation fault", after: []string{"llama-server --version"}, within: 3},
			{lit: "segmentation fault", after: []string{"llama-server --version"}, within: 3},
		},
	},
	{
		ID:      "wrong-output-junk-tokens",
		Title:   "The model answers junk: unused special tokens, all \"!\", NaN",
		Summary: "The stack runs and answers, but the answer is tokens no healthy model produces: runs of an unused special token (Gemma's unused49), all \"!\", NaN logits.",
		Signals: []string{"<unused49><unused49>… (a run of any <unusedN>, N < 100)", "probability tensor contains either", "WRONG OUTPUT: "},
		Cause: "The logits are garbage, not the model. NaN or inf (an fp16 overflow, a broken kernel) makes greedy decoding pick token 0, \"!\" in Qwen's and " +
			"Llama 3's vocabularies (vllm-project/vllm#37996: GPTQ on ROCm), and sampling fail on a NaN probability. On gfx1151 in 2026, llama.cpp's HIP " +
			"backend reads host-resident tensors through the iGPU's direct host access and gets wrong data, so Gemma 4 collapses into unused49 or " +
			"unused24 past a few thousand prompt tokens (llama.cpp#26239, #28211; ROCm 10.1 nightlies: TheRock#7714) while CPU and Vulkan answer right.",
		Fix: "llama-perplexity -m MODEL.gguf -f wiki.test.raw --chunks 6 -ngl 0; llama-perplexity … -ngl 99   # CPU against GPU: they must agree\n" +
			"GGML_CUDA_ENABLE_UNIFIED_MEMORY=1 llama-server …   # gfx1151, in llama.cpp builds before #28604 (2026-09-18; llama.cpp#28211)\n" +
			"llama-server --device Vulkan0 …   # or the llamacpp-vulkan track: the same GGUF answers right there\n" +
			"vllm serve … --dtype bfloat16   # vLLM: fp16 kernels (GPTQ, AWQ) overflow into NaN; bf16 activations do not",
		Links: issues("ggml-org/llama.cpp#26239", "ggml-org/llama.cpp#28211", "ROCm/TheRock#7714", "vllm-project/vllm#37996", "QwenLM/Qwen3#381"),
		pats: slices.Concat(unusedRuns(), []pat{
			// torch.multinomial on NaN probabilities (transformers' sampling)
			{lit: "probability tensor contains either"},
			// haloforge verify's verdict, when its evidence is junk
			{lit: "WRONG OUTPUT: ", re: `<unused\d+>|reserved_special_token|!!!!|\bNaN\b|\bnan\b|(?i)junk`},
		}),
	},
	{
		ID:      "wrong-output-perplexity",
		Title:   "Wrong numbers: perplexity explodes on the GPU backend",
		Summary: "The GPU backend computes different numbers from the CPU: perplexity in the thousands where CPU and Vulkan give single digits, or answers that disagree with a trusted reference.",
		Cause: "A GPU path that computes wrong values without crashing. On Strix Halo in 2026, llama.cpp's HIP backend marks gfx1151 as integrated and reads " +
			"host-resident weights directly, which returns wrong data: perplexity 1334 against 6.8 on CPU and Vulkan (noamsto/nix-amd-ai#105, #124), growing " +
			"with -ngl and with prompts longer than -ub (llama.cpp#28211). It came with HIP's integrated-GPU path in July 2026 (llama.cpp#24233) and " +
			"was fixed by llama.cpp#28604 (master ec92815, 2026-09-18, matches Vulkan); gfx1150 needed the same (noted in #28211).",
		Fix: "llama-perplexity -m MODEL.gguf -f wiki.test.raw -c 512 --chunks 6 -ngl 0   # the CPU's figure; with -ngl 99 it must agree to a few per cent\n" +
			"# llama.cpp from 2026-09-18 on (#28604; master ec92815 matches Vulkan), or the patch \"hip: disable direct host access on gfx1151\" (nix-amd-ai#128)\n" +
			"GGML_CUDA_ENABLE_UNIFIED_MEMORY=1 llama-server …   # meanwhile (or --no-mmap; HIP_LAUNCH_BLOCKING=1 confirms it, slowly: llama.cpp#26543)\n" +
			"llama-server --device Vulkan0 …   # or the llamacpp-vulkan track",
		Links: issues("noamsto/nix-amd-ai#105", "noamsto/nix-amd-ai#124", "ggml-org/llama.cpp#28211", "ggml-org/llama.cpp#28604", "noamsto/nix-amd-ai#128"),
		pats: []pat{
			// llama-perplexity's summary: four digits or more, or no number
			// (healthy models on wikitext read 3 to 60; the gfx1151 bug 727 to
			// 6473: llama.cpp#28211, JustVugg/colibri#1508)
			{lit: "Final estimate: PPL = ", re: `Final estimate: PPL = ([5-9]\d{2}|[1-9][\d,]{3,})(\.\d+)?\b|Final estimate: PPL = -?(nan|inf)\b`},
			// IREE/SHARK's perplexity report (nod-ai/amd-shark-ai#2691)
			{lit: `"mean_perplexity"`, re: `"mean_perplexity": ([5-9]\d{2}|[1-9]\d{3,})(\.\d+)?\b`},
			// haloforge verify's verdict when the answer is wrong but not
			// degenerate (junk and repetition are their own families)
			{lit: "WRONG OUTPUT: ", not: []string{"<unused", "reserved_special_token", "!!!!", "NaN", " nan", "junk", "Junk", "repeat"}},
		},
	},
	{
		ID:      "wrong-output-repeated-token",
		Title:   "Generation collapses into one repeated token",
		Summary: "The answer turns into one token repeated to the end of the request: the logits stopped depending on the context.",
		Cause: "On gfx1151 under memory pressure (other models loaded, a deep KV cache) llama.cpp's HIP path reads stale data through the iGPU's " +
			"host-coherent memory and every step yields the same token (ROCm/legacy-rocm-build#6616, llama.cpp#25992, #26209: an endless \"/\"); " +
			"it is the direct-host-access bug of wrong-output-perplexity. A model can also loop on its own at temperature 0: then the CPU loops too, " +
			"and a repetition penalty or a higher temperature is the fix. Ollama stops such a request itself (\"token repeat limit reached\").",
		Fix: "HIP_LAUNCH_BLOCKING=1 llama-server …   # if the repetition goes away, it is the GPU path, not the model (legacy-rocm-build#6616, llama.cpp#27579)\n" +
			"GGML_CUDA_ENABLE_UNIFIED_MEMORY=1 llama-server …   # keeps speed; or --no-mmap (llama.cpp#26543); llama.cpp with #28604 ends it\n" +
			"llama-server --device Vulkan0 …   # or the llamacpp-vulkan track\n" +
			"ollama run MODEL   # Ollama: /set parameter num_gpu 0, then the same prompt on the CPU tells the model's own loop from the stack's",
		Links: issues("ROCm/legacy-rocm-build#6616", "ggml-org/llama.cpp#25992", "ggml-org/llama.cpp#26209", "ollama/ollama#18374", "ggml-org/llama.cpp#26543"),
		pats: []pat{
			// Ollama's runner gives up on a token repeated past its limit:
			// a DEBUG line before 0.32, the request's error since
			{lit: "prediction aborted, token repeat limit reached"},
			// haloforge verify's verdict for an ordinary token repeated
			{lit: "WRONG OUTPUT: ", re: `(?i)repeat`, not: []string{"<unused", "reserved_special_token", "!!!!", "NaN", " nan", "junk", "Junk"}},
		},
	},
})

// nvidiaContext are lines that show a stream runs on an NVIDIA GPU: its
// name in ggml's or PyTorch's banner, or a CUDA build of torch. CUDA's
// errors use the words some HIP families look for ("invalid device
// function", "no kernel image is available", cudaMalloc), and on NVIDIA
// those families' fixes are wrong.
//
// Each literal is one the scan can skip cheaply: the newer collect_env
// layout ("ROCM used to build PyTorch   : N/A") would cost 4 % of the scan
// on healthy logs, for its run of spaces.
var nvidiaContext = []string{"NVIDIA GeForce", "Device 0: NVIDIA", "CUDA capability sm_", "ROCM used to build PyTorch: N/A"}

// vllmContext are lines that show a stream is vLLM's: its AITER switch,
// its start-up line on ROCm, or one of its frames in a traceback.
var vllmContext = []string{"VLLM_ROCM_USE_AITER", "detected platform rocm", "site-packages/vllm/", "dist-packages/vllm/", "vllm/model_executor/",
	"vllm/v1/attention/", "vllm/entrypoints/",
	// the V1 engine's start-up lines and its executor's log source
	// (kyuz0/amd-r9700-vllm-toolboxes#18). Not the "(EngineCore_DP0 pid=…)"
	// prefix: it starts every line of a vLLM log, and a context literal hit
	// on every line halved the scan's speed.
	"Initializing a V1 LLM engine", "vLLM API server version", "[multiproc_executor.py:"}

// lostDevice is a Vulkan device-lost report that counts only when no
// failed allocation came just before it: a submission that found no memory
// also ends in a lost device, and that is vulkan-device-memory-limit
// (leejet/stable-diffusion.cpp#2015). A device lost while a model loads is
// not a long request (llama.cpp#18962's regression at load).
func lostDevice(lit string) []pat {
	return []pat{{lit: lit, not: []string{"error loading model"}, unlessWithin: 30,
		unless: []string{"Not enough memory for command submission", "ErrorOutOfDeviceMemory", "VK_ERROR_OUT_OF_DEVICE_MEMORY", "to allocate Vulkan"}}}
}

// unusedRuns are two or more <unusedN> special tokens in a row, the way a
// model collapsed on garbage logits prints them (Gemma's <unused0> to
// <unused99>). One literal per N keeps every literal 14 bytes or longer; a
// tokenizer dump lists them apart ("<unused0>", "<unused1>"), never in a run.
func unusedRuns() []pat {
	out := make([]pat, 0, 100)
	for i := range 100 {
		out = append(out, pat{lit: "<unused" + strconv.Itoa(i) + "><unused", re: `(<unused\d+>){2,}`})
	}
	return out
}

// initCrash is a crash report that counts as the runtime's start-up
// segfault: within a few lines of rocminfo's banner, or of a torch.cuda
// probe other than a compiler's (a crashing clang is not the runtime).
func initCrash(lit string) []pat {
	return []pat{
		{lit: lit, after: []string{"ROCk module is loaded", "ROCk module version"}, within: 3},
		{lit: lit, after: []string{"torch.cuda.is_available", "torch.cuda.device_count", "torch.cuda.get_device"},
			within: 5, not: []string{"clang", "cc1plus", "command"}},
	}
}

// withSignals fills each rule's Signals from its patterns.
func withSignals(rs []Rule) []Rule {
	for i := range rs {
		if len(rs[i].Signals) > 0 {
			continue
		}
		seen := map[string]bool{}
		for _, p := range rs[i].pats {
			s := p.lit
			if p.marker {
				s = "no output after " + s
			}
			if !seen[s] {
				seen[s] = true
				rs[i].Signals = append(rs[i].Signals, s)
			}
		}
	}
	return rs
}
