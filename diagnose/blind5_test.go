package diagnose

import "testing"

// blind5 is a fifth held-out set, collected from public issues after the
// rules were generalised, to measure the rules as they are on logs nobody
// has tuned against: 37 failure excerpts over 28 of the 37 families of
// testdata/FAILURES.md and 12 healthy or noisy excerpts, none from a thread (counting
// ROCm/ROCm and ROCm/legacy-rocm-build numbers as one) or with a log already
// in corpus, holdout, blind, blind3 or blind4 (TestBlindSetsFresh checks the
// threads). Labels come from reading each thread, not from what the rules
// report; a thread whose failure fits no family exactly carries the closest
// family whose fix would help, with a note. No rule was changed for it.
//
// First run (rules.go as of 2026-11-22): 26/37 recognised (70.3 %, all
// exact), 12/12 healthy rows quiet, one failing row with an extra family.
// Misses:
//   - b05 ttm-gtt-config: the reporter only says "I saw a “Deprecated”
//     warning"; the kernel's gttsize text is not quoted (kyuz0/amd-strix-halo-toolboxes#39);
//   - b10 rocm-version-mix-undefined-symbol: libMIOpen.so.1 misses a
//     composable_kernel C++ symbol under a self-built /home/…/rocm-install
//     prefix, neither hsa_ nor a /rocm-X.Y path (ROCm/pytorch#2893);
//   - b13 gfx-arch-not-in-allowlist: AITER's "Unknown gfx 'gfx1100' in
//     GPU_ARCHS" is not the "Unknown GPU architecture: gfx" wording, and the
//     quoted "One of GPU archs of ['gfx1100'] is invalid" fires
//     vllm-aiter-arch-invalid instead (ROCm/aiter#4512, see the extra below);
//   - b16 sdpa-flash-attn-not-available: "Flash attention was not compiled
//     for current AMD GPU architecture" is not "not compiled with flash
//     attention" (ROCm/TheRock#1908);
//   - b19 hip-oom-apu-gtt: ds4's own "ROCm tensor alloc failed: out of
//     memory", no HIP/hipMalloc wording (antirez/ds4#475);
//   - b23 hsa-runtime-segfault-init: "SIGSEGV (exit 139), no traceback"
//     after torch.cuda.is_available(), without the words "Segmentation
//     fault" (kyuz0/amd-strix-halo-vllm-toolboxes#61);
//   - b24 hip-invalid-image: "executable_load failed (0x1010)", the HSA
//     status only as a number (Zaneham/Booth#44);
//   - b28 rocm-device-lib-not-found: a reporter's analysis naming
//     --rocm-device-lib-path and missing oclc_*.bc files, no clang error
//     (ROCm/TheRock#5448);
//   - b29 therock-hip-lang-cmake-missing: find_package(hip) cannot find
//     hip-config.cmake with pip-installed ROCm; the rule knows only the
//     hip-lang package (ggml-org/llama.cpp#26060);
//   - b35 vllm-aiter-arch-invalid: prose only, "an error related to aiter
//     not being available for the compute type" (ROCm/aiter#3294);
//   - b36 hsa-override-spoof-crash: a wrong HSA_OVERRIDE_GFX_VERSION crashes
//     the kernel ("KFD node 0 ih_fifo overflow"), not an Illegal instruction
//     (ROCm/rocm-systems#3531).
//
// False alarms on healthy rows: none on the first run.
//
// After generalising from these misses: 32/37 (86.5 %), 12/12 healthy
// quiet, no extra family. rules.go learnt the wordings users will meet
// again (b10, b13, b16, b19, b23, b29; each commented there with its
// thread), and vllm-aiter-arch-invalid now needs vLLM in the stream before
// AITER's arch assertion, so b13's plain AITER build no longer gets the
// "unset VLLM_ROCM_USE_AITER" hint. Still missed, as no general signature
// covers them without false alarms: b05, b24, b28, b35, b36.
// TestBlind5Generalised checks the new signatures on other wordings of the
// same failures and on near misses that must stay quiet.
const blind5FirstRun = "26/37 recognised (70.3 %), 12/12 healthy quiet, 1 extra family (b13); " +
	"missed: quoted-only gttsize warning, CK symbol in a self-built MIOpen, AITER \"Unknown gfx … in GPU_ARCHS\", " +
	"\"Flash attention was not compiled for current AMD GPU architecture\", ds4 \"ROCm tensor alloc failed\", " +
	"SIGSEGV without \"Segmentation fault\", HSA status 0x1010, prose --rocm-device-lib-path, hip-config.cmake, " +
	"prose AITER error, kernel crash under a wrong spoof"

const blind5Path = "testdata/blind5.jsonl"

// TestBlind5Generalised feeds the signatures learnt from blind5's misses
// other wordings of the same failures (so they are not fitted to one log)
// and near misses that must stay quiet: generic segfaults, out-of-memory
// outside ROCm, other CMake packages, libraries that are not ROCm's, and
// AITER's arch assertion without vLLM.
func TestBlind5Generalised(t *testing.T) {
	checkWordings(t, []wordingCase{
		{"AITER build-target table, other arch", []string{
			"RuntimeError: Unknown gfx 'gfx1151' in GPU_ARCHS — add it to GFX_CU_NUM_MAP in build_targets.py. Known targets: ['gfx942', 'gfx950']",
		}, []string{"gfx-arch-not-in-allowlist"}},
		{"AITER arch assertion under vLLM's switch", []string{
			"+ export VLLM_ROCM_USE_AITER=1",
			"+ vllm serve Qwen/Qwen3-8B",
			"AssertionError: One of GPU archs of ['gfx1151'] is invalid or not supported",
		}, []string{"vllm-aiter-arch-invalid"}},
		{"AITER arch assertion in a vLLM traceback", []string{
			"INFO 11-28 23:05:28 [__init__.py:225] Automatically detected platform rocm.",
			`  File "/usr/local/lib/python3.12/dist-packages/vllm/model_executor/layers/fused_moe/rocm_aiter_fused_moe.py", line 12, in <module>`,
			"AssertionError: One of GPU archs of ['gfx1151'] is invalid or not supported",
		}, []string{"vllm-aiter-arch-invalid"}},
		{"AITER arch assertion in a plain AITER build", []string{
			"+ GPU_ARCHS=gfx1151 python setup.py develop",
			"AssertionError: One of GPU archs of ['gfx1151'] is invalid or not supported",
		}, nil},
		{"vLLM named only after the assertion", []string{
			"AssertionError: One of GPU archs of ['gfx1151'] is invalid or not supported",
			"hint: do not set VLLM_ROCM_USE_AITER=1 on RDNA",
		}, nil},
		{"memory-efficient attention not compiled for the arch", []string{
			"UserWarning: Mem Efficient attention was not compiled for current AMD GPU architecture. Attempting to run on architecture gfx1151",
		}, []string{"sdpa-flash-attn-not-available"}},
		{"hipMalloc out of memory", []string{
			"ggml_hip: hipMalloc failed: out of memory (requested 8192.00 MiB)",
		}, []string{"hip-oom-apu-gtt"}},
		{"host malloc out of memory", []string{
			"tokenizer: malloc failed: out of memory",
		}, nil},
		{"zsh segfault after a torch.cuda probe", []string{
			`$ python -c 'import torch; print(torch.cuda.device_count())'`,
			`zsh: segmentation fault (core dumped)  python -c 'import torch; print(torch.cuda.device_count())'`,
		}, []string{"hsa-runtime-segfault-init"}},
		{"subprocess SIGSEGV after rocminfo's banner", []string{
			"ROCk module version 6.16.6 is loaded",
			"rocminfo died with <Signals.SIGSEGV: 11>.",
		}, []string{"hsa-runtime-segfault-init"}},
		{"container exit 139 after a torch.cuda probe", []string{
			`python3 -c "import torch; torch.cuda.is_available()"`,
			"vllm-1 exited with code 139",
		}, []string{"hsa-runtime-segfault-init"}},
		{"generic segfault, no runtime start-up", []string{
			"[ 42%] Linking CXX executable bin/llama-server",
			"zsh: segmentation fault (core dumped)  ./build/bin/llama-server -m model.gguf",
			"app-1 exited with code 139",
		}, nil},
		{"SIGSEGV of a compiler after a torch.cuda probe", []string{
			`python -c 'import torch; print(torch.cuda.is_available())'`,
			"clang++: error: clang frontend command failed with exit code 139 (use -v to see invocation)",
			"Signals.SIGSEGV raised by clang while compiling hip_kernels.hip",
		}, nil},
		{"find_package(hip) without hip-config.cmake", []string{
			`  Could not find a package configuration file provided by "hip" with any of`,
			"  the following names:",
			"    hipConfig.cmake",
			"    hip-config.cmake",
		}, []string{"therock-hip-lang-cmake-missing"}},
		{"another HIP library's CMake package", []string{
			`  Could not find a package configuration file provided by "hipblas" with any`,
		}, nil},
		{"rocBLAS from another build", []string{
			"ImportError: /opt/rocm/lib/librocblas.so.4: undefined symbol: _ZN7rocblas6detail13tensile_hostEv",
		}, []string{"rocm-version-mix-undefined-symbol"}},
		{"undefined symbol in a library that is not ROCm's", []string{
			"ImportError: /usr/lib/x86_64-linux-gnu/librocksdb.so.8: undefined symbol: _ZN7rocksdb2DB4OpenEv",
		}, nil},
	})
}
