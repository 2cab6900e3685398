package diagnose

import (
	"strings"
	"testing"
)

// TestFindingTextIsPrintable: the line a finding quotes goes to the screen
// as it is, so every control character the escape stripping leaves (BEL,
// backspace, C1 codes, a raw CSI 0x9b) and every bidi override or isolate is
// replaced; before, a known failure's line carried them to the terminal.
func TestFindingTextIsPrintable(t *testing.T) {
	for _, tc := range []struct{ name, line string }{
		{"bell and backspace", "hipErrorNoDevice \a ring \b\b\bxyz"},
		{"C1 CSI as UTF-8", "hipErrorNoDevice \u009b31m red \u009d0;title\u009c"},
		{"raw 8-bit CSI", "hipErrorNoDevice \x9b31m"},
		{"bidi override", "hipErrorNoDevice \u202eevil.sh\u202c"},
		{"bidi isolate", "hipErrorNoDevice \u2066x\u2069"},
		{"escape and bidi", "\x1b[31mhipErrorNoDevice\x1b[0m \u202ex"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs, err := Scan(strings.NewReader("build\n"+tc.line+"\n"), MatcherOptions{File: "x.log"})
			if err != nil || len(fs) == 0 {
				t.Fatalf("no finding: %v %v", fs, err)
			}
			for _, f := range fs {
				if i := strings.IndexFunc(f.Text, unprintableT); i >= 0 {
					t.Errorf("%s: text %q holds %U", f.Family, f.Text, []rune(f.Text[i:])[0])
				}
				if !strings.Contains(f.Text, "hipErrorNoDevice") {
					t.Errorf("%s: text %q lost the line", f.Family, f.Text)
				}
			}
		})
	}
	if got := capValid("plain text, tabs\tand ümlauts"); got != "plain text, tabs and ümlauts" {
		t.Errorf("capValid changed ordinary text: %q", got)
	}
}

func unprintableT(r rune) bool {
	return r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 || r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069
}
