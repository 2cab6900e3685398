// Package text is haloforge's one home for text meant for a person: the
// terminal sanitiser that everything from outside goes through before it
// reaches a screen or a report file (a step's output, a file, a server's
// answer, a node's facts, a bundle, a benchmark's JSON, a registry's
// error), and the one style for durations, sizes, plurals and absent
// values. It imports nothing of haloforge, so every package, steps/
// included, uses it instead of a copy of its own.
//
// The rule: text that haloforge did not write itself is printed through
// Sanitize (many lines), Printable (one line, bounded) or a Sanitizer (a
// stream), never as it came. C0 and C1 controls, escape sequences and bidi
// controls (U+202A-U+202E, U+2066-U+2069, U+200E, U+200F, U+061C) never
// come out.
package text
