#!/usr/bin/env bash
# Creates the virtualenv of the reference tools the benchmarks compare iolens with, if it is missing:
#   drishti-io (Drishti, the I/O insight tool) and darshan (PyDarshan, which Drishti and DXT Explorer use).
# They pin other versions of pandas/pydarshan than iolens, so they live in their own venv.
#
#   bash bench/setup_reference_tools.sh            # -> /work/venv-ref (or $IOLENS_REF_VENV)
#   /work/venv/bin/python bench/bench_drishti.py --drishti /work/venv-ref/bin/drishti --markdown table.md
set -euo pipefail
VENV="${IOLENS_REF_VENV:-/work/venv-ref}"
PACKAGES=("drishti-io==0.8" "darshan==3.5.0")

if [ -x "$VENV/bin/drishti" ] && "$VENV/bin/python" -c "import darshan" 2>/dev/null; then
    echo "reference tools already in $VENV: $("$VENV/bin/pip" freeze 2>/dev/null | grep -Ei '^(drishti-io|darshan)==' | tr '\n' ' ')"
    exit 0
fi
PY="${PYTHON:-python3}"
echo "creating $VENV with ${PACKAGES[*]}" >&2
"$PY" -m venv "$VENV"
"$VENV/bin/pip" install --quiet --upgrade pip
"$VENV/bin/pip" install --quiet "${PACKAGES[@]}"
"$VENV/bin/drishti" --help >/dev/null
echo "reference tools ready in $VENV: $("$VENV/bin/pip" freeze | grep -Ei '^(drishti-io|darshan)==' | tr '\n' ' ')"
