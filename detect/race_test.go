//go:build race

package detect

// raceEnabled: the race detector slows code 10x or more, so timing budgets are not asserted.
const raceEnabled = true
