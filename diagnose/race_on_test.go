//go:build race

package diagnose

// raceOn says the race detector slows this test binary down.
const raceOn = true
