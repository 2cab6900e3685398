package diagnose

import "testing"

// blind7 is a seventh held-out set, collected after blind6's rule changes by
// two collectors who did not see the rules, under the same brief: 32
// failure excerpts over 21 families and 12 healthy or noisy excerpts,
// verbatim log text, none from a thread in any earlier set
// (TestBlindSetsFresh).
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
// TestBlind7Generalised checks the new signatures on other wordings and
// near misses; a first, broader torch._C rule fired on two unrelated
// holdout rows (torch's own libshm, CUDA's libcusparseLt) and was narrowed
// to the system libraries TheRock bundles.
const blind7FirstRun = "23/32 recognised (71.9 %), 12/12 healthy quiet, 1 co-occurring family (t26); " +
	"missed: assembler \"invalid operand for instruction\", rocRoller's arch enum, pip connection retries (twice), " +
	"CMake \"ROCm Device Libs not found\", HIP illegal memory access under a spoof, gdb stop line in rocr::, " +
	"liblzma at torch._C, ggml \"ROCm error: out of memory\""

const blind7Path = "testdata/blind7.jsonl"

// TestBlind7Generalised feeds the signatures learnt from blind7's misses
// other wordings of the same failures, and near misses that must stay quiet.
func TestBlind7Generalised(t *testing.T) {
	checkWordings(t, []wordingCase{
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
	})
}
