#!/bin/sh
# Measure one knob on one program under Darshan: REPEATS runs of the baseline, REPEATS runs with the knob,
# each through `iolens run`, then `iolens compare --baseline-runs REPEATS` over all of them.
#
# usage: bench/real/measure.sh NAME 'KNOB ARGS' -- COMMAND...
#   KNOB ARGS are `iolens run` options for the changed runs, e.g. '--hints cb_disable.hints' or
#   '--env FOO=1'; '' changes nothing (a repeat). The word {KNOB} in COMMAND is replaced by $KNOB_ARG
#   in the changed runs only (an application's own switch, e.g. KNOB_ARG='-t indep'), and removed in the
#   baseline runs.
# env: OUT (default /tmp/iolens-real), REPEATS (default 3), NPROCS (default 4), KNOB_ARG.
# Needs iolens on the PATH and a Darshan runtime it can find (IOLENS_DARSHAN_LIB). COMMAND is split on
# blanks again: no spaces inside its words.
set -eu
if [ $# -lt 4 ] || [ "$3" != "--" ]; then
    echo "usage: $0 NAME 'RUN-OPTIONS' -- COMMAND..." >&2; exit 2
fi
name=$1; knob=$2; shift 3
out=${OUT:-/tmp/iolens-real}/$name
repeats=${REPEATS:-3}
mkdir -p "$out"
run_side() {  # side knob-args value-for-{KNOB}
    side=$1; args=$2; value=$3; shift 3
    i=1
    while [ "$i" -le "$repeats" ]; do
        set -- $(printf '%s\n' "$CMD" | sed "s|{KNOB}|$value|g")
        # shellcheck disable=SC2086
        iolens run -q -o "$out/$side$i.darshan" $args -- "$@" | grep -v '^log:' || true
        i=$((i + 1))
    done
}
CMD=$*
run_side base "" ""
run_side knob "$knob" "${KNOB_ARG:-}"
logs=""
for side in base knob; do
    i=1
    while [ "$i" -le "$repeats" ]; do logs="$logs $out/$side$i.darshan"; i=$((i + 1)); done
done
# shellcheck disable=SC2086
iolens compare --baseline-runs "$repeats" $logs
