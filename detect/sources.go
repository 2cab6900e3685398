package detect

import (
	"regexp"
	"strconv"
	"strings"
)

var releaseRe = regexp.MustCompile(`^\d+\.\d+(?:\.\d+)?[\w.+~-]*$`)

// ParseUname reads `uname -r` or `uname -a` and returns the kernel release.
func ParseUname(s string) string {
	for _, l := range parsePasted(s).lines {
		f := strings.Fields(l)
		switch {
		case len(f) == 1 && releaseRe.MatchString(f[0]):
			return f[0]
		case len(f) >= 3 && f[0] == "Linux" && releaseRe.MatchString(f[2]):
			return f[2]
		}
	}
	return ""
}

// ParseLsmod returns the loaded module names.
func ParseLsmod(s string) map[string]bool {
	mods := map[string]bool{}
	for _, l := range parsePasted(s).lines {
		f := strings.Fields(l)
		if len(f) >= 2 && f[0] != "Module" {
			if _, err := strconv.Atoi(f[1]); err == nil {
				mods[f[0]] = true
			}
		}
	}
	return mods
}

// Modinfo is the part of `modinfo amdgpu` that tells in-tree from dkms.
type Modinfo struct {
	Filename, Version, Vermagic string
}

// ParseModinfo reads `modinfo amdgpu`.
func ParseModinfo(s string) Modinfo {
	var m Modinfo
	for _, l := range parsePasted(s).lines {
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		switch strings.TrimSpace(k) {
		case "filename":
			m.Filename = v
		case "version":
			m.Version = v
		case "vermagic":
			if f := strings.Fields(v); len(f) > 0 {
				m.Vermagic = f[0]
			}
		}
	}
	return m
}

// DKMS reports whether the module file is one DKMS built (updates/dkms or extra/).
func (m Modinfo) DKMS() *bool {
	if m.Filename == "" {
		return nil
	}
	return ptr(strings.Contains(m.Filename, "/updates/dkms/") || strings.Contains(m.Filename, "/extra/") || strings.Contains(m.Filename, "/updates/amdgpu"))
}

// ParseFirmwareMES returns the MES firmware version from amdgpu_firmware_info.
func ParseFirmwareMES(s string) string {
	re := regexp.MustCompile(`^MES feature version: \d+, firmware version: (0x[0-9a-fA-F]+)`)
	for _, l := range parsePasted(s).lines {
		if m := re.FindStringSubmatch(strings.TrimSpace(l)); m != nil {
			return strings.ToLower(m[1])
		}
	}
	return ""
}

// ParseMeminfo returns MemTotal in bytes from /proc/meminfo.
func ParseMeminfo(s string) *int64 {
	for _, l := range parsePasted(s).lines {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "MemTotal:"); ok {
			if n, ok := parseSize(strings.TrimSpace(v), 1024); ok {
				return &n
			}
		}
	}
	return nil
}

// ParseFree returns the "Mem:" total of `free`. The unit comes from the
// command line when it was pasted (free -m, -g, -h), else KiB, free's default.
func ParseFree(s string) *int64 {
	p := parsePasted(s)
	unit := int64(1024)
	for _, c := range p.commands {
		unit = freeUnit(c, unit)
	}
	for _, l := range p.lines {
		f := strings.Fields(l)
		if len(f) >= 2 && f[0] == "Mem:" {
			if n, ok := parseSize(f[1], unit); ok {
				return &n
			}
		}
	}
	return nil
}

func freeUnit(cmd string, def int64) int64 {
	f := strings.Fields(cmd)
	if len(f) == 0 || f[0] != "free" {
		return def
	}
	for _, a := range f[1:] {
		switch a {
		case "-b", "--bytes":
			return 1
		case "-k", "--kibi":
			return 1 << 10
		case "-m", "--mebi":
			return 1 << 20
		case "-g", "--gibi":
			return 1 << 30
		}
	}
	return def
}

var sizeRe = regexp.MustCompile(`^(\d+(?:\.\d+)?)\s*([KMGT]i?B?|B|kB)?$`)

// parseSize reads "131171464 kB", "125Gi", "512 MB" (MB read as MiB, as the
// tools mean it) or a bare number in unit bytes.
func parseSize(s string, unit int64) (int64, bool) {
	m := sizeRe.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return 0, false
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0, false
	}
	mult := unit
	switch strings.TrimSuffix(strings.ToUpper(m[2]), "B") {
	case "K", "KI":
		mult = 1 << 10
	case "M", "MI":
		mult = 1 << 20
	case "G", "GI":
		mult = 1 << 30
	case "T", "TI":
		mult = 1 << 40
	case "":
		if m[2] != "" {
			mult = 1
		}
	}
	b := v * float64(mult)
	if b < 0 || b > 1<<62 {
		return 0, false
	}
	return int64(b), true
}

// ParseOSRelease returns the keys of /etc/os-release.
func ParseOSRelease(s string) map[string]string {
	return parseEnvLines(s)
}

// ParseEnv returns KEY=VALUE pairs (env, export lines, .env files).
func ParseEnv(s string) map[string]string { return parseEnvLines(s) }

func parseEnvLines(s string) map[string]string {
	out := map[string]string{}
	for _, l := range parsePasted(s).lines {
		t := strings.TrimPrefix(strings.TrimSpace(l), "export ")
		k, v, ok := strings.Cut(t, "=")
		if !ok || k == "" || strings.ContainsAny(k, " \t") {
			continue
		}
		out[k] = strings.Trim(v, `"'`)
	}
	return out
}

var idGroupsRe = regexp.MustCompile(`\d+\(([^)]+)\)`)

// ParseGroups reads `groups`, `id -Gn` or `id` output.
func ParseGroups(s string) []string {
	_, g := ParseGroupsUser(s)
	return g
}

var idUserRe = regexp.MustCompile(`uid=\d+\(([^)]+)\)`)

// ParseGroupsUser also returns the user name when the output carries one
// (`groups USER`: "USER : g1 g2", or `id`: "uid=1000(USER) …").
func ParseGroupsUser(s string) (string, []string) {
	var out []string
	user := ""
	for _, l := range parsePasted(s).lines {
		t := strings.TrimSpace(l)
		if t == "" {
			continue
		}
		if _, g, ok := strings.Cut(t, "groups="); ok {
			if m := idUserRe.FindStringSubmatch(t); m != nil {
				user = m[1]
			}
			for _, m := range idGroupsRe.FindAllStringSubmatch(g, -1) {
				out = append(out, m[1])
			}
			return user, out
		}
		if u, g, ok := strings.Cut(t, " : "); ok {
			user, t = strings.TrimSpace(u), g
		}
		return user, strings.Fields(t)
	}
	return user, out
}

// ParseDf returns the available bytes and mount point of `df -P` / `df -h`.
func ParseDf(s string) (avail *int64, mount string) {
	unit := int64(1024)
	for _, l := range parsePasted(s).lines {
		f := strings.Fields(l)
		if len(f) >= 2 && f[0] == "Filesystem" {
			if strings.HasPrefix(f[1], "1B") {
				unit = 1
			}
			continue
		}
		if len(f) >= 6 {
			if n, ok := parseSize(f[3], unit); ok {
				return &n, f[len(f)-1]
			}
		}
	}
	return nil, ""
}

var versionRe = regexp.MustCompile(`\d+\.\d+(?:\.\d+)*`)

// ParseToolVersion returns the first dotted version in `tool --version` output.
func ParseToolVersion(s string) string {
	for _, l := range parsePasted(s).lines {
		if strings.Contains(l, "not found") || strings.Contains(l, "No such file") {
			return ""
		}
		if v := versionRe.FindString(l); v != "" {
			return v
		}
	}
	return ""
}

// ParseManifest reads collect.txt: "name: status" per collector.
func ParseManifest(s string) map[string]string {
	out := map[string]string{}
	for _, l := range parsePasted(s).lines {
		k, v, ok := strings.Cut(l, ":")
		if ok && !strings.ContainsAny(k, " \t") {
			out[k] = strings.TrimSpace(v)
		}
	}
	return out
}

// ParseDev reads dev.txt ("/dev/kfd ok|missing|denied" lines) or pasted
// `ls -l /dev/kfd` output, and returns the state of /dev/kfd.
func ParseDev(s string) string {
	for _, l := range parsePasted(s).lines {
		t := strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(t, "/dev/kfd "):
			return strings.TrimSpace(strings.TrimPrefix(t, "/dev/kfd "))
		case strings.Contains(t, "/dev/kfd") && strings.Contains(t, "No such file"):
			return "missing"
		case strings.Contains(t, "/dev/kfd") && strings.Contains(t, "Permission denied"):
			return "denied"
		case strings.HasPrefix(t, "c") && strings.HasSuffix(t, "/dev/kfd"):
			return "present"
		}
	}
	return ""
}
