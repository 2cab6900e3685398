package diagnose

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// heldOutSet is a set of real logs from public issues that are not in the
// shared corpus, each row with its source: the rules were written from
// testdata/FAILURES.md and the corpus, and these sets measure how they generalise.
// Rows whose family is "none" are healthy or noisy output, or failures of
// other stacks, and must stay quiet. Each set's first run was blind; what
// it missed then is recorded with it, and the rule changes it led to are
// commented in rules.go with their source.
type heldOutSet struct {
	name     string // its file: testdata/NAME.jsonl
	firstRun string // what its first, blind run found
	// minRecognised is the recall it reached after generalising: it may
	// rise, it must not silently fall.
	minRecognised int
	// knownFalse are its rows the rules flag although they are healthy or
	// of another cause, with why.
	knownFalse map[string]string
	// fresh sets were collected blind to every set before them: no thread
	// in two sets, and at least minFailing failure excerpts and minHealthy
	// healthy or noisy ones.
	fresh                  bool
	minFailing, minHealthy int
	// learnt are the signatures its misses taught, fed other wordings of
	// the same failures (so they are not fitted to one log) and near misses
	// that must stay quiet.
	learnt []wordingCase
}

func (s heldOutSet) path() string { return "testdata/" + s.name + ".jsonl" }

// heldOutSets are the held-out rounds in the order they were collected.
// Blind recall (measured before rules were changed from them):
// holdout/blind/blind3 51/61 (83.6 %), blind4 31/37 (83.8 %), blind5 26/37
// (70.3 %), blind6 29/35 (82.9 %), blind7 23/32 (71.9 %), blind8 23/32
// (71.9 %), blind9 15/21 (71.4 %), blind10 18/21 (85.7 %), blind11 23/24
// (95.8 %, after the signatures mined from the tools' own messages):
// 239/300 (79.7 %) over all blind rounds. False alarms: one healthy row in
// blind4 (n07, CMake 3.x's deprecation warning, since fixed), none in
// blind5 to blind11 (79/79 healthy rows quiet), and three of blind8's
// traps, other causes printing a family's exact message.
var heldOutSets = []heldOutSet{
	// The first three sets, over which the blind recall was 51/61 (83.6 %),
	// with 27/27 healthy or unrelated rows quiet and one false family.
	{name: "holdout", minRecognised: 58, firstRun: "34/37 recognised (91.9 %), 17/17 quiet, one unrelated extra family " +
		`(a "(out)" double free taken for the amdsmi one); missed: old rocBLAS wording, clang ≤ 11 "Unsupported", ` +
		"an undefined symbol from another ROCm release"},
	{name: "blind", minRecognised: 10, firstRun: "6/10 recognised (60 %), 5/5 quiet, no extra family; missed: podman's capitalised " +
		`"Unable to find group render", and three ways flash attention says it is unavailable`},
	{name: "blind3", minRecognised: 14, firstRun: "11/14 recognised (78.6 %), 5/5 quiet, no extra family; missed: uv's wording of an " +
		"unsatisfiable requirement (twice), and TensorFlow's loader wording of a missing libMIOpen"},
	// blind4 is a fourth held-out set, collected fresh from public issues after
	// the rules were tuned on the corpus and the first three sets: 37 failure
	// excerpts over 27 families and 13 healthy, noisy or unrelated excerpts,
	// none from a thread already in the other sets. Labels come from reading
	// each thread, not from what the rules report.
	//
	// First run, before any rule change (rules.go as tuned on the earlier sets):
	// 31/37 recognised (83.8 %, all exact), 12/13 quiet, no extra family on a
	// failing row. Misses:
	//   - b02 rocblas-tensile-missing-arch: "rocBLAS error: Cannot read" with
	//     the TensileLibrary path wrapped onto the next line (rocBLAS#1267);
	//   - b13 vulkan-device-memory-limit: the C enum name
	//     VK_ERROR_OUT_OF_DEVICE_MEMORY instead of vulkan.hpp's
	//     ErrorOutOfDeviceMemory (mlc-llm#974);
	//   - b24 gfx-arch-not-in-allowlist: "Unknown GPU architecture: gfx1151.
	//     Supported architectures: […]" (gpustack#3880);
	//   - b27 therock-shared-lib-not-found: rocm_sdk's find_libraries raising
	//     KeyError: 'hipsparselt' when the rocm wheels lack a library torch
	//     preloads (TheRock#2345);
	//   - b29 rocm-device-lib-not-found: clang ≤ 11's "cannot find ROCm
	//     installation.  Provide its path via --rocm-path, or pass -nogpulib."
	//     (hip#2086);
	//   - b32 hsa-runtime-segfault-init: "clinfo" then "Segmentation fault",
	//     with libhsa-runtime64 named only in the issue title (ROCR-Runtime#68).
	//
	// False alarm: n07, CMake 3.x's harmless "Compatibility with CMake < 3.5
	// will be removed from a future version" deprecation warning, fired
	// cmake4-policy-version-minimum (pytorch#129906).
	//
	// The rule changes this led to are commented in rules.go with their source.
	// b32 is left as a miss on purpose: clinfo is a generic OpenCL tool, and a
	// segfault after it does not by itself point at the ROCm runtime.
	{
		name: "blind4", fresh: true, minRecognised: 36, minFailing: 25, minHealthy: 8,
		firstRun: "31/37 recognised (83.8 %), 12/13 quiet (cmake4 fired on a CMake 3.x deprecation warning); " +
			"missed: wrapped rocBLAS Tensile path, VK_ERROR_OUT_OF_DEVICE_MEMORY, \"Unknown GPU architecture\", " +
			"rocm_sdk KeyError for a missing library, clang ≤ 11 \"cannot find ROCm installation\", a clinfo segfault",
	},
	// blind5 is a fifth held-out set, collected from public issues after the
	// rules were generalised, to measure the rules as they are on logs nobody
	// has tuned against: 37 failure excerpts over 28 of the 37 testdata/FAILURES.md
	// families and 12 healthy or noisy excerpts, none from a thread (counting
	// ROCm/ROCm and ROCm/legacy-rocm-build numbers as one) or with a log already
	// in corpus, holdout, blind, blind3 or blind4 (the fresh check covers the
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
	// Its learnt cases checks the new signatures on other wordings of the
	// same failures and on near misses that must stay quiet.
	{
		name: "blind5", fresh: true, minRecognised: 32, minFailing: 30, minHealthy: 10,
		firstRun: "26/37 recognised (70.3 %), 12/12 healthy quiet, 1 extra family (b13); " +
			"missed: quoted-only gttsize warning, CK symbol in a self-built MIOpen, AITER \"Unknown gfx … in GPU_ARCHS\", " +
			"\"Flash attention was not compiled for current AMD GPU architecture\", ds4 \"ROCm tensor alloc failed\", " +
			"SIGSEGV without \"Segmentation fault\", HSA status 0x1010, prose --rocm-device-lib-path, hip-config.cmake, " +
			"prose AITER error, kernel crash under a wrong spoof",
		// Its learnt cases feeds the signatures learnt from blind5's misses
		// other wordings of the same failures (so they are not fitted to one log)
		// and near misses that must stay quiet: generic segfaults, out-of-memory
		// outside ROCm, other CMake packages, libraries that are not ROCm's, and
		// AITER's arch assertion without vLLM.
		learnt: []wordingCase{
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
		},
	},
	// blind6 is a sixth held-out set, collected from public issues after the
	// blind5 generalisation, by two collectors who did not see the rules:
	// 35 failure excerpts over 26 of the 37 testdata/FAILURES.md families and 13
	// healthy or noisy excerpts, verbatim log text only (no paraphrase), none
	// from a thread already in corpus, holdout, blind, blind3, blind4 or blind5
	// (the fresh check). Labels come from reading each thread; where a thread
	// confirms no fix, the row's fix field says the label is inferred.
	//
	// First run (rules.go as of commit 75b1a13): 29/35 recognised (82.9 %),
	// 13/13 healthy quiet, no extra family. Misses:
	//   - s15 vllm-aiter-arch-invalid: AITER's arch assertion inside vLLM's V1
	//     worker, whose only vLLM marks are the "(Worker_TP1 pid=…)" prefix and
	//     "[multiproc_executor.py:989]" (kyuz0/amd-r9700-vllm-toolboxes#18);
	//   - s17, s18 wheel-index-unreachable: pip's "HTTP error 404 while getting
	//     https://…" from a stale nightly index (ROCm/TheRock#1741,
	//     Comfy-Org/ComfyUI#12427);
	//   - s20 fbgemm-genai-link: only ninja's "FAILED: …fbgemm_genai.dir/…" line,
	//     the compiler's error not quoted (ROCm/TheRock#1408);
	//   - s34 rocm-version-mix-undefined-symbol: "undefined symbol:
	//     hipGetDevicePropertiesR0600" in a flash-attn extension built against
	//     another HIP (ROCm/flash-attention#31);
	//   - s36 hsa-runtime-segfault-init: gdb's `Thread 1 "rocminfo" received
	//     signal SIGSEGV` and a backtrace through rocr:: frames in
	//     libhsa-runtime64 (ROCm/rocm-systems#7071).
	//
	// After generalising (each new signature commented in rules.go with its
	// thread): 35/35, 13/13 quiet, no extra family. Its learnt cases
	// checks the new signatures on other wordings and on near misses.
	{
		name: "blind6", fresh: true, minRecognised: 35, minFailing: 30, minHealthy: 10,
		firstRun: "29/35 recognised (82.9 %), 13/13 healthy quiet, no extra family; " +
			"missed: AITER arch assertion under vLLM's V1 worker prefix, pip \"HTTP error 404 while getting\" (twice), " +
			"ninja FAILED line for fbgemm_genai, undefined hipGetDevicePropertiesR0600, gdb SIGSEGV in rocminfo's rocr:: frames",
		// Its learnt cases feeds the signatures learnt from blind6's misses
		// other wordings of the same failures, and near misses that must stay
		// quiet: AITER without vLLM, other HTTP failures, other FAILED targets,
		// link-time undefined references, and segfaults outside the runtime.
		learnt: []wordingCase{
			{"AITER arch assertion in vLLM's engine core", []string{
				"(EngineCore_DP0 pid=4242) INFO 11-20 10:01:02 [core.py:93] Initializing a V1 LLM engine",
				"(EngineCore_DP0 pid=4242) ERROR 11-20 10:01:09 [core.py:700] AssertionError: One of GPU archs of ['gfx1151'] is invalid or not supported",
			}, []string{"vllm-aiter-arch-invalid"}},
			{"AITER arch assertion in a standalone JIT build", []string{
				"[aiter] start build [module_aiter_enum] under /opt/aiter/aiter/jit/build",
				"AssertionError: One of GPU archs of ['gfx1151'] is invalid or not supported",
			}, nil},
			{"uv: the index answers 404", []string{
				"error: Failed to fetch: `https://rocm.nightlies.amd.com/v2/gfx1151/torch/`",
				"  Caused by: HTTP status client error (404 Not Found) for url (https://rocm.nightlies.amd.com/v2/gfx1151/torch/)",
			}, []string{"wheel-index-unreachable"}},
			{"pip: the index answers 503", []string{
				"ERROR: HTTP error 503 while getting https://download.pytorch.org/whl/rocm6.4/torch-2.8.0%2Brocm6.4-cp312-cp312-manylinux_2_28_x86_64.whl",
			}, []string{"wheel-index-unreachable"}},
			{"a private index that wants credentials", []string{
				"  Caused by: HTTP status client error (401 Unauthorized) for url (https://pypi.internal.example/simple/torch/)",
			}, nil},
			{"a model download that 404s", []string{
				"requests.exceptions.HTTPError: 404 Client Error: Not Found for url: https://huggingface.co/org/model/resolve/main/config.json",
			}, nil},
			{"make fails on an FBGEMM GenAI object", []string{
				"make[2]: *** [caffe2/CMakeFiles/fbgemm_genai.dir/build.make:76: caffe2/CMakeFiles/fbgemm_genai.dir/__/third_party/fbgemm/fbgemm_gpu/experimental/gen_ai/src/quantize/ck_extensions/fp8_rowwise_gemm.hip.o] Error 1",
			}, []string{"fbgemm-genai-rocm-build"}},
			{"ninja fails on another target", []string{
				"FAILED: caffe2/CMakeFiles/torch_hip.dir/__/aten/src/ATen/native/hip/Activation.hip.o",
			}, nil},
			{"ninja builds an FBGEMM GenAI object", []string{
				"[2231/7995] Building HIPCC object caffe2/aten/src/ATen/CMakeFiles/fbgemm_genai.dir/__/__/__/third_party/fbgemm/fbgemm_gpu/experimental/gen_ai/src/quantize/ck_extensions/x.hip.o",
			}, nil},
			{"hipBLAS symbol from another ROCm", []string{
				"OSError: /opt/llama/libggml-hip.so: undefined symbol: hipblasGemmEx_v2",
			}, []string{"rocm-version-mix-undefined-symbol"}},
			{"link-time undefined reference", []string{
				"/usr/bin/ld: kernels.o: undefined reference to `hipMalloc'",
			}, nil},
			{"gdb: hipInfo crashes", []string{
				`Thread 1 "hipInfo" received signal SIGSEGV, Segmentation fault.`,
			}, []string{"hsa-runtime-segfault-init"}},
			{"gdb: a program crashes in the runtime's frames", []string{
				"Program received signal SIGSEGV, Segmentation fault.",
				"0x00007ffff7a9c1b2 in ?? ()",
				"#0  0x00007ffff7a9c1b2 in ?? ()",
				"#1  0x00007ffff7ac1a1e in rocr::core::Runtime::Load() () from /opt/rocm/lib/libhsa-runtime64.so.1",
			}, []string{"hsa-runtime-segfault-init"}},
			{"gdb: python crashes in torch's frames", []string{
				`Thread 1 "python3" received signal SIGSEGV, Segmentation fault.`,
				"#0  0x00007fffe1a2b3c4 in at::native::add_kernel () from /venv/lib/python3.12/site-packages/torch/lib/libtorch_hip.so",
			}, nil},
			{"gdb: a hang's backtrace through the runtime", []string{
				"^C",
				"Thread 1 \"python3\" received signal SIGINT, Interrupt.",
				"#3  0x00007ffff7ab0123 in rocr::core::InterruptSignal::WaitRelaxed(hsa_signal_condition_t, long, unsigned long, hsa_wait_state_t) () from /opt/rocm/lib/libhsa-runtime64.so.1",
			}, nil},
		},
	},
	// blind7 is a seventh held-out set, collected after blind6's rule changes by
	// two collectors who did not see the rules, under the same brief: 32
	// failure excerpts over 21 families and 12 healthy or noisy excerpts,
	// verbatim log text, none from a thread in any earlier set
	// (the fresh check).
	//
	// First run (rules.go as of commit b3657f5): 23/32 recognised (71.9 %),
	// 12/12 healthy quiet. One failing row gained a second family: t26's
	// dmesg shows MES failing, then the "[gfxhub] page fault" it caused; the
	// page fault is really in the excerpt, so the row now lists it in "also".
	// Misses:
	//   - t12 gfx11-inline-asm-unsupported: "error: invalid operand for
	//     instruction" on wave64 asm in ck_tile (ROCm/composable_kernel#1646);
	//   - t13 gfx-arch-not-in-allowlist: rocRoller's "Invalid fromString: …
	//     GPUArchitectureGFXE, string input: gfx1150" (ROCm/rocm-libraries#3377);
	//   - t14, t15 wheel-index-unreachable: pip's "Retrying … after connection
	//     broken by 'NewConnectionError" / "ConnectTimeoutError", the host only
	//     in "Looking in indexes" (ROCm/TheRock#2884, bmaltais/kohya_ss#249);
	//   - t16 rocm-device-lib-not-found: a CMake project's own "ROCm Device
	//     Libs not found" (ROCm/hcc#1078);
	//   - t30 hsa-override-spoof-crash: PyTorch's "HIP error: an illegal memory
	//     access was encountered" under a spoof the excerpt does not show
	//     (ROCm/ROCm#5245);
	//   - t34 hsa-runtime-segfault-init: gdb's stop line "0x… in rocr::… from
	//     …libhsa-runtime64.so.1" without a "#N" frame number
	//     (ROCm/TheRock#2595);
	//   - t35 therock-shared-lib-not-found: "ImportError: liblzma.so.5" right
	//     after "from torch._C import *" (noamsto/nix-amd-ai#114);
	//   - t38 hip-oom-apu-gtt: ggml's "ROCm error: out of memory"
	//     (gpustack/gpustack#1547).
	//
	// After generalising (each signature commented in rules.go with its
	// thread; gpu-memory-access-fault and hsa-override-spoof-crash became
	// documented siblings, as both hints remove the spoof): 32/32, 12/12 quiet.
	// Its learnt cases checks the new signatures on other wordings and
	// near misses; a first, broader torch._C rule fired on two unrelated
	// holdout rows (torch's own libshm, CUDA's libcusparseLt) and was narrowed
	// to the system libraries TheRock bundles.
	{
		name: "blind7", fresh: true, minRecognised: 32, minFailing: 30, minHealthy: 10,
		firstRun: "23/32 recognised (71.9 %), 12/12 healthy quiet, 1 co-occurring family (t26); " +
			"missed: assembler \"invalid operand for instruction\", rocRoller's arch enum, pip connection retries (twice), " +
			"CMake \"ROCm Device Libs not found\", HIP illegal memory access under a spoof, gdb stop line in rocr::, " +
			"liblzma at torch._C, ggml \"ROCm error: out of memory\"",
		// Its learnt cases feeds the signatures learnt from blind7's misses
		// other wordings of the same failures, and near misses that must stay quiet.
		learnt: []wordingCase{
			{"assembler rejects inline asm", []string{
				"<inline asm>:1:2: error: invalid operand for instruction",
			}, []string{"gfx11-inline-asm-unsupported"}},
			{"C++ operand type error", []string{
				"csrc/ops.cpp:42:13: error: invalid operands to binary expression ('at::Tensor' and 'std::string')",
			}, nil},
			{"rocRoller lacks gfx1151", []string{
				"  what():  Invalid fromString: type name: N9rocRoller18GPUArchitectureGFXE, string input: gfx1151",
			}, []string{"gfx-arch-not-in-allowlist"}},
			{"rocRoller rejects a data type", []string{
				"  what():  Invalid fromString: type name: N9rocRoller8DataTypeE, string input: gfx_fp99",
			}, nil},
			{"pip times out reading the ROCm index", []string{
				"Looking in indexes: https://rocm.nightlies.amd.com/whl-multi-arch/",
				"WARNING: Retrying (Retry(total=3, connect=None, read=None, redirect=None, status=None)) after connection broken by 'ReadTimeoutError(\"HTTPSConnectionPool(host='rocm.nightlies.amd.com', port=443): Read timed out. (read timeout=15)\")': /whl-multi-arch/torch/",
			}, []string{"wheel-index-unreachable"}},
			{"pip retries PyPI, no custom index", []string{
				"WARNING: Retrying (Retry(total=4, connect=None, read=None, redirect=None, status=None)) after connection broken by 'NewConnectionError('<pip._vendor.urllib3.connection.HTTPSConnection object at 0x7f>: Failed to establish a new connection: [Errno 101] Network is unreachable')': /simple/requests/",
			}, nil},
			{"CMake cannot find the device libs", []string{
				"CMake Error at cmake/FindROCm.cmake:40 (message):",
				"  ROCm Device Libs not found.  Set ROCM_PATH.",
			}, []string{"rocm-device-lib-not-found"}},
			{"CMake finds the device libs", []string{
				"-- Found ROCm Device Libs: /opt/rocm/amdgcn/bitcode",
			}, nil},
			{"PyTorch's HIP illegal address", []string{
				"RuntimeError: HIP error: an illegal memory access was encountered",
			}, []string{"gpu-memory-access-fault"}},
			{"the same on NVIDIA", []string{
				"RuntimeError: CUDA error: an illegal memory access was encountered",
			}, nil},
			{"gdb stop line in the runtime", []string{
				`Thread 7 "python3" received signal SIGSEGV, Segmentation fault.`,
				"0x00007fffe0a1b2c3 in rocr::AMD::AqlQueue::ExecutePM4(unsigned int*, unsigned long, hsa_fence_scope_t, hsa_fence_scope_t, long*) () from /opt/rocm/lib/libhsa-runtime64.so.1",
			}, []string{"hsa-runtime-segfault-init"}},
			{"libnuma missing at torch._C", []string{
				`  File "/venv/lib/python3.12/site-packages/torch/__init__.py", line 290, in <module>`,
				"    from torch._C import *  # noqa: F403",
				"ImportError: libnuma.so.1: cannot open shared object file: No such file or directory",
			}, []string{"therock-shared-lib-not-found"}},
			{"CUDA's cuDNN missing at torch._C", []string{
				"    from torch._C import *  # noqa: F403",
				"ImportError: libcudnn.so.9: cannot open shared object file: No such file or directory",
			}, nil},
			{"ggml HIP backend out of memory", []string{
				"/llama.cpp/ggml/src/ggml-cuda/ggml-cuda.cu:88: ROCm error",
				"ROCm error: out of memory",
			}, []string{"hip-oom-apu-gtt"}},
			{"ggml CUDA backend out of memory", []string{
				"CUDA error: out of memory",
			}, nil},
		},
	},
	// blind8 is an eighth held-out set, collected after blind7's rule changes
	// by three collectors who did not see the rules, under the same brief (the
	// third on the families earlier rounds covered least, and on traps: real
	// failures of other causes that print a family's exact message): 32
	// failure excerpts over 21 families and 15 healthy, noisy or trap
	// excerpts, none from a thread in any earlier set (the fresh check).
	//
	// First run (rules.go as of commit 135dcc6): 23/32 recognised (71.9 %),
	// 12/15 quiet. Misses:
	//   - e04 build-oom-killed: GCC's older "internal compiler error: Killed
	//     (program cc1plus)" (PaddlePaddle/Paddle#14435);
	//   - e11 rocblas-tensile-missing-arch: hipBLASLt's "rocblaslt error: Cannot
	//     read …TensileLibrary_lazy_gfx1201.dat" (ollama/ollama#11555);
	//   - e17 triton-amd-llvm-isel-unsupported: "Failed to translate TritonGPU
	//     to LLVM IR" (pytorch/pytorch#101137);
	//   - e18 fbgemm-genai-link: an lld undefined ck:: symbol from an fp8
	//     rowwise object, FBGEMM named nowhere in the excerpt (pytorch/FBGEMM#3411);
	//   - e30 hip-oom-apu-gtt: an engine's own pre-flight memory warning
	//     (peonist-ai/halogen-flash-server#95);
	//   - e33 distrobox-podman-device-group: "can't open
	//     '/dev/dri/renderD128': Permission denied" (containers/podman#25897);
	//   - e34 distrobox-podman-device-group: docker's "Unable to find group
	//     keep-groups: no matching entries in group file"
	//     (lamikr/rocm_sdk_builder#247);
	//   - e35 hsa-runtime-segfault-init: "llama-server --version" then a bare
	//     "Segmentation fault" (unslothai/unsloth#6308);
	//   - e43 sdpa-flash-attn-not-available: PyTorch's "Memory efficient kernel
	//     not used because" (pytorch/pytorch#138864).
	//
	// False alarms: the three traps, each the family's exact message from
	// another cause (blind8KnownFalseAlarms).
	//
	// After generalising: 29/32 (90.6 %). e18, e30 and e35 stayed missed: no
	// signature covers them that would not also fire on healthy output.
	// Later, e35 (a bare segfault of Unsloth's bundled llama-server on
	// --version) became bundled-engine-crash-gfx1151, a documented sibling
	// of its label: 30/32.
	{
		name: "blind8", fresh: true, minRecognised: 30, minFailing: 30, minHealthy: 10,
		firstRun: "23/32 recognised (71.9 %), 12/15 quiet (the three traps); missed: GCC's ICE Killed, " +
			"hipBLASLt Tensile path, TritonGPU translation failure, lld ck:: symbol, engine pre-flight warning, " +
			"render node permission, docker keep-groups, bare segfault on --version, \"kernel not used because\"",
		knownFalse: blind8KnownFalseAlarms,
		// Its learnt cases feeds the signatures learnt from blind8's misses
		// other wordings of the same failures, and near misses that must stay quiet.
		learnt: []wordingCase{
			{"g++ killed by the OOM killer", []string{
				"g++: internal compiler error: Killed (program cc1plus)",
			}, []string{"build-oom-killed"}},
			{"a compiler crash that is not a kill", []string{
				"g++: internal compiler error: Segmentation fault signal terminated program cc1plus",
			}, nil},
			{"hipBLASLt cannot load its Tensile library", []string{
				"hipblaslt error: Could not load /opt/rocm/lib/hipblaslt/library/TensileLibrary_lazy_gfx1151.dat",
			}, []string{"rocblas-tensile-missing-arch"}},
			{"hipBLASLt loads its Tensile library", []string{
				"rocblaslt info: loaded /opt/rocm/lib/hipblaslt/library/TensileLibrary_lazy_gfx1151.dat",
			}, nil},
			{"Triton gives up lowering", []string{
				"LLVM ERROR: Failed to translate TritonGPU to LLVM IR.",
			}, []string{"triton-amd-llvm-isel-unsupported"}},
			{"/dev/kfd refused", []string{
				"open /dev/kfd: Permission denied",
			}, []string{"kfd-permission-no-gpu"}},
			{"another device refused", []string{
				"cat: can't open '/dev/ttyUSB0': Permission denied",
			}, nil},
			{"podman cannot map a named group", []string{
				"Error: unable to find group video: no matching entries in group file",
			}, []string{"distrobox-podman-device-group"}},
			{"a missing user, not a group", []string{
				"Error: unable to find user builder: no matching entries in passwd file",
			}, nil},
			{"SDPA refuses flash attention", []string{
				"UserWarning: Flash attention kernel not used because: (Triggered internally at ../aten/src/ATen/native/transformers/hip/sdp_utils.cpp:722.)",
			}, []string{"sdpa-flash-attn-not-available"}},
			{"a MoE kernel choice", []string{
				"INFO 11-20 fused_moe.py:412] fused MoE kernel not selected for batch size 1, using the default",
			}, nil},
		},
	},
	// blind9 is a ninth held-out set, collected after the signatures written
	// from the tools' own wordings (TestOtherWordings) had landed, to see
	// whether that broader layer lifts recall on first sight: 21 failure
	// excerpts and 10 healthy ones, none from a thread in any earlier set
	// (the fresh check). Smaller than the others: the collectors found most
	// obvious threads already used.
	//
	// First run (rules.go as of commit 6b532f3): 15/21 recognised (71.4 %),
	// 10/10 healthy quiet; the broader layer caught none of the misses:
	//   - g04 rocblas-tensile-missing-arch: rocBLAS's "Could not load
	//     …TensileLibrary_lazy_gfx1103.dat" (likelovewant/ROCmLibs-for-gfx1103-AMD780M-APU#12);
	//   - g05 hip-wrong-clang-unsupported-arch: the log holds only "instruction
	//     not supported on this GPU", the inline-asm family's message, from a
	//     Tensile build that picked up the distro's clang (rocm-arch/rocm-arch#412);
	//     the row lists that family in "also", as the excerpt really shows it;
	//   - g19 therock-shared-lib-not-found: libOpenCL.so.1 missing in the
	//     rocm_sdk self-test (ROCm/rocm-systems#5065);
	//   - g20 hsa-runtime-segfault-init: "Command '[…/rocminfo]' died with
	//     <Signals.SIGSEGV: 11>" (ROCm/TheRock#5779);
	//   - g22 therock-amdsmi-double-free: "Can't initialize amdsmi - Error
	//     code: 34" and an IndexError, the same conflict without the double
	//     free (ROCm/flash-attention#79);
	//   - g26 kfd-permission-no-gpu: an empty clinfo list as a user, a full one
	//     as root, no error text at all (ROCm/ROCm#1826).
	//
	// g21 also shows a missing libamdhip64 besides its ROCm mix: "also".
	//
	// After generalising: 18/21 (85.7 %). g05, g22 and g26 stay missed: their
	// text is another family's or none.
	{
		name: "blind9", fresh: true, minRecognised: 18, minFailing: 20, minHealthy: 10,
		firstRun: "15/21 recognised (71.4 %), 10/10 healthy quiet; missed: rocBLAS \"Could not load\" Tensile file, " +
			"a wrong clang showing the inline-asm message, libOpenCL in rocm_sdk's self-test, rocminfo SIGSEGV via subprocess, " +
			"\"Can't initialize amdsmi\", an empty clinfo list",
		// Its learnt cases feeds the signatures learnt from blind9's misses
		// other wordings of the same failures, and near misses that must stay quiet.
		learnt: []wordingCase{
			{"rocBLAS cannot find the arch's Tensile file", []string{
				"rocBLAS error: Unable to find /opt/rocm/lib/rocblas/library/TensileLibrary_lazy_gfx1151.dat",
			}, []string{"rocblas-tensile-missing-arch"}},
			{"rocBLAS names its Tensile file while loading it", []string{
				"rocBLAS info: loading /opt/rocm/lib/rocblas/library/TensileLibrary_lazy_gfx1151.dat",
			}, nil},
			{"amd-smi dies under subprocess", []string{
				"subprocess.CalledProcessError: Command '['amd-smi', 'static']' died with <Signals.SIGSEGV: 11>.",
			}, []string{"hsa-runtime-segfault-init"}},
			{"another tool dies under subprocess", []string{
				"subprocess.CalledProcessError: Command '['ffmpeg', '-i', 'in.mp4']' died with <Signals.SIGSEGV: 11>.",
			}, nil},
			{"rocm_sdk's preload cannot open a library", []string{
				`  File "/venv/lib/python3.12/site-packages/rocm_sdk/__init__.py", line 88, in preload_libraries`,
				"    ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)",
				"OSError: libdrm_amdgpu.so.1: cannot open shared object file: No such file or directory",
			}, []string{"therock-shared-lib-not-found"}},
			{"an unrelated library far from rocm_sdk", []string{
				"rocm_sdk.tests.core_test passed",
				"1", "2", "3", "4", "5", "6", "7", "8", "9",
				"OSError: libfoo.so.1: cannot open shared object file: No such file or directory",
			}, nil},
		},
	},
	// blind10 is a tenth held-out set, collected after a second layer of
	// broader same-line signatures had landed (commit 6685ec1), from less-known
	// repositories: 21 failure excerpts and 10 healthy ones, none from a thread
	// in any earlier set (the fresh check).
	//
	// First run (rules.go as of commit 6685ec1): 18/21 recognised (85.7 %),
	// 10/10 healthy quiet, no extra family. The same 18 were recognised by the
	// rules before either broader layer (commit b332bb1): the layers caught
	// nothing here either; this round's wordings were simply more common.
	// Misses:
	//   - k06 hip-invalid-image: HIP's "invalid kernel file"
	//     (hipErrorInvalidKernelFile) for gfx1201 kernels on a gfx1200
	//     (danielblnc/DLSS-NR-on-AMD#29);
	//   - k22 hip-oom-apu-gtt: old ggml's "CUDA error: out of memory" on ROCm,
	//     told apart from NVIDIA's only by the "hipMalloc(…)" call on the next
	//     line (ollama/ollama#738);
	//   - k23 vulkan-device-memory-limit: RADV's "Not enough memory for command
	//     submission" (leejet/stable-diffusion.cpp#2015).
	//
	// After generalising: 20/21. k22 stays missed: the only ROCm mark comes
	// after the error, and the matcher reads no line ahead.
	{
		name: "blind10", fresh: true, minRecognised: 20, minFailing: 20, minHealthy: 10,
		firstRun: "18/21 recognised (85.7 %), 10/10 healthy quiet, no extra family; missed: HIP \"invalid kernel file\", " +
			"ggml \"CUDA error: out of memory\" on ROCm, RADV \"Not enough memory for command submission\"",
		// Its learnt cases checks the signatures learnt from blind10's misses
		// on other wordings and near misses.
		learnt: []wordingCase{
			{"hipModuleLoad of a file for another target", []string{
				"hipModuleLoad(&module, \"kernels.hsaco\") failed: hipErrorInvalidKernelFile",
			}, []string{"hip-invalid-image"}},
			{"a kernel file loaded", []string{
				"loaded kernel file kernels_gfx1151.hsaco (42 kernels)",
			}, nil},
			{"RADV out of memory for a submission", []string{
				"radv/amdgpu: Not enough memory for command submission.",
			}, []string{"vulkan-device-memory-limit"}},
			{"RADV submits", []string{
				"radv/amdgpu: command submission 1234 done in 3 ms",
			}, nil},
		},
	},
	// blind11 is an eleventh held-out set, collected while signatures were
	// being mined from the tools' source code (TestCatalogWordings) and read
	// only after they had landed: 24 failure excerpts and 10 healthy ones, none
	// from a thread in any earlier set (the fresh check).
	//
	// First run (rules.go as of commit 9933601): 23/24 recognised (95.8 %),
	// 10/10 healthy quiet. The rules before any tool-wording layer (commit
	// b332bb1) recognise 21/24: the layers written from message catalogues
	// caught m20 (an older kernel's "MES failed to response msg=14") and m29
	// (ollama's "amdgpu is not supported"). Two failing rows also show a
	// second family that is really in their excerpt, listed in "also": m22's
	// page fault is followed by a gfx ring timeout, m28's invalid device
	// function by HSA's "Memory in use" as the process aborts.
	// Miss:
	//   - m27 rocm-version-mix-undefined-symbol: libtorch_hip.so missing RCCL's
	//     ncclCommInitRankScalable (ROCm/TheRock#723).
	//
	// After generalising: 24/24.
	{
		name: "blind11", fresh: true, minRecognised: 24, minFailing: 20, minHealthy: 10,
		firstRun: "23/24 recognised (95.8 %), 10/10 healthy quiet, 2 co-occurring families; " +
			"missed: libtorch_hip.so missing an RCCL symbol",
		// Its learnt cases checks the signature learnt from blind11's miss.
		learnt: []wordingCase{
			{"torch's HIP library misses a MIOpen symbol", []string{
				"ImportError: /venv/lib/python3.12/site-packages/torch/lib/libtorch_hip.so: undefined symbol: miopenSetTensorDescriptorV2",
			}, []string{"rocm-version-mix-undefined-symbol"}},
			{"torch's CUDA library misses an NCCL symbol", []string{
				"ImportError: /venv/lib/python3.12/site-packages/torch/lib/libtorch_cuda.so: undefined symbol: ncclCommRegister",
			}, nil},
		},
	},
}

// blind8KnownFalseAlarms are trap rows the rules flag, with why: the
// message is the family's own, and nothing in the excerpt tells the causes
// apart. A hint on them points at the wrong fix, which the user sees
// against the cause they know; left for a context signal that would
// separate them.
var blind8KnownFalseAlarms = map[string]string{
	"e44": "AITER registering its own QuantType twice prints pybind's exact \"type … is already registered\"",
	"e45": "a profiler's LD_PRELOAD tracer aborts with the exact \"double free or corruption (!prev)\", no Python in view",
	"e46": "a CUDA flashinfer install replaces torch with pip's exact \"Attempting uninstall: torch\"",
}

// TestHeldOutSets runs each set: its recall at least what it reached, its
// healthy rows quiet (or documented), no failing row with an unrelated
// family; a fresh set blind to every set before it; and what it taught.
func TestHeldOutSets(t *testing.T) {
	earlier := []string{"testdata/corpus.jsonl"}
	for _, set := range heldOutSets {
		t.Run(set.name, func(t *testing.T) {
			t.Run("recall", func(t *testing.T) {
				failing, hit := checkHeldOut(t, set.path(), set.knownFalse)
				t.Logf("first blind run: %s", set.firstRun)
				if hit < set.minRecognised {
					t.Errorf("recall %d/%d fell below the %d reached after generalising", hit, failing, set.minRecognised)
				}
			})
			if set.fresh {
				t.Run("fresh", func(t *testing.T) {
					checkFresh(t, set.path(), earlier, set.minFailing, set.minHealthy)
				})
			}
			if len(set.learnt) > 0 {
				t.Run("learnt", func(t *testing.T) { checkWordings(t, set.learnt) })
			}
		})
		earlier = append(earlier, set.path())
	}
}

// TestHeldOutRecall holds the recall over the first three sets, the ones
// collected before any round was fresh, to the issue's 90 %.
func TestHeldOutRecall(t *testing.T) {
	var allFailing, allHit int
	for _, set := range heldOutSets {
		if set.fresh {
			continue
		}
		failing, hit := countRecognised(t, set.path())
		allFailing += failing
		allHit += hit
	}
	recall := float64(allHit) / float64(allFailing)
	t.Logf("held-out recall over the first three sets: %d/%d (%.1f%%)", allHit, allFailing, 100*recall)
	if recall < 0.9 {
		t.Errorf("held-out recall %.1f%% below 90%%", 100*recall)
	}
}

// countRecognised is checkHeldOut's count without its reports.
func countRecognised(t *testing.T, path string) (failing, hit int) {
	for _, row := range loadSamples(t, path) {
		if row.Family == "none" {
			continue
		}
		failing++
		if _, ok := recognised(row.Family, familiesOf(t, row.Log)); ok {
			hit++
		}
	}
	return failing, hit
}

// checkHeldOut runs one set and returns its failing rows and how many of
// them were recognised (their family or a documented sibling). A healthy
// or unrelated row that yields a family fails the test unless knownFalse
// names it, with why.
func checkHeldOut(t *testing.T, path string, knownFalse map[string]string) (failing, hit int) {
	rows := loadSamples(t, path)
	var exact, close, quiet, healthy int
	var misses []string
	for _, row := range rows {
		got := familiesOf(t, row.Log)
		if row.Family == "none" {
			healthy++
			switch why, known := knownFalse[row.ID]; {
			case len(got) == 0:
				quiet++
			case known:
				t.Logf("known false alarm on %s (%s): %v, %s", row.ID, row.Source, got, why)
			default:
				t.Errorf("%s (%s): healthy or unrelated output yields %v", row.ID, row.Source, got)
			}
			continue
		}
		failing++
		e, c := recognised(row.Family, got)
		switch {
		case e:
			exact++
		case c:
			close++
		default:
			misses = append(misses, row.ID+" "+row.Family+" got "+strings.Join(got, ","))
		}
		if x := extras(row.Family, row.Also, got); len(x) > 0 {
			t.Errorf("%s (%s): unrelated families %v besides %s", row.ID, row.Source, x, row.Family)
		}
	}
	t.Logf("recall: %d/%d (%.1f%%: %d exact, %d documented sibling); quiet on %d/%d healthy or unrelated",
		exact+close, failing, 100*float64(exact+close)/float64(failing), exact, close, quiet, healthy)
	for _, m := range misses {
		t.Logf("missed: %s", m)
	}
	return failing, exact + close
}

// TestHeldOutSize keeps the main held-out set at the size the issue asks.
func TestHeldOutSize(t *testing.T) {
	failing, healthy := countRows(loadSamples(t, "testdata/holdout.jsonl"))
	if failing < 25 || healthy < 8 {
		t.Errorf("holdout too small: %d failing, %d healthy or unrelated (want ≥ 25 and ≥ 8)", failing, healthy)
	}
}

// countRows splits a set's rows into failure excerpts and healthy or
// unrelated ones (family "none").
func countRows(rows []sample) (failing, healthy int) {
	for _, row := range rows {
		if row.Family == "none" {
			healthy++
		} else {
			failing++
		}
	}
	return failing, healthy
}

var issueRef = regexp.MustCompile(`([\w.-]+/[\w.-]+)#(\d+)`)

// threadRefs normalises a source to repo#number keys; ROCm/ROCm and
// ROCm/legacy-rocm-build share issue numbers, so both count as one thread.
func threadRefs(source string) []string {
	var out []string
	for _, m := range issueRef.FindAllStringSubmatch(source, -1) {
		repo := strings.ToLower(m[1])
		if repo == "rocm/legacy-rocm-build" {
			repo = "rocm/rocm"
		}
		out = append(out, repo+"#"+m[2])
	}
	return out
}

// checkFresh keeps a blind set blind: every row names a thread, no thread
// appears twice, none is in an earlier set, and the set holds at least
// minFailing failure excerpts and minHealthy healthy or noisy ones.
func checkFresh(t *testing.T, path string, earlierSets []string, minFailing, minHealthy int) {
	t.Helper()
	earlier := map[string]string{}
	for _, p := range earlierSets {
		for _, row := range loadSamples(t, p) {
			for _, ref := range threadRefs(row.Source) {
				earlier[ref] = p
			}
		}
	}
	seen := map[string]string{}
	rows := loadSamples(t, path)
	for _, row := range rows {
		refs := threadRefs(row.Source)
		if len(refs) == 0 {
			t.Errorf("%s: source %q names no owner/repo#number thread", row.ID, row.Source)
		}
		slices.Sort(refs)
		for _, ref := range slices.Compact(refs) {
			if p, ok := earlier[ref]; ok {
				t.Errorf("%s: %s is already in %s", row.ID, ref, p)
			}
			if id, ok := seen[ref]; ok {
				t.Errorf("%s: %s is also row %s", row.ID, ref, id)
			}
			seen[ref] = row.ID
		}
	}
	failing, healthy := countRows(rows)
	if failing < minFailing || healthy < minHealthy {
		t.Errorf("%s too small: %d failing, %d healthy or noisy (want ≥ %d and ≥ %d)", path, failing, healthy, minFailing, minHealthy)
	}
}

// wordingCase is a log excerpt and the families it must yield: another
// wording of a known failure, or a near miss that must stay quiet (nil).
type wordingCase struct {
	name string
	log  []string
	want []string
}

// checkWordings runs each case through the matcher as one log.
func checkWordings(t *testing.T, cases []wordingCase) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			got := familiesOf(t, strings.Join(tt.log, "\n"))
			if !slices.Equal(got, tt.want) {
				t.Errorf("families %v, want %v", got, tt.want)
			}
		})
	}
}
