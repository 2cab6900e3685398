package hostfix

import (
	"context"
	"strings"
)

// Preview is what Apply would show for this system now, without asking or
// changing anything: the file diffs, the commands run as root, what is
// done already and what is left for the user. changes is false when Apply
// would change nothing. A screen that asks for APPLY itself shows this text
// and passes it to Apply as ApplyOptions.Confirmed.
func Preview(ctx context.Context, p *Plan, h *Host) (text string, changes bool, err error) {
	w, err := planWork(ctx, p, h)
	if err != nil {
		return "", false, err
	}
	var b strings.Builder
	w.show(&b, h)
	return b.String(), !w.empty(), nil
}
