package hostfix

import (
	"regexp"
	"strings"
)

// ModprobeEdit removes one module option from one /etc/modprobe.d file, so
// that the kernel command line is the one place GTT is set.
type ModprobeEdit struct {
	File   string `json:"file"`
	Module string `json:"module"`
	Param  string `json:"param"`
	Value  string `json:"value,omitempty"` // the value it had when planned
}

var optionsRe = regexp.MustCompile(`^([ \t]*options[ \t]+)([A-Za-z0-9_-]+)([ \t]+)(.*?)([ \t]*(?:#.*)?)$`)

// moduleName folds - to _, as modprobe does.
func moduleName(s string) string { return strings.ReplaceAll(s, "-", "_") }

// modOption is one param=value of an options line.
type modOption struct {
	file, module, param, value string
	line                       int
}

// modprobeOptions lists the options lines' parameters of a modprobe.d file.
// Lines continued with a backslash are not read: nothing on them is edited.
func modprobeOptions(path string, data []byte) []modOption {
	var out []modOption
	for i, l := range splitLinesKeep(string(data)) {
		body := strings.TrimRight(l, "\r\n")
		if strings.HasSuffix(body, `\`) {
			continue
		}
		m := optionsRe.FindStringSubmatch(body)
		if m == nil {
			continue
		}
		for _, t := range params(m[4], false) {
			out = append(out, modOption{file: path, module: moduleName(m[2]), param: t.key, value: t.value, line: i})
		}
	}
	return out
}

// removeModOption deletes param from the module's options lines of a file;
// a line left without parameters is deleted.
func removeModOption(path string, data []byte, module, param string) ([]byte, []lineChange) {
	lines := splitLinesKeep(string(data))
	var changes []lineChange
	var out []string
	for _, l := range lines {
		body := strings.TrimRight(l, "\r\n")
		eol := l[len(body):]
		m := optionsRe.FindStringSubmatchIndex(body)
		if m == nil || strings.HasSuffix(body, `\`) || moduleName(body[m[4]:m[5]]) != module {
			out = append(out, l)
			continue
		}
		opts := body[m[8]:m[9]]
		nopts := removeKey(opts, param, false)
		if nopts == opts {
			out = append(out, l)
			continue
		}
		if strings.TrimSpace(nopts) == "" {
			changes = append(changes, lineChange{path: path, before: l, after: ""})
			continue
		}
		nl := body[:m[8]] + nopts + body[m[9]:] + eol
		changes = append(changes, lineChange{path: path, before: l, after: nl})
		out = append(out, nl)
	}
	return []byte(strings.Join(out, "")), changes
}
