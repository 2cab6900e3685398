package diagnose

import "testing"

// TestOtherWordings covers signatures written from the tools' own message
// catalogues rather than from a log someone posted: the same failure in
// another tool's, driver's or release's words (HSA status names, older
// kernels' spellings, the dynamic linker, urllib3, uv, LLVM's asm parser).
// Each comes with a near miss that must stay quiet. They were added before
// blind9 was collected, so blind9's first run measures them too.
func TestOtherWordings(t *testing.T) {
	checkWordings(t, []wordingCase{
		{"older kernel's MES spelling", []string{
			"[drm:mes_v11_0_submit_pkt_and_poll_completion.constprop.0 [amdgpu]] *ERROR* MES failed to response msg=3",
		}, []string{"amdgpu-mes-hang"}},
		{"copy engine ring timeout", []string{
			"[drm:amdgpu_job_timedout [amdgpu]] *ERROR* ring sdma0 timeout, signaled seq=857, emitted seq=859",
		}, []string{"amdgpu-mes-hang"}},
		{"a ring that did not time out", []string{
			"[drm] ring sdma0 test passed, signaled seq=12",
		}, nil},
		{"MMVM fault status on another hub", []string{
			"amdgpu 0000:c5:00.0: amdgpu: MMVM_L2_PROTECTION_FAULT_STATUS:0x00800932",
		}, []string{"gpu-page-fault"}},
		{"HIP module init without this arch", []string{
			"RuntimeError: HIP error: shared object initialization failed",
		}, []string{"hip-no-binary-for-gpu"}},
		{"HSA rejects the code object", []string{
			"hipModuleLoadData failed: HSA_STATUS_ERROR_INVALID_CODE_OBJECT: The code object is invalid.",
		}, []string{"hip-invalid-image"}},
		{"ggml Vulkan allocation failure", []string{
			"ggml_vulkan: Device memory allocation of size 4294967296 failed.",
		}, []string{"vulkan-device-memory-limit"}},
		{"ggml Vulkan allocation report", []string{
			"ggml_vulkan: Device memory allocation of size 4294967296 succeeded, 12 GiB free",
		}, nil},
		{"HSA aperture violation", []string{
			"HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION: The agent attempted to access memory beyond the largest legal address.",
		}, []string{"gpu-memory-access-fault"}},
		{"collect2 killed", []string{
			"collect2: fatal error: ld terminated with signal 9 [Killed]",
		}, []string{"build-oom-killed"}},
		{"the OOM killer takes cc1plus", []string{
			"[12345.678901] Out of memory: Killed process 40411 (cc1plus) total-vm:5120000kB, anon-rss:4900000kB",
		}, []string{"build-oom-killed"}},
		{"the OOM killer takes a browser", []string{
			"[12345.678901] Out of memory: Killed process 2211 (firefox) total-vm:9120000kB, anon-rss:7900000kB",
		}, nil},
		{"urllib3 gives up on the ROCm index", []string{
			"requests.exceptions.ConnectionError: HTTPSConnectionPool(host='rocm.nightlies.amd.com', port=443): Max retries exceeded with url: /whl-multi-arch/torch/ (Caused by NameResolutionError)",
		}, []string{"wheel-index-unreachable"}},
		{"urllib3 gives up on a model host", []string{
			"requests.exceptions.ConnectionError: HTTPSConnectionPool(host='huggingface.co', port=443): Max retries exceeded with url: /api/models",
		}, nil},
		{"uv finds no wheel for this platform", []string{
			"  ╰─▶ Because torch==2.9.0+rocm7.1 has no wheels with a matching platform tag (e.g., `manylinux_2_28_x86_64`), we can conclude that torch==2.9.0+rocm7.1 cannot be used.",
		}, []string{"wheel-index-unreachable"}},
		{"uv cannot fetch the ROCm index", []string{
			"error: Failed to fetch: `https://download.pytorch.org/whl/rocm6.4/torch/`",
		}, []string{"wheel-index-unreachable"}},
		{"HIP symbol version from another ROCm", []string{
			"./llama-server: /opt/rocm-6.2/lib/libamdhip64.so.6: version `hip_6.4' not found (required by ./libggml-hip.so)",
		}, []string{"rocm-version-mix-undefined-symbol"}},
		{"glibc symbol version", []string{
			"./llama-server: /lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.38' not found (required by ./llama-server)",
		}, nil},
		{"LLVM without this arch", []string{
			"clang++: error: unknown target CPU 'gfx1151'",
		}, []string{"hip-wrong-clang-unsupported-arch"}},
		{"rocminfo without the kernel driver", []string{
			"ROCk module is NOT loaded, possibly no GPU devices",
		}, []string{"kfd-permission-no-gpu"}},
		{"rocminfo with the kernel driver", []string{
			"ROCk module version 6.16.6 is loaded",
		}, nil},
		{"vLLM sees no GPU", []string{
			"RuntimeError: Failed to infer device type",
		}, []string{"kfd-permission-no-gpu"}},
		{"ollama's allow-list", []string{
			`level=WARN source=amd_linux.go:387 msg="amdgpu is not supported (supported types:[gfx1030 gfx1100 gfx1101 gfx1102])" gpu_type=gfx1151`,
		}, []string{"gfx-arch-not-in-allowlist"}},
		{"a library without gfx1151", []string{
			"RuntimeError: GPU architecture gfx1151 is not supported by this build of xformers",
		}, []string{"gfx-arch-not-in-allowlist"}},
		{"an architecture note that is not a refusal", []string{
			"INFO: detected architecture gfx1151 (RDNA 3.5), using wave32 kernels",
		}, nil},
		{"clang cannot find the ROCm tree", []string{
			"clang: error: cannot find HIP runtime; provide its path via '--rocm-path', or pass '-nogpuinc' to build without HIP runtime",
		}, []string{"rocm-device-lib-not-found"}},
		{"HIP's out-of-memory error", []string{
			"RuntimeError: HIP error: out of memory",
		}, []string{"hip-oom-apu-gtt"}},
		{"vLLM has no room for the KV cache", []string{
			"ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.",
		}, []string{"hip-oom-apu-gtt"}},
		{"vLLM reports its KV cache size", []string{
			"INFO 11-20 [kv_cache_utils.py:833] GPU KV cache size: 1,048,576 tokens",
		}, nil},
		{"flash-attn's arch requirement", []string{
			"RuntimeError: FlashAttention only supports AMD MI200 GPUs or newer.",
		}, []string{"sdpa-flash-attn-not-available"}},
		{"LLVM cannot select a node for the target", []string{
			"LLVM ERROR: Cannot select: t42: v2f16 = fmaxnum_ieee t40, t41",
		}, []string{"triton-amd-llvm-isel-unsupported"}},
		{"LLVM runs out of memory", []string{
			"LLVM ERROR: out of memory",
		}, nil},
		{"llama.cpp's ROCm back end does not start", []string{
			"ggml_cuda_init: failed to initialize ROCm: invalid device ordinal",
		}, []string{"kfd-permission-no-gpu"}},
		{"a crash inside the HIP runtime", []string{
			"Segmentation fault (core dumped) in /opt/rocm/lib/libamdhip64.so.6",
		}, []string{"hsa-runtime-segfault-init"}},
		{"a crash of a program", []string{
			"Segmentation fault (core dumped) ./my_app --input data.bin",
		}, nil},
		{"a library refuses gfx1151", []string{
			"RuntimeError: rocWMMA: gfx1151 is not supported",
		}, []string{"gfx-arch-not-in-allowlist"}},
		{"a library notes it falls back on gfx1151", []string{
			"Warning: gfx1151 is not supported by hipBLASLt, falling back to rocBLAS",
		}, nil},
		{"an engine's GPU out of memory", []string{
			"llama_model_load: error loading model: GPU out of memory (requested 24 GiB)",
		}, []string{"hip-oom-apu-gtt"}},
		{"a composable_kernel symbol from another build", []string{
			"ImportError: /venv/lib/python3.12/site-packages/xformers/_C.so: undefined symbol: _ZN2ck16tensor_operation6device8instance12add_instancesEv",
		}, []string{"rocm-version-mix-undefined-symbol"}},
		{"a boost symbol", []string{
			"ImportError: ./libfoo.so: undefined symbol: _ZN5boost6system15system_categoryEv",
		}, nil},
		{"asm parser rejects the operands", []string{
			"<inline asm>:2:3: error: operands are not valid for this GPU or mode",
		}, []string{"gfx11-inline-asm-unsupported"}},
	})
}
