package cluster

import (
	"bufio"
	"os"
	"strings"
	"testing"
)

func feedFile(t *testing.T, name string) NetTransport {
	t.Helper()
	f, err := os.Open("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var tr NetTransport
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		tr.Feed(sc.Text())
	}
	return tr
}

// TestTransportOnRecordedLogs: which transport RCCL/NCCL took, read from
// real NCCL_DEBUG=INFO output.
func TestTransportOnRecordedLogs(t *testing.T) {
	for _, tt := range []struct {
		file, kind, devices, says string
		noIB                      bool
	}{
		{"nccl-socket-vllm-9329.log", "Socket", "[0]eth0:172.17.0.3<0>", "plain TCP", false},
		{"nccl-socket-noib-vllm-6370.log", "Socket", "[0]eno3:169.229.48.108<0> [1]lxcbr0:10.0.3.1<0> [2]tailscale0:100.72.221.35<0>", "it found no RDMA device", true},
		{"nccl-ib-roce-vllm-6201.log", "IB", "[0]={[0] mlx5_7:1/RoCE, [1] mlx5_6:1/RoCE} ; OOB eth0:10.164.53.65<0>", "RDMA between the nodes", false},
		{"nccl-channels-gdrdma-vllm-15100.log", "IB", "", "NET/IB", false},
		{"rccl-strixhalo-kyuz0-80.log", "", "", "has not said", false},
	} {
		tr := feedFile(t, tt.file)
		if tr.Kind != tt.kind || tr.Devices != tt.devices || tr.NoIB != tt.noIB || !strings.Contains(tr.Describe(), tt.says) {
			t.Errorf("%s: kind %q devices %q noIB %v: %s", tt.file, tr.Kind, tr.Devices, tr.NoIB, tr.Describe())
		}
	}
}

func TestRayNodesOnRecordedStatus(t *testing.T) {
	b, err := os.ReadFile("testdata/ray-status-vllm-12670.txt")
	if err != nil {
		t.Fatal(err)
	}
	if n := RayNodes(string(b)); n != 2 {
		t.Errorf("ray status lists %d active nodes, want 2", n)
	}
	if n := RayNodes("Active:\n (no active nodes)\nPending:\n 1 node_abc\n"); n != 0 {
		t.Errorf("pending nodes counted: %d", n)
	}
}
