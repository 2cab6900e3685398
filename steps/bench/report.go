package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/haloforge/haloforge/internal/text"
)

// JSONReference is a result's reference in `bench --json` (docs/json.md).
type JSONReference struct {
	Source     string  `json:"source"`
	TokensPerS float64 `json:"tokens_per_s"`
	Match      string  `json:"match"`
}

// JSONResult is one result in `bench --json` (docs/json.md): reference and
// ratio are null when no reference compares; the roofline fields are null
// when there is no ceiling (roofline.missing says why) or no roofline for
// this kind of result.
type JSONResult struct {
	Test          string         `json:"test"`
	TokensPerS    float64        `json:"tokens_per_s"`
	Reference     *JSONReference `json:"reference"`
	Ratio         *float64       `json:"ratio"`
	RooflinePerS  *float64       `json:"roofline_tokens_per_s"`
	RooflinePct   *float64       `json:"roofline_pct"`
	RooflineFacts *JSONRoofline  `json:"roofline"`
}

// JSONRoofline is how a result's ceiling was worked out (docs/json.md):
// unknown figures are null.
type JSONRoofline struct {
	Bound        string    `json:"bound"` // memory or compute
	Device       *string   `json:"device"`
	BandwidthGBs *float64  `json:"bandwidth_gb_s"`
	MeasuredGBs  *float64  `json:"measured_bandwidth_gb_s"`
	PeakTFLOPS   *float64  `json:"peak_fp16_tflops"`
	ReadBytes    *float64  `json:"read_bytes"`
	WeightsBytes *float64  `json:"weights_bytes"`
	ActiveParams *float64  `json:"active_params"`
	MoE          *bool     `json:"moe"`
	Method       *string   `json:"method"`
	Tuned        *JSONBand `json:"tuned"`
	Text         string    `json:"text"`
	Working      *string   `json:"working"`
	Missing      *string   `json:"missing"`
}

// JSONBand is the share of the roofline tuned Strix Halo runs reach.
type JSONBand struct {
	LowPct  float64 `json:"low_pct"`
	HighPct float64 `json:"high_pct"`
	Runs    int     `json:"runs"`
	Backend string  `json:"backend"`
}

// JSON is the whole `bench --json` answer (docs/json.md).
type JSON struct {
	Results []JSONResult `json:"results"`
	Verdict string       `json:"verdict"`
}

// ToJSON shapes a report as docs/json.md's `bench --json`.
func (rep Report) ToJSON() JSON {
	out := JSON{Results: []JSONResult{}, Verdict: rep.Verdict}
	for _, c := range rep.Comparisons {
		jr := JSONResult{Test: c.Result.Test, TokensPerS: round(c.Result.TokensPerS, 2)}
		if c.Reference != nil {
			jr.Reference = &JSONReference{Source: c.Reference.Source, TokensPerS: c.Reference.TokensPerS, Match: c.Reference.Label + ": " + c.Match}
			r := round(c.Ratio, 3)
			jr.Ratio = &r
		}
		if rf := c.Roofline; rf != nil {
			jr.RooflineFacts = rf.toJSON()
			if rf.Available() {
				jr.RooflinePerS, jr.RooflinePct = ptr(round(rf.CeilingPerS, 2)), ptr(round(rf.Pct, 1))
			}
		}
		out.Results = append(out.Results, jr)
	}
	return out
}

func (rf Roofline) toJSON() *JSONRoofline {
	j := &JSONRoofline{Bound: rf.Bound, Text: rf.Sentence()}
	if rf.Weights.ReadBytes > 0 {
		moe := rf.Weights.MoE
		j.MoE = &moe
	}
	d, w := rf.Device, rf.Weights
	j.Device = optText(d.Name)
	j.BandwidthGBs, j.MeasuredGBs, j.PeakTFLOPS = optNum(d.BandwidthGBs), optNum(d.MeasuredGBs), optNum(d.FP16TFLOPS)
	j.ReadBytes, j.WeightsBytes, j.ActiveParams = optNum(math.Round(w.ReadBytes)), optNum(w.TotalBytes), optNum(math.Round(w.ActiveParams))
	j.Method, j.Working, j.Missing = optText(w.Method), optText(rf.Working()), optText(rf.Missing)
	if b := rf.Band; b != nil {
		j.Tuned = &JSONBand{LowPct: round(b.Low, 1), HighPct: round(b.High, 1), Runs: b.Runs, Backend: b.Backend}
	}
	return j
}

func ptr(f float64) *float64 { return &f }

// optNum is f, or null when it is not known (0).
func optNum(f float64) *float64 {
	if f <= 0 || math.IsInf(f, 0) || math.IsNaN(f) {
		return nil
	}
	return &f
}

// optText is s, or null when it is empty.
func optText(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func round(f float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(f*p) / p
}

// Shareable is the report a user attaches to a forum thread or an issue: the
// fields community guides ask for (hogeheer499-commits/strix-halo-guide's
// benchmark-report template), the comparison, and the raw output.
type Shareable struct {
	Date    time.Time `json:"date"`
	Device  string    `json:"device"`
	BIOSUMA string    `json:"bios_uma"`
	IOMMU   string    `json:"iommu"`
	Power   string    `json:"power_profile"`
	Kernel  string    `json:"kernel"`
	Mesa    string    `json:"mesa"`
	ROCm    string    `json:"rocm"`
	Backend string    `json:"backend"`
	Build   string    `json:"build"`
	Model   string    `json:"model"`
	Command string    `json:"command"`
	Format  string    `json:"format"`
	Results JSON      `json:"comparison"`
	// Model is what the model file's header said a token reads, when the
	// file was at hand: a report judged again keeps it.
	ModelWeights *Weights `json:"model_weights"`
	Raw          string   `json:"raw_output"`
}

// NewShareable fills a shareable report from a comparison, the host facts,
// the command that produced the output and the raw output itself.
func NewShareable(rep Report, host Host, command string, raw []byte, now time.Time) Shareable {
	s := Shareable{Date: now.UTC(), Device: host.Device, BIOSUMA: host.BIOSUMA, IOMMU: host.IOMMU, Power: host.PowerProfile,
		Kernel: host.Kernel, Mesa: host.Mesa, ROCm: host.ROCm, Command: command, Format: rep.Format,
		Results: rep.ToJSON(), ModelWeights: rep.Model, Raw: string(raw)}
	if len(rep.Comparisons) > 0 {
		r := rep.Comparisons[0].Result
		s.Backend, s.Model = r.Backend, r.ModelFile
		if r.Build > 0 {
			s.Build = fmt.Sprintf("b%d (%s)", r.Build, r.BuildCommit)
		} else {
			s.Build = r.BuildCommit
		}
		if s.Device == "" {
			s.Device = r.GPU
		}
	}
	s.sanitize()
	return s
}

// JSON is the report as indented JSON.
func (s Shareable) JSON() ([]byte, error) { return json.MarshalIndent(s, "", "  ") }

// Markdown is the report as a forum-ready Markdown document.
func (s Shareable) Markdown() string {
	var b strings.Builder
	or := func(v string) string {
		if v == "" {
			return "unknown"
		}
		return mdEscape(v)
	}
	fmt.Fprintf(&b, "# Benchmark report (haloforge, %s)\n\n", s.Date.Format("2006-01-02"))
	fmt.Fprintf(&b, "**Verdict:** %s\n\n", mdEscape(s.Results.Verdict))
	b.WriteString("## System\n")
	for _, kv := range [][2]string{{"Device", s.Device}, {"BIOS UMA setting", s.BIOSUMA}, {"IOMMU setting", s.IOMMU},
		{"Power profile", s.Power}, {"Kernel", s.Kernel}, {"Mesa", s.Mesa}, {"ROCm", s.ROCm}} {
		fmt.Fprintf(&b, "- **%s:** %s\n", kv[0], or(kv[1]))
	}
	b.WriteString("\n## Benchmark\n")
	for _, kv := range [][2]string{{"Model / file", s.Model}, {"Backend", s.Backend}, {"Build", s.Build}, {"Tool", s.Format}} {
		fmt.Fprintf(&b, "- **%s:** %s\n", kv[0], or(kv[1]))
	}
	fmt.Fprintf(&b, "- **Command used:** `%s`\n\n", strings.ReplaceAll(or(s.Command), "`", "'"))
	b.WriteString("## Results\n\n| test | t/s | reference | ref t/s | ratio | roofline |\n|---|---:|---|---:|---:|---|\n")
	var roofs []string
	for _, r := range s.Results.Results {
		ref, rts, ratio, roof := "none", "", "", ""
		if r.Reference != nil {
			ref = fmt.Sprintf("[%s](%s)", mdEscape(r.Reference.Match), r.Reference.Source)
			rts = fmt.Sprintf("%.2f", r.Reference.TokensPerS)
		}
		if r.Ratio != nil {
			ratio = fmt.Sprintf("%.0f %%", *r.Ratio*100)
		}
		if r.RooflinePct != nil && r.RooflinePerS != nil {
			roof = fmt.Sprintf("%.0f %% of %.1f t/s", *r.RooflinePct, *r.RooflinePerS)
			if r.RooflineFacts.Bound == BoundCompute {
				roof += " (compute, rough)"
			}
		}
		if f := r.RooflineFacts; f != nil {
			line := fmt.Sprintf("- **%s:** %s", mdEscape(r.Test), mdEscape(f.Text))
			if f.Working != nil {
				line += ". " + mdEscape(*f.Working)
			}
			roofs = append(roofs, line)
		}
		fmt.Fprintf(&b, "| %s | %.2f | %s | %s | %s | %s |\n", mdEscape(r.Test), r.TokensPerS, ref, rts, ratio, roof)
	}
	if len(roofs) > 0 {
		b.WriteString("\n## Roofline\n\nToken generation against the device's memory bandwidth; prompt processing against its compute peak (a rough ceiling).\n\n")
		b.WriteString(strings.Join(roofs, "\n") + "\n")
	}
	b.WriteString("\n## Raw output\n\n```\n")
	b.WriteString(strings.ReplaceAll(s.Raw, "```", "'''"))
	if !strings.HasSuffix(s.Raw, "\n") {
		b.WriteString("\n")
	}
	b.WriteString("```\n")
	return b.String()
}

func mdEscape(s string) string {
	return strings.NewReplacer("|", "\\|", "\n", " ", "\r", " ").Replace(s)
}

// Text is the comparison for a terminal: one line a result, then the verdict.
func (rep Report) Text() string {
	var b strings.Builder
	for _, c := range rep.Comparisons {
		fmt.Fprintf(&b, "%-18s %9.2f t/s  %s\n", c.Result.Test, c.Result.TokensPerS, c.Verdict)
		if c.Reference != nil {
			fmt.Fprintf(&b, "%-18s %9s      reference: %s (%s)\n", "", "", c.Match, c.Reference.Source)
		}
		if rf := c.Roofline; rf != nil {
			fmt.Fprintf(&b, "%-18s %9s      roofline: %s\n", "", "", rf.Sentence())
			if w := rf.Working(); w != "" {
				fmt.Fprintf(&b, "%-18s %9s                %s\n", "", "", w)
			}
		}
	}
	fmt.Fprintf(&b, "verdict: %s\n", rep.Verdict)
	return b.String()
}

// Host is the system facts the report records: those of the machine the
// run was made on.
func (s Shareable) Host() Host {
	return Host{Device: s.Device, BIOSUMA: s.BIOSUMA, IOMMU: s.IOMMU, PowerProfile: s.Power, Kernel: s.Kernel, Mesa: s.Mesa, ROCm: s.ROCm}
}

// ParseShareable reads a report written by bench --report (FILE.json): ok
// is false when raw is not one (then it is a benchmark's own output).
func ParseShareable(raw []byte) (s Shareable, ok bool, err error) {
	var probe map[string]json.RawMessage
	if json.Unmarshal(raw, &probe) != nil {
		return s, false, nil
	}
	if _, has := probe["raw_output"]; !has {
		return s, false, nil
	}
	if _, has := probe["comparison"]; !has {
		return s, false, nil
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return s, true, fmt.Errorf("a haloforge bench report, but not a valid one: %w", err)
	}
	if strings.TrimSpace(s.Raw) == "" {
		return s, true, errors.New("a haloforge bench report without its raw output: nothing to judge")
	}
	s.sanitize()
	return s, true, nil
}

// sanitize puts every text of the report through the sanitiser: the host
// facts and the command may come from a report read back, the raw output
// from anywhere, and a report is read on terminals and forums.
func (s *Shareable) sanitize() {
	for _, f := range []*string{&s.Device, &s.BIOSUMA, &s.IOMMU, &s.Power, &s.Kernel, &s.Mesa, &s.ROCm,
		&s.Backend, &s.Build, &s.Model, &s.Command, &s.Format} {
		*f = text.Printable(*f, 0)
	}
	s.Raw = text.Sanitize(s.Raw)
	if w := s.ModelWeights; w != nil {
		w.File, w.Method = text.Printable(w.File, maxField), text.Printable(w.Method, 4*maxField)
		// Figures a header cannot give are dropped rather than trusted.
		if !(w.ReadBytes > 0 && w.TotalBytes >= w.ReadBytes && w.TotalBytes < 1e15 && w.ActiveParams >= 0 && w.ActiveParams < 1e15) {
			s.ModelWeights = nil
		}
	}
}
