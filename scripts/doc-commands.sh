#!/usr/bin/env bash
# Run the shell commands the documentation shows, as a reader would type them, so that a renamed file,
# target or flag breaks a test instead of a reader's first hour.
#
#   scripts/doc-commands.sh BUILD_DIR [FILE.md ...]     (default: every README, the lessons' NOTES.md
#                                                         and docs/*.md)
#
# A fenced block opened with ```sh is a list of commands, one per line (a trailing backslash joins
# lines; `# ...` comments are fine). Its info string says how it is checked:
#   ```sh         every line runs and must exit 0, with no GPU visible (CUDA_VISIBLE_DEVICES=-1):
#                 the lesson programs then run their CPU parts, as on a reader's laptop
#   ```sh fails   every line runs and must exit non-zero for its own reason (e.g. an untouched drill),
#                 not because a file, target, option or lesson is missing
#   ```sh gpu     needs a GPU machine (and PyTorch or Nsight Compute where named): not run; every
#                 repository path it names must exist
# Blocks without `sh` (diagrams, output) are not commands. The commands run in a scratch copy of the
# source tree, against the already-built BUILD_DIR, so ./run and friends never touch your checkout.
# `make test` inside a block is checked as a dry run (`make -n test`): this script runs inside it.
set -u
# A block that ran the test suite would run this script again: refuse to nest.
if [ -n "${ATTN_DOC_COMMANDS:-}" ]; then
  echo "doc-commands: already running (a documented command started the test suite again)" >&2
  exit 1
fi
export ATTN_DOC_COMMANDS=1
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:?usage: doc-commands.sh BUILD_DIR [FILE.md ...]}
shift
build=$(cd "$build" && pwd) || exit 2
[ -f "$build/CMakeCache.txt" ] || { echo "doc-commands: $build is not a configured build" >&2; exit 2; }

cd "$src" || exit 2
if [ $# -gt 0 ]; then
  files=("$@")
else
  files=(README.md lessons/README.md lessons/*/README.md lessons/*/NOTES.md docs/*.md docs/results/README.md)
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/doc-commands.XXXXXX")
trap 'rm -rf "$work"' EXIT
tar -C "$src" --exclude='./build*' --exclude='./.git' --exclude='./run' --exclude='./gpu-out' \
  -cf - . | tar -C "$work" -xf -

export CUDA_VISIBLE_DEVICES=-1 BUILD_DIR="$build" JOBS=${JOBS:-2} ATTN_PROGRESS=0
ran=0 failed=0 checked=0 skipped=0

# Lessons this build leaves out (lessons-left-out.txt, "N<TAB>why": lesson 05 where ATTN_ARCHS_HOPPER
# lacks 90a). A command that needs such a lesson's program is reported as skipped, with the reason:
# in that lesson's own pages the lines that build or run its program (make lesson-N, ./run,
# bin/lesson-N, ctypes loads of the library), elsewhere the lines naming lesson-N.
declare -A left_out=()
if [ -f "$build/lessons-left-out.txt" ]; then
  while IFS=$'\t' read -r n why; do [ -n "$n" ] && left_out[$n]=$why; done <"$build/lessons-left-out.txt"
fi
left_out_reason() { # file command -> prints the reason when the command needs a left-out lesson
  local f=$1 cmd=${2%%#*} n nn
  for n in "${!left_out[@]}"; do
    nn=$(printf '%02d' "$n") # lesson N's folder is lessons/NN_name/ (01..09, 10)
    if [[ "$f" == lessons/${nn}_* ]]; then
      if [[ "$cmd" =~ (make[[:space:]]+lesson-|\./run|bin/lesson-|l${nn}-) ]]; then
        echo "lesson $n is not in this build: ${left_out[$n]}"; return 0
      fi
    elif [[ "$cmd" =~ lesson-${n}([^0-9]|$) ]]; then
      echo "lesson $n is not in this build: ${left_out[$n]}"; return 0
    fi
  done
  return 1
}

report() { # status file line command [detail]
  printf '%-4s %s:%s  %s\n' "$1" "$2" "$3" "$4"
  [ -z "${5:-}" ] || printf '%s\n' "$5" | sed 's/^/       /' | tail -n 15
}

run_line() { # mode file line command
  local mode=$1 f=$2 n=$3 cmd=$4 out rc why
  if why=$(left_out_reason "$f" "$cmd"); then
    report skip "$f" "$n" "$cmd" "$why"; skipped=$((skipped + 1)); return
  fi
  case "${cmd%%#*}" in
    *gpu-suite.sh*|*ctest*) report FAIL "$f" "$n" "$cmd" "not run: it runs the test suite; mark the block \`sh gpu\`"; failed=$((failed + 1)); return;;
    *"make clean"*) report FAIL "$f" "$n" "$cmd" "not run: it would delete $build"; failed=$((failed + 1)); return;;
  esac
  local exec_cmd=$cmd
  if [[ "$cmd" =~ (^|[[:space:]\;\&])make[[:space:]]+test([[:space:]]|$) ]]; then
    exec_cmd=${cmd/make test/make -n test}
  fi
  out=$(cd "$work" && timeout 600 bash -c "$exec_cmd" 2>&1)
  rc=$?
  ran=$((ran + 1))
  local missing='No rule to make target|No such file or directory|command not found|unknown option|not written yet|has no drill yet|must be an integer|needs a value|is not built by this lesson|Error 127'
  if [ "$mode" = fails ]; then
    if [ $rc -ne 0 ] && ! grep -Eq "$missing" <<<"$out"; then
      report ok "$f" "$n" "$cmd" ""
    else
      report FAIL "$f" "$n" "$cmd" "expected to fail on its own terms, got exit $rc:
$out"
      failed=$((failed + 1))
    fi
  elif [ $rc -eq 0 ]; then
    report ok "$f" "$n" "$cmd" ""
  else
    report FAIL "$f" "$n" "$cmd" "exit $rc:
$out"
    failed=$((failed + 1))
  fi
}

check_paths() { # file line command: every word that looks like a repository path must exist
  local f=$1 n=$2 cmd=$3 w bad=""
  for w in ${cmd%%#*}; do
    case "$w" in
      ./run|--*|*=*|*\$*|-*|/*|build/*|build-*/*) continue;;
      */*|*.py|*.sh|*.cu|*.cuh|*.c|*.h)
        w=${w%%[;,)]}
        [ -e "$work/$w" ] || [ -e "$work/${w#./}" ] || bad="$bad $w";;
    esac
  done
  checked=$((checked + 1))
  if [ -n "$bad" ]; then
    report FAIL "$f" "$n" "$cmd" "names paths that do not exist:$bad"
    failed=$((failed + 1))
  else
    report gpu "$f" "$n" "$cmd" ""
  fi
}

for f in "${files[@]}"; do
  [ -f "$f" ] || continue
  mode="" lineno=0 pending="" pending_at=0
  while IFS= read -r line || [ -n "$line" ]; do
    lineno=$((lineno + 1))
    if [[ "$line" =~ ^[[:space:]]*\`\`\`(.*)$ ]]; then
      if [ -n "$mode" ]; then mode=""; continue; fi
      info=${BASH_REMATCH[1]}
      case "$info" in
        sh) mode=run;;
        "sh fails") mode=fails;;
        "sh gpu") mode=gpu;;
        *) mode=none;;
      esac
      continue
    fi
    [ -n "$mode" ] && [ "$mode" != none ] || continue
    if [ -n "$pending" ]; then
      line="$pending ${line#"${line%%[![:space:]]*}"}"
    else
      pending_at=$lineno
    fi
    if [[ "$line" == *\\ ]]; then
      pending=${line%\\}
      continue
    fi
    pending=""
    stripped=${line#"${line%%[![:space:]]*}"}
    [ -n "$stripped" ] && [ "${stripped:0:1}" != "#" ] || continue
    case "$mode" in
      run) run_line run "$f" "$pending_at" "$stripped";;
      fails) run_line fails "$f" "$pending_at" "$stripped";;
      gpu) check_paths "$f" "$pending_at" "$stripped";;
    esac
  done <"$f"
done

echo "doc-commands: $ran command(s) run, $checked GPU-machine command(s) checked for their paths," \
     "$skipped skipped (a lesson not in this build), $failed failed"
[ "$failed" -eq 0 ] && [ $((ran + checked)) -gt 0 ]
