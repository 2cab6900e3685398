package main

import (
	"runtime/debug"
	"strings"

	"golang.org/x/mod/module"
)

// What the linker stamps in (-X main.version=… and so on): a release
// (.goreleaser.yaml) sets all four, `make build` all but version. A plain
// `go build`, `go install` or `go run` sets none, and --version falls back
// on what Go recorded itself (buildStamp).
var (
	version   = "dev"
	commit    = "" // the full commit hash
	date      = "" // the build time, RFC 3339 in UTC
	treeState = "" // "dirty" when the checkout had uncommitted changes
)

// buildInfo is the binary's build information, nil when it has none.
func buildInfo() *debug.BuildInfo {
	info, _ := debug.ReadBuildInfo()
	return info
}

// stamp is what --version names: which version, which commit, and when.
type stamp struct {
	version string
	commit  string // a full hash, or the 12-character prefix a pseudo-version holds; "" when unknown
	dirty   bool   // built from a checkout with uncommitted changes
	date    string // RFC 3339; "" when unknown
	dateIs  string // "built" (the linker's stamp) or "committed" (Go's VCS stamp or a pseudo-version)
}

// linked is what the linker stamped in.
func linked() stamp {
	s := stamp{version: version, commit: commit, dirty: treeState == "dirty", date: date}
	if s.commit == "none" { // goreleaser's stand-in outside a git checkout
		s.commit = ""
	}
	if s.date != "" {
		s.dateIs = "built"
	}
	return s
}

// buildStamp completes what the linker stamped (s) from what Go recorded:
// the VCS stamp of a build in a git checkout (go build; go run only with
// -buildvcs=true), then the module version `go install …@version` records,
// whose pseudo-version form holds a commit and its time.
func buildStamp(s stamp, info *debug.BuildInfo) stamp {
	if info == nil {
		return s
	}
	mv := info.Main.Version
	if s.version == "dev" && mv != "" && mv != "(devel)" {
		s.version = mv
	}
	if s.commit == "" {
		for _, kv := range info.Settings {
			switch kv.Key {
			case "vcs.revision":
				s.commit = kv.Value
			case "vcs.modified":
				s.dirty = kv.Value == "true"
			case "vcs.time":
				if s.date == "" {
					s.date, s.dateIs = kv.Value, "committed"
				}
			}
		}
	}
	if s.commit == "" && module.IsPseudoVersion(mv) {
		s.commit, _ = module.PseudoVersionRev(mv)
		s.dirty = s.dirty || strings.HasSuffix(mv, "+dirty")
		if t, err := module.PseudoVersionTime(mv); err == nil && s.date == "" {
			s.date, s.dateIs = t.UTC().Format("2006-01-02T15:04:05Z"), "committed"
		}
	}
	return s
}

// String is the --version text after "haloforge version ": the version,
// then a line for the commit and one for the date, each saying plainly
// when the build did not record it and how to get a build that does.
func (s stamp) String() string {
	var b strings.Builder
	b.WriteString(s.version)
	b.WriteString("\ncommit ")
	switch {
	case s.commit == "" && strings.HasPrefix(s.version, "v"):
		b.WriteString("unknown (go install records none for a tag: " + s.version + " names it)")
	case s.commit == "":
		b.WriteString("unknown (this build recorded none: go run and go build -buildvcs=false never do; make build does)")
	default:
		b.WriteString(s.commit)
		if s.dirty {
			b.WriteString(" (dirty: built with uncommitted changes)")
		}
	}
	switch s.dateIs {
	case "built":
		b.WriteString("\nbuilt " + s.date)
	case "committed":
		b.WriteString("\ncommitted " + s.date + " (Go records no build time)")
	default:
		b.WriteString("\nbuilt unknown")
	}
	return b.String()
}
