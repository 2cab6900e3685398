package pins

import (
	"maps"
	"slices"
)

// Change is one pin whose value differs; nil means absent on that side.
type Change struct {
	Old *string `json:"old"`
	New *string `json:"new"`
}

// Diff compares resolved values: a pin that changed only through a ${REF}
// counts as changed, because the scripts see the resolved value.
func Diff(before, after *File) map[string]Change {
	ov, nv := before.Values(), after.Values()
	out := map[string]Change{}
	for name, o := range ov {
		n, ok := nv[name]
		switch {
		case !ok:
			out[name] = Change{Old: ptr(o)}
		case n != o:
			out[name] = Change{Old: ptr(o), New: ptr(n)}
		}
	}
	for name, n := range nv {
		if _, ok := ov[name]; !ok {
			out[name] = Change{New: ptr(n)}
		}
	}
	return out
}

// ChangedNames lists the keys of a diff, sorted.
func ChangedNames(d map[string]Change) []string { return slices.Sorted(maps.Keys(d)) }

func ptr(s string) *string { return &s }
