#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# Real bootloader tooling for doctor --plan/--apply/--rollback (make hostfix), as root.
#
# A Debian bookworm root filesystem made with debootstrap, holding grub2-common,
# grub-efi-amd64-bin, systemd (kernel-install) and systemd-boot (bootctl), is cached as a
# tarball in /var/cache/haloforge-test (rebuilt when missing). Each case unpacks a fresh
# copy into its own directory, boots nothing, and runs the real tools in a chroot:
#   grub-drop-in   update-grub over /boot/vmlinuz-*, /etc/default/grub plus a real
#                  /etc/default/grub.d drop-in (ROCm/ROCm#5671); haloforge runs as a normal
#                  user with sudo, so every root command goes through sudo
#   grub-removals  a machine that booted with amdgpu.gttsize and amdgpu-dkms (ROCm/ROCm#6143):
#                  arguments removed and added, a modprobe.d option removed
#   grub-mkconfig  the same without update-grub: grub-mkconfig -o /boot/grub/grub.cfg
#   systemd-boot   bootctl install on a tmpfs ESP, kernel-install's /etc/kernel/cmdline, the
#                  entry read back with bootctl list
# For each: plan -> apply -> the generated configuration carries exactly the planned
# arguments -> applying again changes nothing -> rollback restores every file of /etc,
# /boot and /efi byte for byte (content, mode, owner).
# Then links as an image may hold them (an absolute /etc/default link leading out of the
# root or inside it, a ".." link climbing past the root, a link in the last element, a
# /proc/self/root link with /proc mounted, a /boot/grub link), as root and through sudo:
# nothing outside the root changes, and the apply goes where chroot resolves the link or
# is refused with the link named.
#
# Environment: HALOFORGE_BIN (default bin/haloforge, else go build), HF_HOSTFIX_KEEP=1 keeps
# the case directories for a look.

# shellcheck source=../lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"

REPO=$(cd "$HF_LIB_DIR/../.." && pwd)
DATA=$REPO/scripts/tests/testdata/hostfix
CACHE_DIR=/var/cache/haloforge-test
PACKAGES=grub-efi-amd64-bin,grub2-common,systemd,systemd-boot,passwd,kmod
KVER=6.18.9-haloforge
SUDO_USER_NAME=hf-hostfix-it
START=$SECONDS
FAILS=0
WORK=''
MOUNTS=()

check() {
  local name=$1
  shift
  if "$@"; then
    log_ok "$name"
  else
    log_error "FAILED: $name"
    FAILS=$((FAILS + 1))
  fi
}

# unmount_all: every mount this script made, innermost first. The root of a case
# has the host's /dev bound into it: nothing is deleted while a mount is left.
unmount_all() {
  local i
  for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do
    umount "${MOUNTS[i]}" 2>/dev/null || umount -l "${MOUNTS[i]}" 2>/dev/null || true
  done
  MOUNTS=()
}

cleanup() {
  unmount_all
  if id "$SUDO_USER_NAME" >/dev/null 2>&1; then
    userdel -r "$SUDO_USER_NAME" >/dev/null 2>&1 || true
  fi
  rm -f "/etc/sudoers.d/$SUDO_USER_NAME"
  if [[ -n $WORK && ${HF_HOSTFIX_KEEP:-0} != 1 ]]; then
    if findmnt -rn -o TARGET | grep -q "^$WORK/"; then
      log_error "mounts are left under $WORK: not deleting it"
      return 0
    fi
    rm -rf --one-file-system "$WORK"
  fi
}
trap cleanup EXIT

mnt() {
  mount "$@"
  MOUNTS+=("${@: -1}")
}

debian_mirror() {
  local m=''
  if [[ -r /etc/apt/sources.list.d/debian.sources ]]; then
    m=$(awk '/^URIs:/ { print $2; exit }' /etc/apt/sources.list.d/debian.sources)
  fi
  printf '%s\n' "${m:-http://deb.debian.org/debian}"
}

# rootfs_tarball: the cached bookworm root, made with debootstrap when missing.
rootfs_tarball() {
  local key tar tmp
  key=$(printf '%s' "bookworm $PACKAGES v1" | sha256sum | cut -c1-12)
  tar=$CACHE_DIR/hostfix-bookworm-$key.tar
  if [[ -s $tar ]] && tar -tf "$tar" ./etc/os-release >/dev/null 2>&1; then
    printf '%s\n' "$tar"
    return 0
  fi
  mkdir -p "$CACHE_DIR"
  tmp=$(mktemp -d "$CACHE_DIR/hostfix-rootfs.XXXXXX")
  log_info "debootstrap bookworm with $PACKAGES from $(debian_mirror) (once; cached in $tar)" >&2
  debootstrap --variant=minbase --include="$PACKAGES" bookworm "$tmp" "$(debian_mirror)" >"$tmp.log" 2>&1 \
    || {
      tail -20 "$tmp.log" >&2
      rm -rf "$tmp" "$tmp.log"
      die "debootstrap failed"
    }
  tar -C "$tmp" -cf "$tar.part" . && mv "$tar.part" "$tar"
  rm -rf "$tmp" "$tmp.log"
  printf '%s\n' "$tar"
}

haloforge_bin() {
  local bin=${HALOFORGE_BIN:-$REPO/bin/haloforge}
  if [[ ! -x $bin ]]; then
    bin=$WORK/haloforge
    (cd "$REPO" && go build -o "$bin" ./cmd/haloforge) || die "go build ./cmd/haloforge failed"
  fi
  install -m 0755 "$bin" "$WORK/bin/haloforge"
}

# new_root NAME: ROOT, a fresh copy of the root with a kernel image, as a Debian
# install has (not in a subshell: the mounts are recorded for the cleanup).
new_root() {
  ROOT=$WORK/$1/root
  local root=$ROOT
  mkdir -p "$root"
  tar -C "$root" -xf "$TARBALL"
  chmod 0755 "$root" # a root directory, whatever mktemp made the tarball's top
  # What grub-pc's postinst (ucf) and udev's would have done on a real install.
  cp "$root/usr/share/grub/default/grub" "$root/etc/default/grub"
  chroot "$root" groupadd -r render
  chroot "$root" useradd -m alice
  mkdir -p "$root/boot/grub" # grub-install's, which needs a disk
  printf 'kernel image placeholder\n' >"$root/boot/vmlinuz-$KVER"
  printf 'initrd placeholder\n' >"$root/boot/initrd.img-$KVER"
  mkdir -p "$root/usr/lib/modules/$KVER"
  cp "$root/boot/vmlinuz-$KVER" "$root/usr/lib/modules/$KVER/vmlinuz"
  # grub-probe needs / to be a mount point and the devices to be there.
  mnt --bind "$root" "$root"
  mnt -t proc proc "$root/proc"
  mnt --bind /dev "$root/dev"
  mnt -t sysfs sys "$root/sys"
}

# bundle NAME FROM: the hardware facts of a real machine, plus the user who collected it.
bundle() {
  local dir=$WORK/$1/bundle
  mkdir -p "$dir"
  cp -r "$2/." "$dir/"
  rm -f "$dir/SOURCE" "$dir/SOURCES.md" "$dir/expected.json"
  printf 'alice : alice\n' >"$dir/groups.txt"
  printf '%s\n' "$dir"
}

# tree_state ROOT: every file of /etc, /boot and /efi with its checksum, mode and owner.
tree_state() {
  local d dirs=()
  for d in etc boot efi; do
    [[ -d $1/$d ]] && dirs+=("$d")
  done
  (cd "$1" && find "${dirs[@]}" -xdev -type f -printf '%p %m %U:%G\n' | sort \
    | while read -r p rest; do printf '%s %s %s\n' "$(sha256sum <"$p" | cut -c1-16)" "$rest" "$p"; done)
}

# linux_lines ROOT: the linux command lines of grub.cfg, normal entries and recovery apart.
linux_lines() { grep -E '^[[:space:]]+linux[[:space:]]' "$1/boot/grub/grub.cfg" | sed -E 's/^[[:space:]]+linux[[:space:]]+//'; }

# has_exactly LINE ARG...: each set argument once, with its value.
has_exactly() {
  local line=$1 a
  shift
  for a in "$@"; do
    [[ $(tr ' ' '\n' <<<"$line" | grep -c "^${a%%=*}=") == 1 ]] || return 1
    tr ' ' '\n' <<<"$line" | grep -qxF -- "$a" || return 1
  done
}

lacks() {
  local line=$1 k
  shift
  for k in "$@"; do
    tr ' ' '\n' <<<"$line" | grep -qE "^${k//./\\.}(=|$)" && return 1
  done
  return 0
}

# hf AS ROOT ARGS...: run haloforge as root, or as the sudo test user.
hf() {
  local as=$1
  shift
  if [[ $as == user ]]; then
    sudo -u "$SUDO_USER_NAME" -H env NO_COLOR=1 "$WORK/bin/haloforge" "$@"
  else
    env NO_COLOR=1 XDG_STATE_HOME="$WORK/state-root" "$WORK/bin/haloforge" "$@"
  fi
}

# run_case NAME AS FACTS SETUP CHECK: plan, apply, check, apply again, rollback, compare.
run_case() {
  local name=$1 as=$2 facts=$3 setup=$4 verify=$5 root b t0=$SECONDS plan before applied out
  log_step "case $name (haloforge as ${as})"
  new_root "$name"
  root=$ROOT
  b=$(bundle "$name" "$facts")
  "$setup" "$root"
  plan=$WORK/$name/plan.json
  before=$(tree_state "$root")
  hf "$as" doctor --plan --bundle "$b" --root "$root" >"$WORK/$name/plan.txt"
  hf "$as" doctor --plan --json --bundle "$b" --root "$root" >"$plan"
  chmod a+r "$plan"
  out=$(hf "$as" doctor --apply "$plan" --root "$root" --confirm APPLY 2>&1) || {
    printf '%s\n' "$out"
    check "$name: apply" false
    unmount_all
    return 0
  }
  printf '%s\n' "$out" >"$WORK/$name/apply.txt"
  check "$name: apply made a backup and did not reboot" grep -q 'Nothing was rebooted' <<<"$out"
  [[ $as == user ]] && check "$name: root commands went through sudo" grep -q "sudo -- chroot $root" <<<"$out"
  "$verify" "$root"
  applied=$(tree_state "$root")
  out=$(hf "$as" doctor --apply "$plan" --root "$root" --confirm APPLY 2>&1)
  check "$name: applying again changes nothing" grep -qE 'Nothing (for haloforge )?to change' <<<"$out"
  check "$name: ... not a byte" test "$(tree_state "$root")" == "$applied"
  out=$(hf "$as" doctor --rollback --root "$root" --confirm ROLLBACK 2>&1) || {
    printf '%s\n' "$out"
    check "$name: rollback" false
    unmount_all
    return 0
  }
  printf '%s\n' "$out" >"$WORK/$name/rollback.txt"
  check "$name: rollback restored every file of /etc, /boot and /efi byte for byte" test "$(tree_state "$root")" == "$before"
  if [[ "$(tree_state "$root")" != "$before" ]]; then
    diff <(printf '%s\n' "$before") <(tree_state "$root") || true
  fi
  unmount_all
  log_info "case $name: $((SECONDS - t0)) s"
}

# ---- the cases ----------------------------------------------------------------

DEMO=$REPO/tui/demo/bundle
ROCM6143=$REPO/detect/testdata/holdout/rocm-6143
DEMO_ARGS=(ttm.pages_limit=30670848 ttm.page_pool_size=30670848)

setup_grub_drop_in() {
  cp "$DATA/amdgpu.cfg" "$1/etc/default/grub.d/amdgpu.cfg"
  chroot "$1" update-grub >/dev/null 2>&1
}

# every_normal ROOT ARG...: has_exactly on every normal (not recovery) entry.
every_normal() {
  local root=$1 l n=0
  shift
  while read -r l; do
    has_exactly "$l" "$@" || return 1
    n=$((n + 1))
  done < <(linux_lines "$root" | grep -v ' single')
  ((n > 0))
}

verify_grub_drop_in() {
  local normal recovery
  normal=$(linux_lines "$1" | grep -v ' single' | head -1)
  recovery=$(linux_lines "$1" | grep ' single')
  log_info "grub.cfg: linux $normal"
  check "grub-drop-in: every normal entry has ${DEMO_ARGS[*]} exactly once" every_normal "$1" "${DEMO_ARGS[@]}"
  check "grub-drop-in: the drop-in's ttm.pages_limit=32768000 is gone" lacks "$normal" ttm.pages_limit=32768000
  check "grub-drop-in: its amdttm and cwsr arguments stay" has_exactly "$normal" amdttm.pages_limit=32768000 amdgpu.cwsr_enable=0
  check "grub-drop-in: the recovery entry has none of the new arguments" lacks "$recovery" ttm.pages_limit ttm.page_pool_size
  check "grub-drop-in: /etc/default/grub's other lines are untouched" \
    diff <(grep -v '^GRUB_CMDLINE_LINUX_DEFAULT=' "$1/usr/share/grub/default/grub") <(grep -v '^GRUB_CMDLINE_LINUX_DEFAULT=' "$1/etc/default/grub")
  check "grub-drop-in: alice is in render and video" bash -c "grep -q '^render:.*alice' '$1/etc/group' && grep -q '^video:.*alice' '$1/etc/group'"
}

setup_removals() {
  # The machine booted with these (ROCm/ROCm#6143's dmesg "Command line:").
  sed -i 's/^GRUB_CMDLINE_LINUX_DEFAULT=.*/GRUB_CMDLINE_LINUX_DEFAULT="quiet splash amdgpu.gttsize=98304 ttm.pages_limit=25000000 iommu=pt"/' "$1/etc/default/grub"
  cp "$DATA/strix-modprobe.conf" "$1/etc/modprobe.d/strix.conf"
  chroot "$1" update-grub >/dev/null 2>&1
}

verify_removals() {
  local normal
  normal=$(linux_lines "$1" | grep -v ' single' | head -1)
  log_info "grub.cfg: linux $normal"
  check "grub-removals: amdgpu.gttsize is gone" lacks "$normal" amdgpu.gttsize
  check "grub-removals: amdttm.* set to the ttm value in every normal entry" \
    every_normal "$1" ttm.pages_limit=25000000 amdttm.pages_limit=25000000 amdttm.page_pool_size=25000000 iommu=pt
  # amdgpu-dkms 6.16.13 on 6.12.74: whether that driver has the gfx1151 CWSR fix is not known, so no stop-gap.
  check "grub-removals: no CWSR stop-gap (amdgpu-dkms: doctor cannot tell)" lacks "$normal" amdgpu.cwsr_enable
  check "grub-removals: modprobe.d no longer sets amdgpu gttsize" bash -c "! grep -q gttsize '$1/etc/modprobe.d/strix.conf'"
}

setup_mkconfig() {
  rm "$1/usr/sbin/update-grub"
  chroot "$1" grub-mkconfig -o /boot/grub/grub.cfg >/dev/null 2>&1
}

verify_mkconfig() {
  # A --root plan runs the root's own tools, as --apply does: sudo chroot ROOT grub-mkconfig.
  check "grub-mkconfig: the plan used grub-mkconfig -o /boot/grub/grub.cfg in the root" \
    grep -qF "sudo chroot $1 grub-mkconfig -o /boot/grub/grub.cfg" "$WORK/grub-mkconfig/plan.txt"
  check "grub-mkconfig: every normal entry has ${DEMO_ARGS[*]}" every_normal "$1" "${DEMO_ARGS[@]}"
}

setup_sdboot() {
  mkdir -p "$1/efi"
  mnt -t tmpfs -o size=64m esp "$1/efi"
  SYSTEMD_RELAX_ESP_CHECKS=1 chroot "$1" bootctl install --esp-path=/efi --no-variables >/dev/null 2>&1
  # Boot Loader Specification entries, as Fedora's /usr/lib/kernel/install.conf sets.
  printf 'layout=bls\n' >"$1/etc/kernel/install.conf"
  # The command line the machine booted with, for new entries.
  printf 'root=UUID=0b6a3f0e-hostfix ro quiet amdgpu.gttsize=98304 ttm.pages_limit=25000000 iommu=pt\n' >"$1/etc/kernel/cmdline"
  chroot "$1" kernel-install add "$KVER" "/usr/lib/modules/$KVER/vmlinuz" >/dev/null 2>&1
}

verify_sdboot() {
  local options want
  options=$(SYSTEMD_RELAX_ESP_CHECKS=1 chroot "$1" bootctl --esp-path=/efi --no-variables list 2>/dev/null | sed -nE 's/^ +options: //p' | head -1)
  want=$(cat "$1/etc/kernel/cmdline")
  log_info "bootctl list: options: $options"
  check "systemd-boot: bootctl lists the entry with the new options" \
    test "${options% systemd.machine_id=*}" == "$want"
  check "systemd-boot: exactly the planned arguments" \
    has_exactly "$options" ttm.pages_limit=25000000 amdttm.pages_limit=25000000 amdttm.page_pool_size=25000000
  check "systemd-boot: amdgpu.gttsize is gone, no CWSR stop-gap" lacks "$options" amdgpu.gttsize amdgpu.cwsr_enable
}

# ---- links an image may hold ------------------------------------------------------
# Each case plants a symbolic link in a fresh root, with a directory OUT outside it that
# holds a copy of what the link names (on this machine, the link leads there). Whatever
# the link, not a byte of OUT changes and no backup holds a file of it: the apply edits
# what chroot resolves the link to inside the root (and the rollback restores the root
# byte for byte), or it is refused with the link named (exit 2) and nothing changes.

OUT=''

# outside_state: every file of OUT with its checksum.
outside_state() { (cd "$OUT" && find . -type f -printf '%p %m\n' | sort | while read -r p m; do printf '%s %s %s\n' "$(sha256sum <"$p" | cut -c1-16)" "$m" "$p"; done); }

# link_state ROOT: tree_state, and the files of the copy inside the root when there is one.
link_state() {
  tree_state "$1"
  if [[ -d $1$OUT ]]; then
    (cd "$1$OUT" && find . -type f -printf '%p %m %U:%G\n' | sort \
      | while read -r p rest; do printf '%s %s %s\n' "$(sha256sum <"$p" | cut -c1-16)" "$rest" "$p"; done)
  fi
}

# in_root_copy ROOT: the same absolute path as OUT, inside the root, with the root's
# /etc/default: an absolute link to it resolves there under chroot.
in_root_copy() {
  mkdir -p "$1$OUT"
  cp -a "$1/etc/default" "$1$OUT/default"
}

plant_abs_outside() { rm -rf "$1/etc/default" && ln -s "$OUT/default" "$1/etc/default"; }
plant_abs_inside() { in_root_copy "$1" && rm -rf "$1/etc/default" && ln -s "$OUT/default" "$1/etc/default"; }
plant_dotdot() { in_root_copy "$1" && rm -rf "$1/etc/default" && ln -s "../../../../../../../..$OUT/default" "$1/etc/default"; }
plant_last() { ln -sf /usr/share/grub/default/grub "$1/etc/default/grub"; }
plant_magic() { rm -rf "$1/etc/default" && ln -s "/proc/self/root$OUT/default" "$1/etc/default"; }
plant_boot_grub() { rm -rf "$1/boot/grub" && ln -s "$OUT/grub" "$1/boot/grub"; }

# run_link_case NAME AS PLANT WHEN EXPECT: WHEN is before (the link appears between plan
# and apply) or after (the plan is made with it); EXPECT is inside (applied in the root)
# or a regular expression of the refusal.
run_link_case() {
  local name=$1 as=$2 plant=$3 when=$4 expect=$5 root b plan out before outside rc
  log_step "link case $name (haloforge as ${as}, link planted $when the plan)"
  new_root "$name"
  root=$ROOT
  OUT=$WORK/$name/outside
  mkdir -p "$OUT/grub"
  cp -a "$root/etc/default" "$OUT/default"
  printf '# %s: outside the root, never changed\n' "$name" >>"$OUT/default/grub"
  printf 'outside grub.cfg of %s\n' "$name" >"$OUT/grub/grub.cfg"
  chroot "$root" update-grub >/dev/null 2>&1
  b=$(bundle "$name" "$DEMO")
  plan=$WORK/$name/plan.json
  [[ $when == after ]] && "$plant" "$root"
  hf "$as" doctor --plan --json --bundle "$b" --root "$root" >"$plan"
  chmod a+r "$plan"
  [[ $when == before ]] && "$plant" "$root"
  before=$(link_state "$root")
  outside=$(outside_state)
  rc=0
  out=$(hf "$as" doctor --apply "$plan" --root "$root" --confirm APPLY 2>&1) || rc=$?
  printf '%s\n' "$out" >"$WORK/$name/apply.txt"
  check "$name: nothing outside the root changed" test "$(outside_state)" == "$outside"
  check "$name: no backup holds a file from outside" bash -c "! grep -rqs -- '$name: outside\|outside grub.cfg of $name' '$WORK/state-root' /home/$SUDO_USER_NAME/.local/state"
  if [[ $expect != inside ]]; then
    check "$name: refused (exit 2)" test "$rc" -eq 2
    check "$name: the refusal says why" grep -qE -- "$expect" <<<"$out"
    check "$name: the root is unchanged" test "$(link_state "$root")" == "$before"
    [[ $rc -eq 2 ]] || printf '%s\n' "$out"
    unmount_all
    return 0
  fi
  check "$name: applied" test "$rc" -eq 0
  [[ $rc -eq 0 ]] || printf '%s\n' "$out"
  check "$name: the copy inside the root carries the arguments" grep -q 'ttm.pages_limit=30670848' "$root$OUT/default/grub"
  check "$name: grub.cfg (made in the chroot through the link) carries them" every_normal "$root" "${DEMO_ARGS[@]}"
  out=$(hf "$as" doctor --rollback --root "$root" --confirm ROLLBACK 2>&1) || printf '%s\n' "$out"
  check "$name: rollback restored the root byte for byte" test "$(link_state "$root")" == "$before"
  check "$name: ... and still nothing outside changed" test "$(outside_state)" == "$outside"
  unmount_all
}

# ---- main -----------------------------------------------------------------------

[[ $(id -u) -eq 0 ]] || die "hostfix-chroot.sh needs root (debootstrap, chroot, mount): sudo make hostfix"
require debootstrap chroot mount sudo sha256sum
WORK=$(mktemp -d /var/tmp/haloforge-hostfix.XXXXXX)
chmod 0755 "$WORK"
mkdir -p "$WORK/bin"
haloforge_bin
t0=$SECONDS
TARBALL=$(rootfs_tarball)
log_info "root filesystem: $TARBALL ($((SECONDS - t0)) s)"

# A normal user with sudo: haloforge itself never runs as root.
useradd --create-home --shell /bin/bash "$SUDO_USER_NAME"
printf '%s ALL=(ALL) NOPASSWD: ALL\n' "$SUDO_USER_NAME" >"/etc/sudoers.d/$SUDO_USER_NAME"
chmod 0440 "/etc/sudoers.d/$SUDO_USER_NAME"

run_case grub-drop-in user "$DEMO" setup_grub_drop_in verify_grub_drop_in
run_case grub-removals root "$ROCM6143" setup_removals verify_removals
run_case grub-mkconfig root "$DEMO" setup_mkconfig verify_mkconfig
run_case systemd-boot root "$ROCM6143" setup_sdboot verify_sdboot

run_link_case link-absolute-out root plant_abs_outside before 'the plan is stale|boots with unknown'
run_link_case link-absolute-in root plant_abs_inside after inside
run_link_case link-dotdot user plant_dotdot after inside
run_link_case link-last-element user plant_last after '/etc/default/grub is a symbolic link to /usr/share/grub/default/grub: haloforge edits only regular files'
run_link_case link-proc-self-root root plant_magic before 'the plan is stale|boots with unknown'
run_link_case link-boot-grub root plant_boot_grub after '/boot/grub is a symbolic link to .*, which does not exist inside'

log_info "hostfix-chroot: $((SECONDS - START)) s in all"
if ((FAILS > 0)); then
  die "$FAILS check(s) failed (case files in $WORK with HF_HOSTFIX_KEEP=1)"
fi
log_ok "every bootloader: plan, apply, exact arguments, idempotent, rollback byte for byte"
