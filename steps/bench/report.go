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
// ratio are null when no reference compares.
type JSONResult struct {
	Test       string         `json:"test"`
	TokensPerS float64        `json:"tokens_per_s"`
	Reference  *JSONReference `json:"reference"`
	Ratio      *float64       `json:"ratio"`
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
		out.Results = append(out.Results, jr)
	}
	return out
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
	Raw     string    `json:"raw_output"`
}

// NewShareable fills a shareable report from a comparison, the host facts,
// the command that produced the output and the raw output itself.
func NewShareable(rep Report, host Host, command string, raw []byte, now time.Time) Shareable {
	s := Shareable{Date: now.UTC(), Device: host.Device, BIOSUMA: host.BIOSUMA, IOMMU: host.IOMMU, Power: host.PowerProfile,
		Kernel: host.Kernel, Mesa: host.Mesa, ROCm: host.ROCm, Command: command, Format: rep.Format,
		Results: rep.ToJSON(), Raw: string(raw)}
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
	b.WriteString("## Results\n\n| test | t/s | reference | ref t/s | ratio |\n|---|---:|---|---:|---:|\n")
	for _, r := range s.Results.Results {
		ref, rts, ratio := "none", "", ""
		if r.Reference != nil {
			ref = fmt.Sprintf("[%s](%s)", mdEscape(r.Reference.Match), r.Reference.Source)
			rts = fmt.Sprintf("%.2f", r.Reference.TokensPerS)
		}
		if r.Ratio != nil {
			ratio = fmt.Sprintf("%.0f %%", *r.Ratio*100)
		}
		fmt.Fprintf(&b, "| %s | %.2f | %s | %s | %s |\n", mdEscape(r.Test), r.TokensPerS, ref, rts, ratio)
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
}
