package upstream

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseLsRemote(t *testing.T) {
	a, b, c := strings.Repeat("a", 40), strings.Repeat("b", 40), strings.Repeat("c", 40)
	out := a + "\trefs/heads/main\n" +
		b + "\trefs/tags/v0.27.1\n" +
		c + "\trefs/tags/v0.27.1^{}\n" +
		"warning: redirecting to https://github.com/x/y.git/\n" +
		"zzzz\trefs/heads/bad\n" +
		a + "\trefs/heads/main\n" + // a duplicate is ignored
		c + "\trefs/tags/orphan^{}\n" + // a peel without its tag is ignored
		strings.Repeat("d", 64) + "\trefs/heads/sha256-repo\n"
	refs, err := ParseLsRemote([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	want := []RemoteRef{
		{Name: "refs/heads/main", Object: a},
		{Name: "refs/tags/v0.27.1", Object: b, Peeled: c},
		{Name: "refs/heads/sha256-repo", Object: strings.Repeat("d", 64)},
	}
	if diff := cmp.Diff(want, refs); diff != "" {
		t.Errorf("refs (-want +got):\n%s", diff)
	}
	if refs[1].Commit() != c || refs[0].Commit() != a {
		t.Error("Commit() must be the peeled commit of an annotated tag")
	}
}

func TestClassifyGit(t *testing.T) {
	tests := []struct {
		stderr string
		kind   string // gone, unreachable, uncheckable
		reason string
	}{
		{"fatal: unable to access 'https://github.com/ROCm/aiter.git/': Could not resolve host: github.com", "unreachable", "could not resolve host"},
		{"fatal: unable to access 'https://github.com/x/': Failed to connect to github.com port 443 after 2 ms: Connection refused", "unreachable", "connection refused"},
		{"fatal: unable to access 'https://github.com/x/': Connection timed out after 10001 milliseconds", "unreachable", "no answer in time"},
		{"fatal: unable to connect to 127.0.0.1:\n127.0.0.1[0: 127.0.0.1]: errno=Connection refused", "unreachable", "connection refused"},
		{"fatal: could not read Username for 'https://github.com': terminal prompts disabled", "gone", "could not read Username"},
		{"remote: Repository not found.\nfatal: repository 'https://github.com/x/y.git/' not found", "gone", "Repository not found"},
		{"fatal: remote error: access denied or repository not exported: /nope.git", "gone", "access denied"},
		{"fatal: remote error: upload-pack: not our ref 0123456789abcdef0123456789abcdef01234567", "gone", "not our ref"},
		{"error: Server does not allow request for unadvertised object 0123", "uncheckable", "only branch and tag tips"},
		{"fatal: something new and strange", "unreachable", "something new and strange"},
	}
	for _, tc := range tests {
		err := classifyGit("github.com", &gitError{stderr: tc.stderr, err: errors.New("exit status 128")})
		var gone *goneError
		var ue *unreachableError
		var unc *uncheckableError
		kind := map[bool]string{errors.As(err, &gone): "gone", errors.As(err, &ue): "unreachable", errors.As(err, &unc): "uncheckable"}[true]
		if kind != tc.kind || !strings.Contains(err.Error(), tc.reason) {
			t.Errorf("%q → %s %q; want %s saying %q", tc.stderr, kind, err, tc.kind, tc.reason)
		}
		if ue != nil && ue.Host != "github.com" {
			t.Errorf("host %q", ue.Host)
		}
	}
	if err := classifyGit("github.com", &gitError{err: context.DeadlineExceeded}); !strings.Contains(err.Error(), "no answer in time") {
		t.Errorf("a timeout → %v", err)
	}
}

func TestGitReasonStripsPrefixes(t *testing.T) {
	got := gitReason("fatal: unable to access 'https://x/': The requested URL returned error: 502\n")
	if got != "The requested URL returned error: 502" {
		t.Errorf("gitReason = %q", got)
	}
}

func FuzzParseLsRemote(f *testing.F) {
	f.Add([]byte(strings.Repeat("a", 40) + "\trefs/heads/main\n" + strings.Repeat("b", 40) + "\trefs/tags/v1^{}\n"))
	f.Add([]byte("\t\n\x00refs/\t"))
	f.Fuzz(func(t *testing.T, data []byte) {
		refs, _ := ParseLsRemote(data)
		seen := map[string]bool{}
		for _, r := range refs {
			if !reObject.MatchString(r.Object) || (r.Peeled != "" && !reObject.MatchString(r.Peeled)) {
				t.Fatalf("kept a bad object %+v", r)
			}
			if seen[r.Name] || strings.HasSuffix(r.Name, "^{}") {
				t.Fatalf("bad or duplicate ref %q", r.Name)
			}
			seen[r.Name] = true
		}
	})
}
