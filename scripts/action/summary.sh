#!/usr/bin/env bash
# Prints the Markdown that the GitHub Action puts in the job summary: a heading with the
# verdict, the parts of report.md a reviewer reads first, and the comparison with the baseline.
#
#   scripts/action/summary.sh --title TEXT --verdict TEXT [--report FILE]
#                             [--compare FILE | --compare-note TEXT | --no-compare] [--files TEXT]
#
#   --title         the heading (e.g. the BenchmarkRun file)
#   --verdict       one sentence: what the run and the comparison came to
#   --report        report.md (from `benchmatrix run`/`report`); kept from it: the lines before its
#                   first section (run phase, headline, spread, streams that need a longer phase;
#                   not its verdict line: --verdict is the summary's one verdict)
#                   and its "Variants" (each candidate's ratio to the base, with its interval),
#                   "Thresholds" (with the recommendation), "Cells" and "Latency and
#                   throughput" sections; resources, replica spread and methods stay in the file
#   --compare       compare.md (from `benchmatrix compare --out`): its table and counts
#   --compare-note  a sentence in place of the comparison (no baseline, nothing to compare)
#   --no-compare    no section on a baseline at all (base and candidate ran in this run)
#   --files         a closing sentence on where the files are (the artifact)
#
# Image links are dropped (the charts are files in the artifact, which a summary cannot show),
# and every heading moves one level down under the summary's own. A missing file is said so,
# never an error: the summary must still be written when the run went wrong.
set -euo pipefail

title=""
verdict=""
report=""
compare=""
compare_note=""
no_compare=""
files=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --no-compare)
      no_compare=1
      shift
      ;;
    --title | --verdict | --report | --compare | --compare-note | --files)
      [[ $# -ge 2 ]] || {
        echo "summary.sh: $1 needs a value" >&2
        exit 2
      }
      case "$1" in
        --title) title="$2" ;;
        --verdict) verdict="$2" ;;
        --report) report="$2" ;;
        --compare) compare="$2" ;;
        --compare-note) compare_note="$2" ;;
        --files) files="$2" ;;
      esac
      shift 2
      ;;
    *)
      echo "summary.sh: unknown argument '$1'" >&2
      exit 2
      ;;
  esac
done

# report.md without its title, image lines and the sections a summary need not carry.
report_excerpt() {
  awk '
    NR == 1 && /^# / { next }
    /^!\[/ { next }
    /^\*\*verdict: / { next }
    /^## / {
      in_section = 1
      keep = ($0 == "## Variants" || $0 == "## Thresholds" || $0 == "## Cells" || $0 == "## Latency and throughput")
    }
    !in_section || keep { print (/^#/ ? "#" $0 : $0) }
  ' "$1"
}

# compare.md without its title and image lines.
compare_excerpt() {
  awk '
    NR == 1 && /^# / { next }
    /^!\[/ { next }
    { print (/^#/ ? "#" $0 : $0) }
  ' "$1"
}

# Blank lines squeezed to one, so that dropped lines leave no gaps.
squeeze() { cat -s; }

{
  printf '## benchmatrix: %s\n\n' "${title}"
  printf '**%s**\n\n' "${verdict}"
  if [[ -n "${report}" && -s "${report}" ]]; then
    report_excerpt "${report}"
  elif [[ -n "${report}" ]]; then
    printf 'No report: %s was not written.\n' "$(basename "${report}")"
  fi
  if [[ -z "${no_compare}" ]]; then
    printf '\n### Against the baseline\n\n'
    if [[ -n "${compare}" && -s "${compare}" ]]; then
      compare_excerpt "${compare}"
    elif [[ -n "${compare}" ]]; then
      printf 'No comparison: %s was not written.\n' "${compare}"
    else
      printf '%s\n' "${compare_note:-No baseline given: nothing compared.}"
    fi
  fi
  if [[ -n "${files}" ]]; then printf '\n%s\n' "${files}"; fi
} | squeeze
