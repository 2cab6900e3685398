package verify

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/haloforge/haloforge/internal/safefile"
	"github.com/haloforge/haloforge/steps"
)

// LastSchema names the file that keeps a track's last verdict.
const LastSchema = "haloforge/verify-last/v1"

// Last is the last verdict haloforge reached on a track's answers (a
// verify step, `haloforge serve`, `haloforge verify --track`): what
// `haloforge bench` reads before it calls a speed normal. It is kept in
// the state dir as verify/last/<track>.json.
type Last struct {
	Schema  string    `json:"schema"`
	Track   string    `json:"track"`
	Verdict Verdict   `json:"verdict"`
	Check   Check     `json:"check"`
	Line    string    `json:"line"`
	Model   string    `json:"model"`
	URL     string    `json:"url"`
	At      time.Time `json:"at"`
	// By says what reached it: "serve", a step ID, "verify".
	By string `json:"by"`
}

// LastFile is where a track's last verdict is kept.
func LastFile(stateDir, track string) string { return safefile.Tree(stateDir).Path(lastName(track)) }

func lastName(track string) string { return "verify/last/" + track + ".json" }

// RecordLast keeps res as the track's last verdict.
func RecordLast(stateDir, track, by string, res Result, now time.Time) error {
	if _, err := steps.Lookup(track); err != nil {
		return err
	}
	l := Last{Schema: LastSchema, Track: track, Verdict: res.Verdict, Check: res.Check, Line: printable(res.Line(), 600),
		Model: res.Model, URL: res.URL, At: now.UTC(), By: printable(by, 80)}
	data, err := json.MarshalIndent(l, "", " ")
	if err != nil {
		return err
	}
	return safefile.Tree(stateDir).WriteFile(lastName(track), append(data, '\n'), 0o644)
}

// ReadLast reads the track's last verdict; ok is false when none was
// kept. A file that is there but cannot be read is an error.
func ReadLast(stateDir, track string) (Last, bool, error) {
	file := LastFile(stateDir, track)
	data, err := safefile.Tree(stateDir).ReadFile(lastName(track), 64<<10)
	if errors.Is(err, fs.ErrNotExist) {
		return Last{}, false, nil
	}
	if err != nil {
		return Last{}, false, err
	}
	var l Last
	if err := json.Unmarshal(data, &l); err != nil || l.Schema != LastSchema || l.Track != track {
		return Last{}, false, fmt.Errorf("%s: not haloforge's last verdict of track %s", file, track)
	}
	switch l.Verdict {
	case Right, Wrong, NotVerified:
	default:
		return Last{}, false, fmt.Errorf("%s: verdict %q", file, printable(string(l.Verdict), 40))
	}
	l.Line, l.Model, l.URL, l.By = printable(l.Line, 600), printable(l.Model, 200), printable(l.URL, 200), printable(l.By, 80)
	return l, true, nil
}
