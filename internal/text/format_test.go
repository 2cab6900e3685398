package text

import (
	"testing"
	"time"
)

func TestFormats(t *testing.T) {
	tests := []struct {
		name, got, want string
	}{
		{"Duration zero", Duration(0), "0s"},
		{"Duration rounds down", Duration(400 * time.Millisecond), "0s"},
		{"Duration rounds up", Duration(600 * time.Millisecond), "1s"},
		{"Duration seconds", Duration(4400 * time.Millisecond), "4s"},
		{"Duration below a minute", Duration(59499 * time.Millisecond), "59s"},
		{"Duration rounds", Duration(59600 * time.Millisecond), "1m00s"},
		{"Duration minutes", Duration(125 * time.Second), "2m05s"},
		{"Duration hours", Duration(62*time.Minute + 10*time.Second), "1h02m"},
		{"Duration negative", Duration(-65 * time.Second), "-1m05s"},
		{"Duration two days on", Duration(47*time.Hour + 59*time.Minute), "47h59m"},
		{"Duration days", Duration(11*24*time.Hour + 5*time.Hour), "11 days"},
		{"Ms below ten seconds", Ms(842 * time.Millisecond), "842 ms"},
		{"Ms from ten seconds", Ms(12 * time.Second), "12s"},
		{"Seconds whole", Seconds(5 * time.Second), "5s"},
		{"Seconds tenths", Seconds(800 * time.Millisecond), "0.8s"},
		{"Seconds rounded to a tenth", Seconds(12340 * time.Millisecond), "12.3s"},
		{"Seconds from a minute", Seconds(65 * time.Second), "1m05s"},
		{"Ago now", Ago(20 * time.Second), "just now"},
		{"Ago one minute", Ago(90 * time.Second), "1 minute ago"},
		{"Ago hours", Ago(47 * time.Hour), "47 hours ago"},
		{"Ago minutes", Ago(45 * time.Minute), "45 minutes ago"},
		{"Ago days", Ago(72 * time.Hour), "3 days ago"},
		{"Ago a long time", Ago(400 * 24 * time.Hour), "400 days ago"},
		{"Bytes whole GiB", Bytes(96 << 30), "96 GiB"},
		{"Bytes one decimal", Bytes(15<<30 + 1<<29), "15.5 GiB"},
		{"Bytes MiB", Bytes(512 << 20), "512 MiB"},
		{"Bytes KiB", Bytes(64 << 10), "64 KiB"},
		{"Bytes fraction of a KiB", Bytes(1536), "1.5 KiB"},
		{"Bytes memory as reported", Bytes(16363974656), "15.2 GiB"},
		{"Bytes small", Bytes(100), "100 bytes"},
		{"Bytes one", Bytes(1), "1 byte"},
		{"Bytes just under a GiB is one", Bytes(1<<30 - 1), "1 GiB"},
		{"Bytes just under a MiB is one", Bytes(1<<20 - 10), "1 MiB"},
		{"Plural one", Plural(1, "step"), "1 step"},
		{"Plural many", Plural(3, "line"), "3 lines"},
		{"Plural zero", Plural(0, "known failure"), "0 known failures"},
		{"OrNone empty", OrNone(""), "(none)"},
		{"OrNone value", OrNone("b8091"), "b8091"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got %q, want %q", tt.got, tt.want)
			}
		})
	}
}
