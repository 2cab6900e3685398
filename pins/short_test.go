package pins

import "testing"

func TestShort(t *testing.T) {
	sha := "0123456789abcdef0123456789abcdef01234567"
	digest := "a92fa9cb915027468e85e147f4dd1c87f026d7974610280546a2a1f94a146889"
	for in, want := range map[string]string{
		sha:                                 "0123456789ab",
		"sha256:" + digest:                  "sha256:a92fa9cb9150",
		"docker.io/rocm/x@sha256:" + digest: "docker.io/rocm/x@sha256:a92fa9cb9150",
		"v0.11.0":                           "v0.11.0",
		"0123456789ABCDEF0123456789ABCDEF01234567": "0123456789ABCDEF0123456789ABCDEF01234567", // not git's lower-case hex
		"6e448d0ea9bf3d88d898b65449ca6dc2aec170ac": "6e448d0ea9bf",
		"main":       "main",
		"sha256:abc": "sha256:abc",
		"":           "",
	} {
		if got := Short(in); got != want {
			t.Errorf("Short(%q) = %q, want %q", in, got, want)
		}
	}
}
