package detect

// PagesPerGiB is 1 GiB in the 4 KiB pages that ttm.pages_limit counts.
const PagesPerGiB = pagesPerGiB

// GTTTarget is the GTT size the gtt-size check proposes for some RAM: GiB
// for the GPU, the same in TTM pages, and the GiB kept back for the OS.
type GTTTarget struct {
	GiB, Pages, ReserveGiB int64
}

// PlanGTT is the gtt-size check's arithmetic, for the host fixes that turn
// its advice into a plan: the same numbers the check prints.
func PlanGTT(ramBytes int64) GTTTarget { return GTTTarget(planGTT(ramBytes)) }

// UsesAMDTTM is true when amdgpu-dkms brings its own TTM module (amdttm),
// so GTT settings must go on amdttm. as well as ttm.
func (r *Report) UsesAMDTTM() bool { return usesAMDTTM(r) }
