package diagnose

import "testing"

// TestClusterWordings covers the cluster families' other wordings and the
// look-alikes next to them that must stay quiet: the tools' own messages
// (llama.cpp's rpc-server.cpp and --rpc option, RCCL's and NCCL's INFO and
// WARN lines, Ray's GCS client, vLLM's capture progress), written with the
// families; the real excerpts are rows c01–c13 of holdout.jsonl.
func TestClusterWordings(t *testing.T) {
	checkWordings(t, []wordingCase{
		{"zsh's wording of the old name", []string{"zsh: command not found: rpc-server"}, []string{"rpc-server-renamed"}},
		{"fish's wording of the old name", []string{"fish: Unknown command: rpc-server"}, []string{"rpc-server-renamed"}},
		{"the new name missing is another problem", []string{"bash: ggml-rpc-server: command not found"}, nil},
		{"llama-server built or loaded without RPC", []string{"error: invalid argument: --rpc"}, []string{"ggml-rpc-backend-missing"}},
		{"the RPC server's healthy banner", []string{
			"Starting RPC server v3.0.0",
			"  endpoint       : 10.89.77.11:50052",
			"  local cache    : /home/halo/.cache/llama.cpp/rpc/",
			"Accepted client connection",
			"recv returned 0 (peer closed?)",
			"Client connection closed",
		}, nil},
		{"RCCL start-up, then a kernel that does not exist for gfx1151", []string{
			"toolbox:4775:4775 [0] NCCL INFO RCCL version : 2.30.4-HEAD:2b22ab0",
			"toolbox:4775:4790 [0] /build/rccl/src/enqueue.cc:1432 NCCL WARN HIP failure 'invalid device function'",
		}, []string{"rccl-gfx1151-missing", "hip-invalid-device-function"}},
		{"an invalid device function without RCCL around is not RCCL's", []string{
			"HIP failure 'invalid device function'",
		}, []string{"hip-invalid-device-function"}},
		{"RCCL's RDMA provider mismatch", []string{
			"node1:123:456 [0] NCCL WARN NET/IB : Unknown completion opcode 128 status 5 vendor err 0",
		}, []string{"rdma-core-unknown-completion"}},
		{"other software's unknown completions", []string{
			"Unknown completion strategy 'fast'; using 'timeout'",
			"things-unknown|||Unknown completion|||not-a-date",
		}, nil},
		{"a healthy RoCE transport", []string{
			"hostname:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [RO]; OOB enp194s0np0:192.168.100.1<0>",
			"hostname:1:1 [0] NCCL INFO Using network IB",
			"hostname:1:1 [0] NCCL INFO comm 0x5600 rank 0 nranks 2 cudaDev 0 busId c5000 commId 0x1 - Init COMPLETE",
		}, nil},
		{"PyTorch's wording of the internal error", []string{
			"torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, internal error - please report this issue to the NCCL developers, NCCL version 2.21.5",
		}, []string{"nccl-comminit-internal-error"}},
		{"too few GPUs in the cluster, no node address demanded", []string{
			"(autoscaler +20s) Error: No available node types can fulfill resource request {'GPU': 1.0}. Add suitable node types to this cluster to resolve this issue.",
		}, nil},
		{"a Ray worker that joined", []string{
			"Local node IP: 192.168.100.2",
			"Ray runtime started.",
			"To terminate the Ray runtime, run",
			"  ray stop",
		}, nil},
		{"a graph capture that finished and was the last line", []string{
			"Capturing CUDA graphs (mixed prefill-decode, PIECEWISE): 100%|██████████| 67/67 [00:05<00:00, 11.74it/s]",
		}, nil},
		{"a capture that stopped part-way and said nothing more", []string{
			"(VllmWorker rank=0 pid=299) INFO 04-18 18:08:20 [gpu_model_runner.py:1686] Graph capturing starts",
			"Capturing CUDA graphs (decode, FULL):  12%|█▏        | 8/67 [00:02<00:15,  3.85it/s]",
		}, []string{"vllm-graph-capture-hang"}},
		{"the shm heartbeat far from any capture is something else", []string{
			"Capturing CUDA graphs (decode, FULL): 100%|██████████| 67/67 [00:03<00:00, 19.10it/s]",
			"INFO 10-22 09:33:55 [gpu_model_runner.py:3321] Graph capturing finished in 8 secs, took 0.52 GiB",
			"INFO 10-22 09:34:02 [api_server.py:1912] Starting vLLM API server 0 on http://0.0.0.0:8000",
			"(EngineCore_DP0 pid=77352) INFO 10-22 09:43:49 [shm_broadcast.py:466] No available shared memory broadcast block found in 60 seconds.",
		}, nil},
	})
}
