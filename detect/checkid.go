package detect

// CheckID names a host check, as doctor --json prints it. The set is closed:
// each ID (the constants next to the checks table, checks.go) has exactly one
// row there, which gives its title, its function and the kinds of host
// change its remedies may ask for. (steps/cluster reuses detect.Check for its
// own per-node checks and their IDs.)
type CheckID string

// CheckIDs are every check's ID, in the order doctor prints them.
var CheckIDs = checkIDs()

func checkIDs() []CheckID {
	ids := make([]CheckID, len(checks))
	for i, c := range checks {
		ids[i] = c.ID
	}
	return ids
}

// Title is the check's name for people, the one doctor, the wizard and the
// plan use ("GTT size" for gtt-size); the ID itself for an unknown one.
func (id CheckID) Title() string {
	for _, c := range checks {
		if c.ID == id {
			return c.Title
		}
	}
	return string(id)
}

// Label names a check in a sentence: its title with its ID, "GTT size
// (gtt-size)", or the ID alone when the title is the ID (distrobox).
func (id CheckID) Label() string {
	if t := id.Title(); t != string(id) {
		return t + " (" + string(id) + ")"
	}
	return string(id)
}
