// Package diagnose recognises known failures in build logs: one rule per
// failure family (docs/ids.md), a streaming matcher for live runs, and
// stall rules.
package diagnose

// Finding is one recognised failure family in a stream of lines.
type Finding struct {
	Family  string   `json:"family"`           // stable family ID (docs/ids.md)
	Line    int      `json:"line"`             // 1-based line of the first match
	Text    string   `json:"text"`             // that line, ANSI-stripped
	Summary string   `json:"summary"`          // one line: what it is
	Fix     string   `json:"fix"`              // exact commands / env vars
	Title   string   `json:"title,omitempty"`  // short human title
	Count   int      `json:"count"`            // matching lines seen so far
	Links   []string `json:"links,omitempty"`  // public issues about it
	Stall   bool     `json:"stall,omitempty"`  // found by a stall rule, not a line match
	Step    string   `json:"step,omitempty"`   // step the stream belongs to, when known
	File    string   `json:"file,omitempty"`   // input the stream came from, when known
	Ladder  []Rung   `json:"ladder,omitempty"` // what to try, for hang families (the rule's Ladder)
}
