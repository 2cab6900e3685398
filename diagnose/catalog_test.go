package diagnose

import "testing"

// TestCatalogWordings covers signatures taken from the tools' source code
// (ROCm/clr, rocBLAS, rocminfo, the amdgpu driver, ggml, ollama, Mesa, clang,
// CMake, podman) rather than from posted logs, each message as the source
// prints it, with the harmless look-alikes the same sources print next to
// them. Written before blind11 was read, so its first run measures them.
func TestCatalogWordings(t *testing.T) {
	checkWordings(t, []wordingCase{
		{"old HIP loader without a code object", []string{
			`"hipErrorNoBinaryForGpu: Unable to find code object for all current devices!"`,
		}, []string{"hip-no-binary-for-gpu"}},
		{"code object for another ISA", []string{
			":1:devprogram.cpp :2606: 12 us: Error: The program ISA amdgcn-amd-amdhsa--gfx1100 is not compatible with the device ISA amdgcn-amd-amdhsa--gfx1151",
		}, []string{"hip-invalid-image"}},
		{"rocBLAS finds no code objects for the arch", []string{
			"rocBLAS warning: No paths matched /opt/rocm/lib/rocblas/library/*gfx1151*co. Make sure that ROCBLAS_TENSILE_LIBPATH is set correctly.",
		}, []string{"rocblas-tensile-missing-arch"}},
		{"rocBLAS without its library directory", []string{
			"rocBLAS error: Could not initialize Tensile host: filesystem error: directory iterator cannot open directory: No such file or directory [/app/rocblas/library]",
		}, []string{"rocblas-tensile-missing-arch"}},
		{"rocBLAS finds no GPU", []string{
			"rocBLAS error: Could not initialize Tensile host: No devices found",
		}, []string{"kfd-permission-no-gpu"}},
		{"hipBLASLt's library path note", []string{
			"rocblaslt info: HIPBLASLT_TENSILE_LIBPATH not set. Using /opt/rocm/lib",
		}, nil},
		{"torch falls back from hipBLASLt", []string{
			"UserWarning: Attempting to use hipBLASLt on an unsupported architecture! Overriding blas backend to hipblas",
		}, nil},
		{"ollama cannot open /dev/kfd", []string{
			"amdgpu devices detected but permission problems block access: kfd driver not loaded.  If running in a container, remember to include '--device /dev/kfd --device /dev/dri'",
		}, []string{"kfd-permission-no-gpu"}},
		{"rocminfo without a passwd entry", []string{
			"Failed to get user name to check for video group membership",
		}, []string{"kfd-permission-no-gpu"}},
		{"a kernel whose KFD lacks this GPU", []string{
			"kfd kfd: amdgpu: GC IP 0b0501 not supported in kfd",
		}, []string{"kfd-permission-no-gpu"}},
		{"an old second GPU without KFD", []string{
			"kfd kfd: amdgpu: TOPAZ  not supported in kfd",
		}, nil},
		{"a queue out of memory, not out of access", []string{
			"Callback: Queue 0x7f12 aborting with error : HSA_STATUS_ERROR_OUT_OF_RESOURCES: The runtime failed to allocate the necessary resources. Available Free mem : 12 MB",
		}, []string{"hip-oom-apu-gtt"}},
		{"hipMalloc's own log line", []string{
			":1:hip_memory.cpp :321 : 99 us: Allocation failed : Device memory : required :4294967296 | free :1048576 | total :17179869184",
		}, []string{"hip-oom-apu-gtt"}},
		{"llama.cpp cannot place weights on ROCm0", []string{
			"llama_model_load: error loading model: unable to allocate ROCm0 buffer",
		}, []string{"hip-oom-apu-gtt"}},
		{"llama.cpp cannot place weights on Vulkan0", []string{
			"llama_model_load: error loading model: unable to allocate Vulkan0 buffer",
		}, []string{"vulkan-device-memory-limit"}},
		{"ggml Vulkan's older wording", []string{
			"ggml_vulkan: Memory allocation of size 4294967296 failed.",
		}, []string{"vulkan-device-memory-limit"}},
		{"ggml Vulkan's pinned memory falls back", []string{
			"ggml_vulkan: Failed to allocate pinned memory (vk::Device::allocateMemory: ErrorOutOfDeviceMemory)",
		}, nil},
		{"a queue aborted on a hardware exception", []string{
			"Callback: Queue 0x7f12 aborting with error : HSA_STATUS_ERROR_EXCEPTION: An HSAIL operation resulted in a hardware exception. code: 0x1016",
		}, []string{"gpu-hang-cwsr"}},
		{"newer MES naming its instance", []string{
			"amdgpu 0000:c5:00.0: amdgpu: MES(0, 0) failed to respond to msg=INVALIDATE_TLBS",
		}, []string{"amdgpu-mes-hang"}},
		{"MES stops draining its ring", []string{
			"amdgpu 0000:c5:00.0: amdgpu: MES ring buffer is full.",
		}, []string{"amdgpu-mes-hang"}},
		{"a video decode ring times out", []string{
			"[drm:amdgpu_job_timedout [amdgpu]] *ERROR* ring vcn_unified_0 timeout, signaled seq=11, emitted seq=12",
		}, nil},
		{"the fault's client decode", []string{
			"amdgpu 0000:c5:00.0: amdgpu: \t Faulty UTCL2 client ID: CPF (0x4)",
		}, []string{"gpu-page-fault"}},
		{"a misspelt GTT parameter", []string{
			"amdgpu: unknown parameter 'gtt_size' ignored",
		}, []string{"ttm-gtt-config"}},
		{"another module's unknown parameter", []string{
			"snd_hda_intel: unknown parameter 'power_save_ctl' ignored",
		}, nil},
		{"newer clang without the arch", []string{
			"clang++: error: unsupported HIP gpu architecture: gfx1151",
		}, []string{"hip-wrong-clang-unsupported-arch"}},
		{"CMake finds no ROCm root", []string{
			"CMake Error at /usr/share/cmake/Modules/CMakeDetermineHIPCompiler.cmake:217 (message):",
			"  Failed to find ROCm root directory.",
		}, []string{"therock-hip-lang-cmake-missing"}},
		{"podman refuses keep-groups with another group", []string{
			"Error: the '--group-add keep-groups' option is not allowed with any other --group-add options",
		}, []string{"distrobox-podman-device-group"}},
		{"vLLM's allow-list wrapped by CMake", []string{
			"CMake Error at cmake/utils.cmake:212 (message):",
			"  None of the detected ROCm architectures: gfx1151 is supported. Supported",
			"  ROCm architectures are: gfx90a;gfx942;gfx1100.",
		}, []string{"gfx-arch-not-in-allowlist"}},
		{"AITER's JIT module fails to build", []string{
			"[aiter] failed jit build [module_moe_asm]",
		}, []string{"gfx11-inline-asm-unsupported"}},
		{"AITER finishes a JIT module", []string{
			"[aiter] finish build [module_aiter_enum], cost 21.3s",
		}, nil},
		{"a CDNA hardware register in newer LLVM's words", []string{
			"<inline asm>:1:25: error: specified hardware register is not supported on this GPU",
		}, []string{"gfx11-inline-asm-unsupported"}},
		{"AITER's fp8 MFMA builtin", []string{
			"error: '__builtin_amdgcn_smfmac_f32_32x32x32_fp8_fp8' needs target feature fp8-insts",
		}, []string{"aiter-fp8-conversion-insts-gfx11"}},
		{"GlobalISel cannot select an AMDGPU intrinsic", []string{
			"LLVM ERROR: cannot select: G_INTRINSIC_W_SIDE_EFFECTS intrinsic(@llvm.amdgcn.wmma.f32.16x16x16.fp8)",
		}, []string{"triton-amd-llvm-isel-unsupported"}},
		{"an LLVM older than gfx1151", []string{
			"'gfx1151' is not a recognized processor for this target (ignoring processor)",
		}, []string{"triton-amd-llvm-isel-unsupported"}},
		{"old pip's torch conflict", []string{
			"ERROR: vllm 0.4.0 has requirement torch==2.1.2, but you'll have torch 2.3.0 which is incompatible.",
		}, []string{"vllm-torch-version-conflict"}},
		{"an extension build against a torch without ROCm", []string{
			"No ROCm runtime is found, using ROCM_HOME='/opt/rocm'",
		}, []string{"vllm-torch-version-conflict"}},
		{"two torch builds register one namespace", []string{
			"RuntimeError: Only a single TORCH_LIBRARY can be used to register the namespace prims; please put all of your definitions in a single TORCH_LIBRARY block.",
		}, []string{"two-torch-pybind-already-registered"}},
		{"rocm_sdk lacks a library torch asks for", []string{
			"ModuleNotFoundError: Missing required rocm libraries. Please refer to Python setup instructions, reinstall your virtual environment, or attempt to install manually via `pip install rocm[libraries]`",
		}, []string{"therock-shared-lib-not-found"}},
		{"rocm_sdk finds torch built for another ROCm", []string{
			"RuntimeError: The program was compiled against a ROCm version matching '7.10.*' but the installed ROCm version in this Python environment is 7.9.0.",
		}, []string{"rocm-version-mix-undefined-symbol"}},
		{"rocm_sdk without its devel package", []string{
			"ModuleNotFoundError: rocm_sdk_devel module for the ROCm SDK development package is not installed. This can typically be obtained by installing `rocm[devel]` from your package manager",
		}, []string{"therock-hip-lang-cmake-missing"}},
		{"an extension build without ROCM_HOME", []string{
			"OSError: ROCM_HOME environment variable is not set. Please set it to your ROCm install root.",
		}, []string{"rocm-device-lib-not-found"}},
		{"vLLM wants more memory than is free", []string{
			"ValueError: Free memory on device (12.1/64.0 GiB) on startup is less than desired GPU memory utilization (0.9, 57.6 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes.",
		}, []string{"hip-oom-apu-gtt"}},
		{"AITER finds no GPU through rocminfo", []string{
			"RuntimeError: No gfx arch found in rocminfo output.",
		}, []string{"kfd-permission-no-gpu"}},
		{"AITER's rocminfo lookup hits an unknown arch", []string{
			`RuntimeError: Get GPU arch from rocminfo failed "Unknown GPU architecture: gfx1201. Supported architectures: ['gfx942']"`,
		}, []string{"gfx-arch-not-in-allowlist"}},
		{"uv cannot find the package on the index", []string{
			"  ╰─▶ Because torch was not found in the package registry and you require torch, we can conclude that your requirements are unsatisfiable.",
		}, []string{"wheel-index-unreachable"}},
		{"vLLM has no attention backend for the GPU", []string{
			"ValueError: No valid attention backend found for AMD Radeon 8060S with head_size=256. Reasons: {ROCM_ATTN: [head size not supported]}.",
		}, []string{"sdpa-flash-attn-not-available"}},
		{"gcc cannot find the CK headers for FBGEMM GenAI", []string{
			"fbgemm_gpu/experimental/gen_ai/src/quantize/ck_extensions/fp8_rowwise_gemm.hip:9:10: fatal error: ck/config.h: No such file or directory",
		}, []string{"fbgemm-genai-rocm-build"}},
	})
}
