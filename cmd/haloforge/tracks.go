package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/haloforge/haloforge/detect"
	"github.com/haloforge/haloforge/internal/safefile"
	"github.com/haloforge/haloforge/pins"
	"github.com/spf13/cobra"

	"github.com/haloforge/haloforge/internal/text"
	"github.com/haloforge/haloforge/steps"
	"github.com/haloforge/haloforge/steps/installed"
)

// trackJSON is one entry of `tracks --json` (the fields docs/json.md names).
type trackJSON struct {
	ID          string   `json:"id"`
	Title       string   `json:"title"`
	Status      string   `json:"status"`
	Description string   `json:"description"`
	GFX         []string `json:"gfx"`
	// History says why a track with status history is no longer offered.
	History  string            `json:"history,omitempty"`
	Pros     []string          `json:"pros"`
	Cons     []string          `json:"cons"`
	Requires []string          `json:"requires"`
	Steps    []stepJSON        `json:"steps"`
	Pins     map[string]string `json:"pins"`
	// LastRun is the track's last build with this state dir, null when
	// it never ran.
	LastRun *lastRunJSON `json:"last_run"`
	// Installed is what haloforge created for the track and holds on
	// disk (the state dir's record), DiskBytes their known sizes' sum.
	Installed []installed.Item `json:"installed"`
	DiskBytes int64            `json:"disk_bytes"`
}

// lastRunJSON is how a track's last build with the state dir ended.
type lastRunJSON struct {
	ID     string `json:"id"`
	Status string `json:"status"` // steps.Outcome*, the worst of its steps
	Dir    string `json:"dir"`
}

// tracksJSONSchema names the shape of tracks --json.
const tracksJSONSchema = "haloforge/tracks/v1"

type stepJSON struct {
	ID        string   `json:"id"`
	Title     string   `json:"title"`
	Script    string   `json:"script"`
	Pins      []string `json:"pins"`
	DependsOn []string `json:"depends_on"`
	Optional  bool     `json:"optional"`
}

type tracksOptions struct {
	*globalOptions // --pins and --set for the values, --state-dir for the last runs
	json, all      bool
}

func newTracksCmd(g *globalOptions) *cobra.Command {
	o := tracksOptions{globalOptions: g}
	cmd := &cobra.Command{
		Use:   "tracks",
		Short: "List the tracks to pick from today: what each does, its status, its steps and how its last build ended",
		Long: "tracks lists the tracks in the order an owner should consider them today. Tracks kept " +
			"as history (status history: still runnable with build --track ID, not offered for new " +
			"builds) are listed only with --all, each with the reason.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runTracks(cmd, o) },
	}
	jsonFlag(cmd, &o.json, "print JSON")
	cmd.Flags().BoolVar(&o.all, "all", false, "also the tracks kept as history")
	return cmd
}

func runTracks(cmd *cobra.Command, o tracksOptions) error {
	pinsFile, err := loadPinsFlags(o.pins.pins, o.pins.sets)
	if err != nil {
		return err
	}
	values := pinsFile.Values()
	dir := o.stateDirOr()
	st, err := steps.LoadState(dir)
	if err != nil {
		return usageErr(err)
	}
	last := lastRuns(st, dir)
	all := steps.Catalogue()
	shown := all
	var other []string // tracks that do not build for this machine's GPU
	gfx := hostTargets(os.Getenv("HALOFORGE_SYSFS_ROOT"))
	if !o.all {
		shown = steps.Offered(all)
		if len(gfx) > 0 {
			shown = slices.DeleteFunc(shown, func(t steps.Track) bool {
				if slices.ContainsFunc(gfx, func(g string) bool { return slices.Contains(t.GFX, g) }) {
					return false
				}
				other = append(other, t.ID)
				return true
			})
		}
	}
	rec, err := installed.Load(dir)
	if err != nil {
		return failedErr(err)
	}
	if o.json {
		return writeJSON(cmd.OutOrStdout(), map[string]any{"schema": tracksJSONSchema, "tracks": tracksJSON(shown, values, last, rec)})
	}
	printTracks(cmd.OutOrStdout(), shown, values, last, rec, o.stateDirArg())
	if len(other) > 0 {
		fmt.Fprintf(cmd.OutOrStdout(), "\nfor other GPUs, not this %s: %s\n", strings.Join(gfx, ", "), strings.Join(other, ", "))
	}
	if hidden := len(all) - len(shown) - len(other); hidden > 0 {
		var ids []string
		for _, t := range all {
			if t.Status == steps.StatusHistory {
				ids = append(ids, t.ID)
			}
		}
		fmt.Fprintf(cmd.OutOrStdout(), "\nkept as history, not listed: %s (haloforge tracks --all shows them and why)\n", strings.Join(ids, ", "))
	}
	return nil
}

// hostTargets reads the LLVM targets of this machine's GPUs from the KFD
// topology under root ("/" when empty): none without a GPU or a KFD. Read
// only, at most 64 nodes of 64 KiB each.
func hostTargets(root string) []string {
	if root == "" {
		root = "/"
	}
	files, _ := filepath.Glob(filepath.Join(root, "sys/class/kfd/kfd/topology/nodes/*/properties"))
	var out []string
	for i, f := range files {
		if i == 64 {
			break
		}
		data, err := safefile.ReadRegular(f, 64<<10, safefile.Follow)
		if err != nil {
			continue
		}
		n := detect.KFDNode{Props: detect.ParseKFDProperties(string(data))}
		if !n.IsGPU() {
			continue
		}
		if g, ok := detect.GFXFromTarget(n.Props["gfx_target_version"]); ok && !slices.Contains(out, g) {
			out = append(out, g)
		}
	}
	return out
}

// lastRuns says, per track, how its last build with the state dir ended:
// the worst status among the steps that ran in that run.
func lastRuns(st *steps.State, dir string) map[string]*lastRunJSON {
	rank := map[string]int{steps.OutcomeSucceeded: 1, steps.OutcomeNotVerified: 2, steps.OutcomeInterrupted: 3, steps.OutcomeRunning: 3, steps.OutcomeFailed: 4}
	out := map[string]*lastRunJSON{}
	for id, ts := range st.Tracks {
		if ts == nil || ts.LastRun == "" {
			continue
		}
		lr := &lastRunJSON{ID: ts.LastRun, Status: steps.OutcomeSucceeded, Dir: filepath.Join(dir, "runs", ts.LastRun)}
		for _, ss := range ts.Steps {
			if ss == nil || ss.RunID != ts.LastRun {
				continue
			}
			status := ss.Status
			if status == steps.OutcomeRunning {
				status = steps.OutcomeInterrupted // haloforge itself stopped while it ran
			}
			if rank[status] > rank[lr.Status] {
				lr.Status = status
			}
		}
		out[id] = lr
	}
	return out
}

func tracksJSON(ts []steps.Track, values map[string]string, last map[string]*lastRunJSON, rec *installed.Record) []trackJSON {
	out := make([]trackJSON, 0, len(ts))
	for _, t := range ts {
		tj := trackJSON{ID: t.ID, Title: t.Title, Status: string(t.Status), Description: t.Description, History: t.History,
			GFX: nonNil(t.GFX), Pros: nonNil(t.Pros), Cons: nonNil(t.Cons), Requires: nonNil(t.Requires),
			Pins: map[string]string{}, LastRun: last[t.ID], Installed: append([]installed.Item{}, rec.Items(t.ID)...)}
		tj.DiskBytes, _ = installed.Total(tj.Installed)
		for _, name := range t.PinNames() {
			tj.Pins[name] = values[name]
		}
		for _, s := range t.Steps {
			tj.Steps = append(tj.Steps, stepJSON{ID: s.ID, Title: s.Title, Script: "scripts/" + t.ScriptPath(s),
				Pins: nonNil(s.Pins), DependsOn: nonNil(s.DependsOn), Optional: s.Optional})
		}
		out = append(out, tj)
	}
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func printTracks(w io.Writer, ts []steps.Track, values map[string]string, last map[string]*lastRunJSON, rec *installed.Record, stateArg string) {
	for i, t := range ts {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%s  [%s]\n  %s\n", t.ID, t.Status, t.Title)
		fmt.Fprintf(w, "  gfx: %s · steps: %s\n", strings.Join(t.GFX, " "), strings.Join(stepLabels(t), " → "))
		for i, l := range wrap(t.History, 76-len("history: ")) {
			label := "history: "
			if i > 0 {
				label = "         "
			}
			fmt.Fprintf(w, "  %s%s\n", label, l)
		}
		for _, l := range wrap(t.Description, 76) {
			fmt.Fprintf(w, "  %s\n", l)
		}
		if len(t.Requires) > 0 {
			fmt.Fprintf(w, "  needs: %s\n", strings.Join(t.Requires, "; "))
		}
		var pv []string
		for _, name := range t.PinNames() {
			pv = append(pv, name+"="+shortPin(values[name]))
		}
		for i, l := range wrap(strings.Join(pv, " "), 72) {
			label := "pins: "
			if i > 0 {
				label = "      "
			}
			fmt.Fprintf(w, "  %s%s\n", label, l)
		}
		if lr := last[t.ID]; lr != nil {
			fmt.Fprintf(w, "  last build: %s (run %s, %s)\n", lr.Status, lr.ID, lr.Dir)
		}
		if items := rec.Items(t.ID); len(items) > 0 {
			fmt.Fprintf(w, "  disk: %s (haloforge clean --track %s%s removes it)\n", diskWords(items), t.ID, stateArg)
		}
	}
}

// diskWords is what a track holds, in a few words: "1.3 GiB in 3 items
// (box haloforge-llamacpp, image …, data …)".
func diskWords(items []installed.Item) string {
	total, unknown := installed.Total(items)
	s := text.Bytes(total) + " in " + text.Plural(len(items), "item")
	if unknown > 0 {
		s += ", " + strconv.Itoa(unknown) + " of unknown size"
	}
	var kinds []string
	for _, it := range items {
		if it.Kind == installed.KindBox || it.Kind == installed.KindImage {
			kinds = append(kinds, it.Kind+" "+text.Printable(it.Name, 60))
		} else {
			kinds = append(kinds, it.What)
		}
	}
	return s + " (" + strings.Join(slices.Compact(kinds), ", ") + ")"
}

func stepLabels(t steps.Track) []string {
	var out []string
	for _, s := range t.Steps {
		l := s.ID
		if s.Optional {
			l += "?"
		}
		out = append(out, l)
	}
	return out
}

// wrap breaks text into lines of at most width runes at spaces.
func wrap(text string, width int) []string {
	var lines []string
	var cur strings.Builder
	for _, word := range strings.Fields(text) {
		if cur.Len() > 0 && cur.Len()+1+len([]rune(word)) > width {
			lines = append(lines, cur.String())
			cur.Reset()
		}
		if cur.Len() > 0 {
			cur.WriteByte(' ')
		}
		cur.WriteString(word)
	}
	if cur.Len() > 0 {
		lines = append(lines, cur.String())
	}
	return lines
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// shortPin is pins.Short marked with "…" when it shortened the value, so
// that a cut SHA or digest never reads as whole (`plan` prints it whole).
func shortPin(v string) string {
	if s := pins.Short(v); s != v {
		return s + "…"
	}
	return v
}
