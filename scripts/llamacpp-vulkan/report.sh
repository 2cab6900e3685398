# shellcheck shell=bash
# report_bench RESULTS MODEL FILE: print the "TEST<TAB>t/s" lines of lib/llama_gpu_evidence.py
# as prompt and generation speeds and append them, dated, to FILE (one TSV row per result).
report_bench() {
  local results=$1 model=$2 file=$3 test tps kind
  while IFS=$'\t' read -r test tps; do
    case $test in
      pp*+tg*) kind="prompt+generation" ;;
      pp*) kind="prompt processing" ;;
      tg*) kind="generation" ;;
      *) kind=$test ;;
    esac
    log_ok "$kind ($test): $tps tokens/s"
    printf '%s\t%s\t%s\t%s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$(basename "$model")" "$test" "$tps" >>"$file"
  done <<<"$results"
  log_info "results appended to $file"
}
