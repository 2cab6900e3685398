package detect

import "strings"

// knownDevice is what a PCI device ID alone says about an AMD GPU. The IDs
// come from the amdgpu driver's PCI table and the pci.ids database; the
// gfx targets from the kernel's kgd2kfd_probe (docs/facts.md).
type knownDevice struct {
	gfx        string
	name       string
	integrated bool
}

var amdDevices = map[string]knownDevice{
	"1586": {"gfx1151", "Strix Halo (Radeon 8060S / 8050S)", true},
	"150e": {"gfx1150", "Strix Point (Radeon 890M / 880M)", true},
	"1114": {"gfx1152", "Krackan Point (Radeon 860M / 840M)", true},
	"15bf": {"gfx1103", "Phoenix (Radeon 780M / 760M)", true},
	"15c8": {"gfx1103", "Phoenix2 (Radeon 740M)", true},
	"1900": {"gfx1103", "Hawk Point (Radeon 780M)", true},
	"164e": {"gfx1036", "Raphael (Radeon Graphics)", true},
	"1681": {"gfx1035", "Rembrandt (Radeon 680M)", true},
	"1636": {"gfx90c", "Renoir (Radeon Vega)", true},
	"1638": {"gfx90c", "Cezanne (Radeon Vega)", true},
	"164c": {"gfx90c", "Lucienne (Radeon Vega)", true},
	"163f": {"gfx1033", "Van Gogh (Steam Deck)", true},
	"744c": {"gfx1100", "Navi 31 (Radeon RX 7900 XT / XTX / GRE)", false},
	"7448": {"gfx1100", "Navi 31 (Radeon Pro W7900)", false},
	"747e": {"gfx1101", "Navi 32 (Radeon RX 7800 XT / 7700 XT)", false},
	"7480": {"gfx1102", "Navi 33 (Radeon RX 7600 / 7700S)", false},
	"7550": {"gfx1201", "Navi 48 (Radeon RX 9070 / XT)", false},
	"7590": {"gfx1200", "Navi 44 (Radeon RX 9060 XT)", false},
	"73bf": {"gfx1030", "Navi 21 (Radeon RX 6800 / 6900)", false},
	"73a5": {"gfx1030", "Navi 21 (Radeon RX 6950 XT)", false},
	"73df": {"gfx1031", "Navi 22 (Radeon RX 6700 XT)", false},
	"73ff": {"gfx1032", "Navi 23 (Radeon RX 6600)", false},
	"731f": {"gfx1010", "Navi 10 (Radeon RX 5700)", false},
	"740f": {"gfx90a", "Aldebaran (Instinct MI210)", false},
	"7408": {"gfx90a", "Aldebaran (Instinct MI250X)", false},
	"740c": {"gfx90a", "Aldebaran (Instinct MI250X / MI250)", false},
	"74a1": {"gfx942", "Instinct MI300X", false},
	"74a0": {"gfx942", "Instinct MI300A", true},
	"74a5": {"gfx942", "Instinct MI325X", false},
	"738c": {"gfx908", "Arcturus (Instinct MI100)", false},
	"66a0": {"gfx906", "Vega 20 (Instinct MI50 / MI60)", false},
	"66a1": {"gfx906", "Vega 20 (Instinct MI50)", false},
	"66af": {"gfx906", "Vega 20 (Radeon VII)", false},
	"6860": {"gfx900", "Vega 10 (Instinct MI25)", false},
	"6861": {"gfx900", "Vega 10 (Radeon Pro WX 9100)", false},
	"6863": {"gfx900", "Vega 10 (Radeon Vega Frontier Edition)", false},
	"687f": {"gfx900", "Vega 10 (Radeon RX Vega 56 / 64)", false},
	"67df": {"gfx803", "Ellesmere (Radeon RX 470 / 480 / 570 / 580)", false},
	"67ef": {"gfx803", "Baffin (Radeon RX 460 / 560)", false},
	"67ff": {"gfx803", "Baffin (Radeon RX 550 / 560)", false},
	"6fdf": {"gfx803", "Polaris 20 XL (Radeon RX 580 2048SP)", false},
	"699f": {"gfx803", "Lexa (Radeon RX 550 / 640)", false},
}

// nameGFX maps product and code names to targets, the weakest source.
var nameGFX = []struct{ sub, gfx string }{
	// Strix Halo (8060S/8050S/8040S) and Gorgon Halo (Ryzen AI Max PRO 400:
	// 8065S/8050S) are all gfx1151 (ROCm 10.0.0 release notes' GPU table).
	{"8065s", "gfx1151"}, {"8060s", "gfx1151"}, {"8050s", "gfx1151"}, {"8040s", "gfx1151"},
	{"strix halo", "gfx1151"}, {"gorgon halo", "gfx1151"},
	{"890m", "gfx1150"}, {"880m", "gfx1150"}, {"strix point", "gfx1150"},
	{"7900 xtx", "gfx1100"}, {"7900 xt", "gfx1100"}, {"navi 31", "gfx1100"},
	{"7800 xt", "gfx1101"}, {"navi 32", "gfx1101"}, {"navi 33", "gfx1102"},
	{"mi210", "gfx90a"}, {"mi250", "gfx90a"}, {"mi300", "gfx942"}, {"mi100", "gfx908"},
	{"mi25", "gfx900"}, {"mi50", "gfx906"}, {"mi60", "gfx906"}, {"radeon vii", "gfx906"},
	{"rx 580", "gfx803"}, {"rx 570", "gfx803"}, {"rx 480", "gfx803"}, {"rx 470", "gfx803"}, {"ellesmere", "gfx803"},
}

// preGCN names AMD display chips older than GCN: no ROCm, not a compute GPU.
var preGCN = []string{"cedar", "caicos", "turks", "juniper", "redwood", "cypress", "barts", "cayman",
	"rv6", "rv7", "rs780", "rs880", "park", "seymour", "whistler", "robson", "madison", "hd 2", "hd 3", "hd 4"}

func gfxFromName(n string) string {
	l := strings.ToLower(n)
	for _, e := range nameGFX {
		if strings.Contains(l, e.sub) {
			return e.gfx
		}
	}
	return ""
}

func isPreGCN(n string) bool {
	l := strings.ToLower(n)
	for _, p := range preGCN {
		if strings.Contains(l, p) {
			return true
		}
	}
	return false
}

// apuOnlyGFX are targets that exist only as integrated GPUs (APUs), so the
// target alone says the GPU shares system memory.
var apuOnlyGFX = map[string]bool{
	"gfx1151": true, "gfx1150": true, "gfx1152": true, "gfx1103": true, "gfx90c": true,
	"gfx1035": true, "gfx1036": true, "gfx1033": true, "gfx1037": true, "gfx902": true,
}
