package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/haloforge/haloforge"
	"github.com/haloforge/haloforge/detect"
	"github.com/haloforge/haloforge/internal/text"
	"github.com/haloforge/haloforge/steps"
	"github.com/haloforge/haloforge/steps/cluster"
)

// clusterOptions are the flags every `cluster` subcommand shares.
type clusterOptions struct {
	inventory string
	engine    string
	sshConfig string
	json      bool
	dryRun    bool
	// up
	model         string
	port          int
	ctx           int
	apiHost       string
	allowWildcard bool
	// node-facts reads the global --pins and --state-dir
	*globalOptions
}

// nodeScriptPath is node.sh inside the embedded scripts tree.
const nodeScriptPath = "scripts/cluster/node.sh"

func newClusterCmd(g *globalOptions) *cobra.Command {
	o := &clusterOptions{globalOptions: g}
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Check, start and stop llama.cpp RPC or vLLM with Ray across 2–4 boxes",
		Long: "cluster works on an inventory (TOML: one [[node]] table per box with name, ssh, address and role) " +
			"over your own SSH: host keys are verified and no password is ever asked (BatchMode). check compares " +
			"the nodes (pins, packages, kernel, firmware, doctor, link, RDMA, memlock, firewall, ports, clock); up " +
			"starts ggml-rpc-server on the workers and llama-server --rpc on the head (--engine rpc), or a Ray " +
			"cluster and vllm serve (--engine ray), and waits until the head answers; down stops all of it.",
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&o.inventory, "inventory", "", "the cluster inventory (TOML)")
	pf.StringVar(&o.engine, "engine", "", "the engine: rpc (llama.cpp RPC) or ray (vLLM on Ray); default: the inventory's engine, else rpc")
	pf.StringVar(&o.sshConfig, "ssh-config", os.Getenv("HALOFORGE_SSH_CONFIG"), "ssh_config file to use instead of ~/.ssh/config (ssh -F; default $HALOFORGE_SSH_CONFIG)")
	cmd.AddCommand(newClusterCheckCmd(o), newClusterUpCmd(o), newClusterDownCmd(o), newClusterNodeFactsCmd(o))
	return cmd
}

func newClusterCheckCmd(o *clusterOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "check --inventory FILE [--engine rpc|ray] [--json]",
		Short: "Compare the nodes and test the paths between them; exit 1 when a check fails",
		Example: "  haloforge cluster check --inventory cluster.toml\n" +
			"  haloforge cluster check --inventory cluster.toml --engine ray --json",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runClusterCheck(cmd, o) },
	}
	jsonFlag(cmd, &o.json, `print {"nodes": [{"name", "checks": [{"id", "status", "summary", "fix"}]}]}`)
	return cmd
}

func newClusterUpCmd(o *clusterOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "up --inventory FILE [--engine rpc|ray] [--model M] [--dry-run]",
		Short: "Start the engines on every node and wait until the head's server answers",
		Long: "up starts, in order and each detached in its own session on its node: for rpc, ggml-rpc-server " +
			"on every worker bound to its cluster address (never 0.0.0.0 unless --allow-wildcard: the RPC server " +
			"has no authentication, GHSA-j8rj-fmpv-wcxw), then llama-server --rpc on the head; for ray, the Ray " +
			"head, the workers, then vllm serve with tensor parallel over every node, eager mode, and the NCCL/RCCL, " +
			"Gloo and Ray variables per node. It waits after each for what it promises and follows the head's log " +
			"through the same readiness machine as serve. On a failure it names the known failure, stops what it " +
			"started and exits 1. --dry-run prints every command per node and runs nothing.",
		Example: "  haloforge cluster up --inventory cluster.toml --dry-run\n" +
			"  haloforge cluster up --inventory cluster.toml --model /models/qwen3-30b-a3b-q4_k_m.gguf\n" +
			"  haloforge cluster up --inventory cluster.toml --engine ray --model Qwen/Qwen3-0.6B",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runClusterUp(cmd, o) },
	}
	f := cmd.Flags()
	f.BoolVar(&o.dryRun, "dry-run", false, "print every command per node; connect to nothing")
	jsonFlag(cmd, &o.json, "with --dry-run: print the plan as JSON")
	f.StringVar(&o.model, "model", "", "what the head serves (default: the inventory's model)")
	f.IntVar(&o.port, "port", 0, "the head's API port (default: the inventory's port, 8080)")
	f.IntVar(&o.ctx, "ctx", 0, "context length (llama-server -c, vllm --max-model-len); default: the engine's")
	f.StringVar(&o.apiHost, "api-host", "", "where the head's API listens (default: the head's cluster address)")
	f.BoolVar(&o.allowWildcard, "allow-wildcard", false, "allow binding 0.0.0.0 or :: (GHSA-j8rj-fmpv-wcxw: only on a network no one else uses)")
	return cmd
}

func newClusterDownCmd(o *clusterOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "down --inventory FILE",
		Short:   "Stop everything haloforge started on every node, and check nothing is left",
		Example: "  haloforge cluster down --inventory cluster.toml",
		Args:    cobra.NoArgs,
		RunE:    func(cmd *cobra.Command, _ []string) error { return runClusterDown(cmd, o) },
	}
	jsonFlag(cmd, &o.json, "print what was stopped on each node as JSON")
	return cmd
}

// newClusterNodeFactsCmd is what `cluster check` runs on a node that has
// haloforge: the pins it would use and its doctor's verdicts, as one JSON line.
func newClusterNodeFactsCmd(o *clusterOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:    "node-facts [--pins FILE]",
		Short:  "This node's pins hash and doctor checks, as one JSON line (run by cluster check over SSH)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE:   func(cmd *cobra.Command, _ []string) error { return runClusterNodeFacts(cmd, o) },
	}
	return cmd
}

// clusterSetup loads the inventory and builds the SSH side.
func clusterSetup(o *clusterOptions) (*cluster.Inventory, *cluster.Cluster, error) {
	if o.inventory == "" {
		return nil, nil, usageErr(errors.New("--inventory FILE is required (a TOML file with one [[node]] table per box; see TUTORIAL.md, two boxes)"))
	}
	inv, err := cluster.LoadInventory(o.inventory)
	if err != nil {
		return nil, nil, usageErr(err)
	}
	if o.engine == "" {
		o.engine = inv.Engine
	}
	if o.engine == "" {
		o.engine = cluster.EngineRPC
	}
	if o.engine != cluster.EngineRPC && o.engine != cluster.EngineRay {
		return nil, nil, usageErr(fmt.Errorf("--engine %q: want rpc or ray", o.engine))
	}
	if o.sshConfig != "" && !fileExists(o.sshConfig) {
		return nil, nil, usageErr(fmt.Errorf("--ssh-config %s: no such file", o.sshConfig))
	}
	script, err := fs.ReadFile(haloforge.Scripts, nodeScriptPath)
	if err != nil {
		return nil, nil, failedErr(err)
	}
	c := &cluster.Cluster{Inv: inv, Remote: cluster.Remote{T: cluster.SSH{Config: o.sshConfig}, Script: script}}
	return inv, c, nil
}

func describeFor(c *cluster.Cluster) func(cluster.Node) string {
	return func(n cluster.Node) string { return c.Remote.T.Describe(n) }
}

func runClusterCheck(cmd *cobra.Command, o *clusterOptions) error {
	inv, c, err := clusterSetup(o)
	if err != nil {
		return err
	}
	var blocking []detect.CheckID
	if inv.Track != "" {
		t, err := steps.Lookup(inv.Track)
		if err != nil {
			return usageErr(fmt.Errorf("%s: %w", inv.Path, err))
		}
		blocking = t.BlockingChecks
	}
	rep := c.Check(cmdContext(cmd), cluster.CheckOptions{Engine: o.engine, Blocking: blocking, SSHDescribe: describeFor(c)})
	if err := cmdContext(cmd).Err(); err != nil {
		return &exitError{code: exitInterrupted, err: err}
	}
	out := cmd.OutOrStdout()
	if o.json {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return failedErr(err)
		}
	} else {
		writeClusterReport(out, inv, rep, describeFor(c))
	}
	if rep.Failed() > 0 {
		return silentExit(exitFailed)
	}
	return nil
}

var clusterMarks = map[detect.Status]string{detect.StatusOK: "✓", detect.StatusWarn: "!", detect.StatusFail: "✗", detect.StatusSkip: "-"}

func writeClusterReport(w io.Writer, inv *cluster.Inventory, rep *cluster.Report, describe func(cluster.Node) string) {
	var b strings.Builder
	fmt.Fprintf(&b, "Cluster check: %d nodes, engine %s (%s)\n", len(rep.Nodes), rep.Engine, inv.Path)
	for _, nr := range rep.Nodes {
		n, _ := inv.Node(nr.Name)
		fmt.Fprintf(&b, "\n%s · %s · %s · %s\n", nr.Name, nr.Role, nr.Address, describe(n))
		// Checks skipped for one reason (a node SSH did not reach) are
		// one line, as flutter doctor folds them, not one line each.
		skipped := map[string]int{}
		for _, c := range nr.Checks {
			if c.Status == detect.StatusSkip {
				skipped[c.Summary]++
			}
		}
		for _, c := range nr.Checks {
			if n := skipped[c.Summary]; c.Status == detect.StatusSkip && n > 1 {
				fmt.Fprintf(&b, "[%s] %s: %s\n", clusterMarks[c.Status], text.Plural(n, "check"), c.Summary)
				skipped[c.Summary] = -1 // said
				continue
			} else if c.Status == detect.StatusSkip && n < 0 {
				continue
			}
			fmt.Fprintf(&b, "[%s] %s: %s\n", clusterMarks[c.Status], c.ID, c.Summary)
			if c.Fix != "" && (c.Status == detect.StatusWarn || c.Status == detect.StatusFail) {
				for _, l := range strings.Split(strings.TrimRight(c.Fix, "\n"), "\n") {
					b.WriteString("    " + l + "\n")
				}
			}
		}
	}
	if f, wn := rep.Failed(), rep.Warned(); f+wn > 0 {
		fmt.Fprintf(&b, "\n! Cluster check found issues: %d failed, %s.\n", f, text.Plural(wn, "warning"))
	} else {
		b.WriteString("\n• No issues found: the nodes match and reach each other.\n")
	}
	io.WriteString(w, b.String())
}

func runClusterUp(cmd *cobra.Command, o *clusterOptions) error {
	inv, c, err := clusterSetup(o)
	if err != nil {
		return err
	}
	uo := cluster.UpOptions{Engine: o.engine, Model: o.model, Port: o.port, Ctx: o.ctx, APIHost: o.apiHost, AllowWildcard: o.allowWildcard}
	out, errw := cmd.OutOrStdout(), cmd.ErrOrStderr()
	ctx := cmdContext(cmd)
	if o.dryRun {
		p, err := cluster.PlanUp(inv, uo)
		if err != nil {
			return usageErr(err)
		}
		if o.json {
			enc := json.NewEncoder(out)
			enc.SetIndent("", "  ")
			return enc.Encode(p.JSON())
		}
		io.WriteString(out, p.Format(inv, describeFor(c)))
		return nil
	}
	if o.json {
		return usageErr(errors.New("--json goes with --dry-run (cluster up itself prints its progress)"))
	}
	if _, err := cluster.PlanUp(inv, uo); err != nil { // bad input before anything connects
		return usageErr(err)
	}
	c.Say = func(format string, args ...any) { fmt.Fprintf(out, format+"\n", args...) }
	if o.engine == cluster.EngineRay && needsFacts(inv) {
		fmt.Fprintln(out, "reading the nodes' interfaces and RDMA ports…")
		facts := map[string]*cluster.Facts{}
		for name, pr := range c.ProbeAll(ctx, o.engine) {
			if pr.Err != nil {
				return failedErr(fmt.Errorf("%s: %w", name, pr.Err))
			}
			facts[name] = pr.Facts
		}
		uo.Facts = facts
	}
	p, err := cluster.PlanUp(inv, uo)
	if err != nil {
		return usageErr(err)
	}
	for _, w := range p.Warnings {
		fmt.Fprintf(errw, "warning: %s\n", w)
	}
	fmt.Fprintf(out, "cluster up --engine %s: %d nodes (%s)\n", p.Engine, len(inv.Nodes), inv.Path)
	res, err := c.Up(ctx, p)
	if err != nil {
		if ctx.Err() != nil {
			return &exitError{code: exitInterrupted, err: fmt.Errorf("interrupted: %w (what was started is stopped again)", err)}
		}
		var ue *cluster.UpError
		if errors.As(err, &ue) {
			writeUpError(out, ue)
			return silentExit(exitFailed)
		}
		if errors.Is(err, cluster.ErrAlreadyUp) {
			return failedErr(err)
		}
		return failedErr(err)
	}
	fmt.Fprintf(out, "✓ cluster up in %s: %s\n", text.Duration(res.Ready), res.URL)
	if p.Engine == cluster.EngineRay {
		fmt.Fprintf(out, "  %s\n", res.Transport.Describe())
	}
	for _, d := range res.Devices {
		fmt.Fprintf(out, "  %s\n", d)
	}
	fmt.Fprintf(out, "  try: curl %s/v1/completions -H 'Content-Type: application/json' -d '{\"prompt\": \"Hello\", \"max_tokens\": 16}'\n", res.URL)
	fmt.Fprintf(out, "  stop: haloforge cluster down --inventory %s\n", inv.Path)
	return nil
}

// needsFacts says whether the ray plan needs the nodes' own facts: an
// interface to find or a transport to pick.
func needsFacts(inv *cluster.Inventory) bool {
	if inv.Transport == cluster.TransportAuto {
		return true
	}
	for _, n := range inv.Nodes {
		if n.Interface == "" {
			return true
		}
	}
	return false
}

func writeUpError(w io.Writer, ue *cluster.UpError) {
	var b strings.Builder
	fmt.Fprintf(&b, "✗ %s\n", text.Printable(ue.Error(), 0))
	if len(ue.Tail) > 0 {
		fmt.Fprintf(&b, "  last lines of %s on %s:\n", ue.Launch.Service, ue.Launch.Node.Name)
		for _, l := range ue.Tail {
			b.WriteString("  │ " + text.Printable(l, 0) + "\n")
		}
	}
	for _, f := range ue.Findings {
		fmt.Fprintf(&b, "  diagnosis %s: %s\n", f.Family, f.Summary)
		if f.Text != "" {
			fmt.Fprintf(&b, "    line: %s\n", text.Printable(f.Text, 0))
		}
		for _, l := range strings.Split(f.Fix, "\n") {
			b.WriteString("    fix: " + l + "\n")
		}
		for _, l := range f.Links {
			b.WriteString("    see: " + l + "\n")
		}
	}
	if len(ue.Findings) == 0 && len(ue.Tail) > 0 {
		b.WriteString("  diagnosis: no known failure recognised in the log\n")
	}
	if ue.Stopped != "" {
		fmt.Fprintf(&b, "  stopped again: %s\n", text.Printable(ue.Stopped, 0))
	}
	io.WriteString(w, b.String())
}

// clusterDownJSON is `cluster down --json`.
type clusterDownJSON struct {
	Nodes []struct {
		Name    string   `json:"name"`
		Stopped []string `json:"stopped"`
		Left    []string `json:"left"`
		Error   string   `json:"error,omitempty"`
	} `json:"nodes"`
	Clean bool `json:"clean"`
}

func runClusterDown(cmd *cobra.Command, o *clusterOptions) error {
	inv, c, err := clusterSetup(o)
	if err != nil {
		return err
	}
	res := c.Down(context.WithoutCancel(cmdContext(cmd)))
	out := cmd.OutOrStdout()
	if o.json {
		var j clusterDownJSON
		j.Clean = res.Clean()
		for _, n := range res.Nodes {
			e := struct {
				Name    string   `json:"name"`
				Stopped []string `json:"stopped"`
				Left    []string `json:"left"`
				Error   string   `json:"error,omitempty"`
			}{Name: n.Name, Stopped: append([]string{}, n.Stopped...), Left: append([]string{}, n.Left...)}
			if n.Err != nil {
				e.Error = n.Err.Error()
			}
			j.Nodes = append(j.Nodes, e)
		}
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(j); err != nil {
			return failedErr(err)
		}
	} else {
		fmt.Fprintf(out, "cluster down: %d nodes (%s)\n", len(inv.Nodes), inv.Path)
		for _, n := range res.Nodes {
			switch {
			case n.Err != nil:
				fmt.Fprintf(out, "✗ %s: %s\n", n.Name, text.Printable(n.Err.Error(), 0))
			case len(n.Left) > 0:
				fmt.Fprintf(out, "✗ %s: still running: %s\n", n.Name, text.Printable(strings.Join(n.Left, "; "), 0))
			case len(n.Stopped) == 0:
				fmt.Fprintf(out, "✓ %s: nothing of haloforge's was running\n", n.Name)
			default:
				fmt.Fprintf(out, "✓ %s: %s; nothing left\n", n.Name, text.Printable(strings.Join(n.Stopped, ", "), 0))
			}
		}
	}
	if !res.Clean() {
		return silentExit(exitFailed)
	}
	return nil
}

func runClusterNodeFacts(cmd *cobra.Command, o *clusterOptions) error {
	var nf cluster.NodeFacts
	nf.Version = version
	pf, err := loadPinsFlags(o.pins.pins, nil) // --set is for this machine's builds, not its pins file
	var data []byte
	switch {
	case err != nil:
		nf.Pins.Error = err.Error()
		nf.Pins.Path = o.pins.pins
	case pf.Path == embeddedPinsName:
		data = haloforge.VersionsEnv
		nf.Pins.Path = embeddedPinsName
	default:
		nf.Pins.Path = pinsFileOnDisk(pf)
		data, err = os.ReadFile(pf.Path)
		if err != nil {
			nf.Pins.Error = err.Error()
		}
	}
	if data != nil && nf.Pins.Error == "" {
		sum := sha256.Sum256(data)
		nf.Pins.SHA256 = hex.EncodeToString(sum[:])
	}
	ctx, cancel := context.WithTimeout(cmdContext(cmd), 20*time.Second)
	defer cancel()
	if b, err := detect.Collect(ctx, collectOptions(o.stateDirOr())); err == nil {
		r := detect.Analyse(b)
		nf.Checks = r.Checks
		if r.Kernel.Release != nil {
			nf.Kernel = *r.Kernel.Release
		}
		if r.Firmware.MES != nil {
			nf.MESFirmware = *r.Firmware.MES
		}
		for _, g := range r.GPUs {
			if g.GFX != nil {
				nf.GFX = append(nf.GFX, *g.GFX)
			}
		}
	}
	return json.NewEncoder(cmd.OutOrStdout()).Encode(nf)
}
