package diagnose

// The host facts the rules name, as haloforge doctor judges them (package
// detect has the sources; TestRulesSayWhatDoctorSays holds these to it, so
// diagnose and doctor cannot drift apart).
const (
	// fixedKernels are the kernels with gfx1151's KFD/CWSR fixes.
	fixedKernels = "6.18.4+, 6.12.64+, Ubuntu 24.04 HWE 6.17.0-19+ or OEM 6.14.0-1018+"
	// badFirmware is the linux-firmware release whose MES 0x83 hangs gfx1151.
	badFirmware = "20251125"
	// fixedFirmware is the first release after it, with the revert.
	fixedFirmware = "20260110"
	// watchdogBefore619 and watchdogFrom619 are amdgpu's own job watchdog
	// for every queue, compute included, before Linux 6.19 and from it.
	watchdogBefore619 = "10 s"
	watchdogFrom619   = "2 s"
	// lockupBefore619 and lockupFrom619 are the amdgpu.lockup_timeout doctor
	// proposes: before 6.19 one value leaves compute at its default, so GFX
	// and compute are both named; from 6.19 one value sets every queue.
	lockupBefore619 = "20000,20000"
	lockupFrom619   = "20000"
)
