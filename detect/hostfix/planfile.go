package hostfix

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// Bounds on a plan file: it is input, possibly from someone else.
const (
	MaxPlanSize   = 1 << 20
	maxActions    = 64
	maxTextField  = 8 << 10
	maxListLength = 256
)

var (
	actionIDRe  = regexp.MustCompile(`^[a-z-]+:[A-Za-z0-9._/:@-]{1,160}$`)
	checkIDRe   = regexp.MustCompile(`^[a-z0-9-]{1,40}$`)
	modFileRe   = regexp.MustCompile(`^/etc/modprobe\.d/[A-Za-z0-9._-]{1,64}\.conf$`)
	knownBoot   = []string{BootGRUB, BootGrubby, BootSystemdBoot, BootRPMOstree, BootNixOS, BootUnknown}
	knownTools  = []string{"", "update-grub", "grub-mkconfig", "grub2-mkconfig", "grubby", "kernel-install", "kernelstub", "rpm-ostree", "nixos-rebuild"}
	knownKinds  = []string{KindKernelArg, KindModprobe, KindGroup, KindPackage, KindFirmware}
	modParams   = map[string][]string{"amdgpu": {"gttsize", "gtt_size", "cwsr_enable", "lockup_timeout"}, "ttm": {"pages_limit", "page_pool_size"}, "amdttm": {"pages_limit", "page_pool_size"}}
	errPlanFile = errors.New("plan file")
)

// ParsePlan reads a plan file strictly: one JSON object of the current
// version, no unknown fields, every action of a known kind whose values pass
// the same allow-lists haloforge plans with. Anything else is refused: a
// plan must never become a way to run arbitrary commands as root.
func ParsePlan(r io.Reader) (*Plan, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxPlanSize+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errPlanFile, err)
	}
	if len(data) > MaxPlanSize {
		return nil, fmt.Errorf("%w: larger than %d bytes", errPlanFile, MaxPlanSize)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var p Plan
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("%w: %v", errPlanFile, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: more than one JSON value", errPlanFile)
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", errPlanFile, err)
	}
	return &p, nil
}

// Validate checks a plan the way ParsePlan does.
func (p *Plan) Validate() error {
	if p.Version != PlanVersion {
		return fmt.Errorf("version %d, want %d (make a new plan with this haloforge)", p.Version, PlanVersion)
	}
	if !slices.Contains(knownBoot, p.Bootloader) || p.Boot.Name != p.Bootloader {
		return fmt.Errorf("unknown bootloader %q", printable(p.Bootloader))
	}
	if !slices.Contains(knownTools, p.Boot.Tool) {
		return fmt.Errorf("unknown bootloader tool %q", printable(p.Boot.Tool))
	}
	if len(p.Actions) > maxActions {
		return fmt.Errorf("%d actions, at most %d", len(p.Actions), maxActions)
	}
	if err := checkTexts(p); err != nil {
		return err
	}
	if err := p.Machine.validate(); err != nil {
		return err
	}
	ids := map[string]bool{}
	for i, a := range p.Actions {
		if err := validateAction(a); err != nil {
			return fmt.Errorf("action %d (%s): %w", i+1, printable(a.ID), err)
		}
		if ids[a.ID] {
			return fmt.Errorf("action %d: duplicate id %q", i+1, a.ID)
		}
		ids[a.ID] = true
	}
	t := p.Target
	if len(t.Args) > maxActions {
		return fmt.Errorf("target: %d arguments, at most %d", len(t.Args), maxActions)
	}
	for _, a := range t.Args {
		if err := ValidateArg(a); err != nil {
			return fmt.Errorf("target: %w", err)
		}
	}
	if !slices.Contains([]string{"", "ttm", "amdttm"}, t.TTMModule) {
		return fmt.Errorf("target: unknown TTM module %q", printable(t.TTMModule))
	}
	if t.PagesLimit < 0 || t.PagesLimit > maxPages || t.GTTBytes < 0 || t.GTTBytes > maxPages*4096 {
		return errors.New("target: page or byte count out of range")
	}
	if t.User != "" && !userRe.MatchString(t.User) {
		return fmt.Errorf("target: user %q not allowed", printable(t.User))
	}
	if err := checkGroups(t.Groups, true); err != nil {
		return fmt.Errorf("target: %w", err)
	}
	return nil
}

func validateAction(a Action) error {
	if !actionIDRe.MatchString(a.ID) {
		return errors.New("bad id")
	}
	if !slices.Contains(knownKinds, a.Kind) {
		return fmt.Errorf("unknown kind %q", printable(a.Kind))
	}
	if !checkIDRe.MatchString(string(a.Check)) {
		return fmt.Errorf("bad check id %q", printable(string(a.Check)))
	}
	typed := 0
	for _, set := range []bool{a.Arg != nil, a.Modprobe != nil, a.Group != nil} {
		if set {
			typed++
		}
	}
	switch a.Kind {
	case KindPackage, KindFirmware:
		if !a.Advice || typed != 0 {
			return errors.New("package and firmware actions are advice only")
		}
		return nil
	}
	if a.Advice || typed != 1 {
		return errors.New("a " + a.Kind + " action needs exactly its own change")
	}
	switch a.Kind {
	case KindKernelArg:
		if a.Arg == nil {
			return errors.New("kernel-arg action without arg")
		}
		if err := ValidateArg(*a.Arg); err != nil {
			return err
		}
		if a.ID != argActionID(*a.Arg) {
			return errors.New("id does not match its argument")
		}
	case KindModprobe:
		m := a.Modprobe
		if m == nil {
			return errors.New("modprobe action without modprobe edit")
		}
		if !modFileRe.MatchString(m.File) || strings.Contains(m.File, "..") {
			return fmt.Errorf("modprobe file %q not allowed", printable(m.File))
		}
		if !slices.Contains(modParams[m.Module], m.Param) {
			return fmt.Errorf("module option %s.%s not allowed", printable(m.Module), printable(m.Param))
		}
		if !oldValueRe.MatchString(m.Value) {
			return fmt.Errorf("value %q not allowed", printable(m.Value))
		}
		if a.ID != "modprobe:"+m.File+":"+m.Module+"."+m.Param {
			return errors.New("id does not match its edit")
		}
	case KindGroup:
		g := a.Group
		if g == nil {
			return errors.New("group action without group change")
		}
		if !userRe.MatchString(g.User) || g.User == "root" {
			return fmt.Errorf("user %q not allowed", printable(g.User))
		}
		if err := checkGroups(g.Groups, false); err != nil {
			return err
		}
		if a.ID != "group:"+g.User {
			return errors.New("id does not match its user")
		}
	}
	return nil
}

// allowedGroups are the only groups a plan may add a user to: those that
// open /dev/kfd and /dev/dri/renderD*. A plan file is input.
var allowedGroups = []string{"render", "video"}

func checkGroups(gs []string, emptyOK bool) error {
	if len(gs) == 0 && !emptyOK {
		return errors.New("no groups")
	}
	seen := map[string]bool{}
	for _, g := range gs {
		if !slices.Contains(allowedGroups, g) || seen[g] {
			return fmt.Errorf("group %q not allowed", printable(g))
		}
		seen[g] = true
	}
	return nil
}

// checkTexts bounds every free-text field and refuses control bytes: they
// are only ever shown, but shown on a terminal.
func checkTexts(p *Plan) error {
	var fields []string
	fields = append(fields, p.CreatedBy, p.Source, p.Boot.Reason, p.Boot.Problem)
	fields = append(fields, p.Boot.Config...)
	fields = append(fields, p.Boot.Generated...)
	for _, u := range p.Boot.Update {
		fields = append(fields, u...)
	}
	for _, u := range p.Initramfs {
		fields = append(fields, u...)
	}
	for _, k := range p.Boot.Kernels {
		fields = append(fields, k.Version, k.Image)
	}
	fields = append(fields, p.Script...)
	fields = append(fields, p.Notes...)
	for _, a := range p.Actions {
		fields = append(fields, a.Change, a.Command)
	}
	for _, s := range p.Skipped {
		fields = append(fields, string(s.Check), s.Status, s.Reason)
	}
	if len(fields) > 16*maxListLength {
		return errors.New("too many entries")
	}
	for _, f := range fields {
		if err := plainText(f, false); err != nil {
			return err
		}
	}
	if len(p.Files) > maxListLength {
		return errors.New("too many file diffs")
	}
	for _, f := range p.Files {
		if err := plainText(f.Path, false); err != nil {
			return err
		}
		if err := plainText(f.Diff, true); err != nil {
			return err
		}
	}
	return nil
}

func plainText(s string, multiline bool) error {
	limit := maxTextField
	if multiline {
		limit = MaxPlanSize / 4
	}
	if len(s) > limit {
		return fmt.Errorf("a text field is longer than %d bytes", limit)
	}
	if !utf8.ValidString(s) {
		return errors.New("a text field is not UTF-8")
	}
	for _, r := range s {
		if (r < 0x20 && r != '\t' && !(multiline && r == '\n')) || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return fmt.Errorf("a text field holds the control character %U", r)
		}
	}
	return nil
}
