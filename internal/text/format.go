package text

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Duration is haloforge's one way to show how long something took or may
// take, on a screen, in line mode and in messages alike: whole seconds,
// rounded (4s, 2m05s, 1h02m), and days from two days on (11 days).
func Duration(d time.Duration) string {
	if d < 0 {
		return "-" + Duration(-d)
	}
	d = d.Round(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	default:
		return Plural(int(d/(24*time.Hour)), "day")
	}
}

// Ms is a latency: milliseconds below ten seconds ("840 ms"), Duration
// from there.
func Ms(d time.Duration) string {
	if d < 10*time.Second {
		return fmt.Sprintf("%d ms", d.Milliseconds())
	}
	return Duration(d)
}

// Seconds is a short time where tenths matter (a budget, a benchmark's
// own time): "5s", "0.8s", "12.3s"; a minute or more as Duration.
func Seconds(d time.Duration) string {
	if d >= time.Minute || d <= -time.Minute {
		return Duration(d)
	}
	return trimZero(d.Seconds()) + "s"
}

// Ago says in words how long ago something happened, to the unit that
// matters: "just now", "5 minutes ago", "1 hour ago", "3 days ago".
func Ago(d time.Duration) string {
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return Plural(int(d/time.Minute), "minute") + " ago"
	case d < 48*time.Hour:
		return Plural(int(d/time.Hour), "hour") + " ago"
	}
	return Plural(int(d/(24*time.Hour)), "day") + " ago"
}

// Bytes is a size in binary units, as memory and limits are written: at
// most one decimal, none when it is whole ("96 GiB", "15.5 GiB",
// "512 MiB", "64 KiB", "100 bytes").
func Bytes(n int64) string {
	for _, u := range [...]struct {
		size int64
		name string
	}{{1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}} {
		// A size that would round to "1024.0" of the smaller unit is one
		// of this one.
		if a := float64(max(n, -n)); a >= float64(u.size)*(1-0.05/1024) {
			return trimZero(float64(n)/float64(u.size)) + " " + u.name
		}
	}
	return Plural(int(n), "byte")
}

// trimZero is f with one decimal, without a trailing ".0".
func trimZero(f float64) string {
	return strings.TrimSuffix(strconv.FormatFloat(f, 'f', 1, 64), ".0")
}

// Plural is a count and its noun: "1 step", "2 steps", "0 lines". The
// plural adds an s; say an irregular one in full where it is used.
func Plural(n int, word string) string {
	if n == 1 || n == -1 {
		return strconv.Itoa(n) + " " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}

// OrNone is s, or "(none)" when s is empty: an absent value shown as such
// rather than as nothing.
func OrNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
