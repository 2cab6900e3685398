package detect

import (
	"fmt"
	"math"
	"strings"
)

const gib = int64(1) << 30

// pagesPerGiB is 1 GiB in 4 KiB TTM pages.
const pagesPerGiB = 262144

// gttPlan is the GTT size haloforge proposes for this machine's RAM.
type gttPlan struct {
	GiB, Pages, ReserveGiB int64
}

// planGTT leaves the OS a reserve of 1/16 of RAM, at least 4 and at most
// 8 GiB, and gives the rest to GTT: 125 GiB visible -> 117 GiB = 30670848 pages.
func planGTT(ramBytes int64) gttPlan {
	reserve := int64(math.Ceil(float64(ramBytes) / 16 / float64(gib)))
	reserve = min(max(reserve, 4), 8)
	g := ramBytes/gib - reserve
	if g < 1 {
		g = 1
	}
	return gttPlan{GiB: g, Pages: g * pagesPerGiB, ReserveGiB: reserve}
}

// kernelArgsFix is the ready-to-paste way to add and remove kernel
// parameters on Fedora (grubby), Ubuntu/Debian (GRUB) and as modprobe.d
// options. The wizard prints it; it never runs it.
func kernelArgsFix(add, remove []string, osID string) string {
	var fedora, debian, modprobe []string
	var addF, addD, remF, remD []string
	if len(add) > 0 {
		addF = append(addF, fmt.Sprintf(`sudo grubby --update-kernel=ALL --args="%s"`, strings.Join(add, " ")))
		addD = append(addD, fmt.Sprintf(`sudo sed -i 's/^GRUB_CMDLINE_LINUX_DEFAULT="/&%s /' /etc/default/grub`, strings.Join(add, " ")))
	}
	if len(remove) > 0 {
		remF = append(remF, fmt.Sprintf(`sudo grubby --update-kernel=ALL --remove-args="%s"`, strings.Join(remove, " ")))
		for _, r := range remove {
			remD = append(remD, fmt.Sprintf(`sudo sed -i -E 's/ ?%s=[^ "]*//g' /etc/default/grub`, strings.ReplaceAll(r, ".", `\.`)))
		}
	}
	if replaces(add, remove) {
		// A new value for a parameter already set: the old one goes first,
		// or the removal would take the new one with it.
		fedora, debian = append(remF, addF...), append(remD, addD...)
	} else {
		fedora, debian = append(addF, remF...), append(addD, remD...)
	}
	debian = append(debian, "sudo update-grub")
	modprobe = modprobeLines(add, remove)
	blocks := []string{
		"Fedora (grubby):\n  " + strings.Join(fedora, "\n  "),
		"Ubuntu/Debian (GRUB_CMDLINE_LINUX_DEFAULT in /etc/default/grub):\n  " + strings.Join(debian, "\n  "),
	}
	if strings.Contains(osID, "debian") || strings.Contains(osID, "ubuntu") {
		blocks[0], blocks[1] = blocks[1], blocks[0]
	}
	if len(modprobe) > 0 {
		blocks = append(blocks, "Or as module options (any distro; then rebuild the initramfs: sudo dracut -f on Fedora, sudo update-initramfs -u on Ubuntu/Debian):\n  "+strings.Join(modprobe, "\n  "))
	}
	return strings.Join(blocks, "\n") + "\nThen reboot."
}

// replaces is true when a parameter is both removed and added (a new value).
func replaces(add, remove []string) bool {
	for _, a := range add {
		k, _, _ := strings.Cut(a, "=")
		for _, r := range remove {
			if k == r {
				return true
			}
		}
	}
	return false
}

// modprobeLines turns module parameters (ttm.pages_limit=N) into
// /etc/modprobe.d lines; kernel-only parameters such as amd_iommu have none.
func modprobeLines(add, remove []string) []string {
	byMod := map[string][]string{}
	var order []string
	for _, a := range add {
		k, v, ok := strings.Cut(a, "=")
		mod, param, dotted := strings.Cut(k, ".")
		if !ok || !dotted {
			continue
		}
		if _, seen := byMod[mod]; !seen {
			order = append(order, mod)
		}
		byMod[mod] = append(byMod[mod], param+"="+v)
	}
	var adds, removes []string
	for _, mod := range order {
		adds = append(adds, fmt.Sprintf(`echo "options %s %s" | sudo tee /etc/modprobe.d/%s.conf`, mod, strings.Join(byMod[mod], " "), mod))
	}
	for _, r := range remove {
		if mod, param, ok := strings.Cut(r, "."); ok {
			removes = append(removes, fmt.Sprintf(`sudo sed -i '/^options %s .*%s=/d' /etc/modprobe.d/*.conf`, mod, param))
		}
	}
	if replaces(add, remove) {
		return append(removes, adds...)
	}
	return append(adds, removes...)
}

// gttArgs are the parameters that size GTT, on amdttm too when dkms is loaded.
func gttArgs(p gttPlan, withAMDTTM bool) []string {
	n := fmt.Sprint(p.Pages)
	args := []string{"ttm.pages_limit=" + n, "ttm.page_pool_size=" + n}
	if withAMDTTM {
		args = append(args, "amdttm.pages_limit="+n, "amdttm.page_pool_size="+n)
	}
	return args
}

// fmtGiB prints bytes as GiB with one decimal.
func fmtGiB(b int64) string {
	return fmt.Sprintf("%.1f GiB", float64(b)/float64(gib))
}
