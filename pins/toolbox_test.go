package pins

import (
	"os"
	"strings"
	"testing"
)

func TestParseToolboxShippedFile(t *testing.T) {
	data, err := os.ReadFile("../toolbox/toolbox.env")
	if err != nil {
		t.Fatal(err)
	}
	f, err := ParseToolbox("toolbox.env", data)
	if err != nil {
		t.Fatal(err)
	}
	got, err := f.Over(map[string]string{"GPU_TARGET": "gfx1100", "ROCM_VERSION": "7.14.0", "HSA_OVERRIDE_GFX_VERSION": ""})
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	for _, p := range got {
		sb.WriteString(p.Name + "=" + p.Value + "\n")
	}
	// The pin wins over the file's GPU_TARGET, and the names that refer to
	// it follow the pin, as `source` with the pins exported would give.
	want := "WORK_DIR=/workspace\nVENV_DIR=/opt/venv\nGPU_TARGET=gfx1100\nPYTORCH_ROCM_ARCH=gfx1100\nGPU_ARCHS=gfx1100\n"
	if sb.String() != want {
		t.Errorf("resolved:\n%s\nwant:\n%s", sb.String(), want)
	}
}

func TestParseToolboxRefuses(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"command substitution", "# harmless\nWORK_DIR=/workspace$(touch /tmp/pwned-tbx)\n", "toolbox.env:2:20: command substitution $(…) is not allowed"},
		{"backticks", "VENV_DIR=`id`\n", "toolbox.env:1:10: backticks"},
		{"a pin", "ROCM_VERSION=7.14.0\n", "toolbox.env:1:1: unknown name ROCM_VERSION: toolbox.env defines only WORK_DIR, VENV_DIR, GPU_TARGET, PYTORCH_ROCM_ARCH, GPU_ARCHS"},
		{"an environment name", "LD_PRELOAD=/tmp/x.so\n", "unknown name LD_PRELOAD: toolbox.env defines only"},
		{"a relative directory", "WORK_DIR=workspace\n", `toolbox.env:1:1: WORK_DIR="workspace": want an absolute path`},
		{"a space in a path", "WORK_DIR='/work space'\n", "want a path without spaces or shell characters"},
		{"a bad target", "GPU_ARCHS='gfx1151;rm -rf'\n", "want LLVM targets"},
		{"a command", "touch /tmp/x\n", "only NAME=value lines are allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseToolbox("toolbox.env", []byte(tc.text))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func TestToolboxOverRevalidates(t *testing.T) {
	f, err := ParseToolbox("toolbox.env", []byte("GPU_TARGET=gfx1151\nGPU_ARCHS=${GPU_TARGET}\n"))
	if err != nil {
		t.Fatal(err)
	}
	// A value that takes a pin's through a ${REF} is checked again by its own
	// kind (pins.Parse would never let such a pin through; Over checks anyway).
	_, err = f.Over(map[string]string{"GPU_TARGET": "x;y"})
	if err == nil || !strings.Contains(err.Error(), `toolbox.env:2:1: GPU_ARCHS="x;y" (with the pins): want LLVM targets`) {
		t.Errorf("error %v", err)
	}
	// An empty pin is unset: the file's own value holds.
	got, err := f.Over(map[string]string{"GPU_TARGET": ""})
	if err != nil || len(got) != 2 || got[1].Value != "gfx1151" {
		t.Errorf("got %+v, %v", got, err)
	}
}

func TestValidValue(t *testing.T) {
	if err := ValidValue(KindImage, "127.0.0.1:5000/x/y:1@sha256:"+strings.Repeat("a", 64)); err != nil {
		t.Error(err)
	}
	if err := ValidValue(KindImage, "x y"); err == nil {
		t.Error("an image with a space passed")
	}
	if err := ValidValue(KindSHA, strings.Repeat("0", 40)); err != nil {
		t.Error(err)
	}
}
