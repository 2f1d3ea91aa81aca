#!/bin/sh
# Build the real MPI / parallel-HDF5 programs with Debian's MPICH (mpicc) and parallel HDF5 (h5pcc).
# usage: bench/real/build.sh [OUTDIR]   (default: bench/real/bin; binaries are never committed)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/bin}
mkdir -p "$out"
out=$(cd "$out" && pwd)
mpicc -O2 -Wall -o "$out/noncontig_write" "$here/noncontig_write.c"
mpicc -O2 -Wall -o "$out/contig_write" "$here/contig_write.c"
# the before/after pairs of tests/data/pairs (smallw, seqwrite, fill)
for prog in smallw seqwrite fill; do
    mpicc -O2 -Wall -o "$out/$prog" "$here/$prog.c"
done
# Debian's h5pcc wraps mpicc with the MPICH build of HDF5 (libhdf5-mpich-dev); it links HDF5 statically
# unless told -shlib, and Darshan's preloaded HDF5 module (H5F, H5D) only sees a shared libhdf5
# (h5pcc leaves its .o in the current directory: build in OUTDIR)
(cd "$out" && h5pcc -shlib -O2 -Wall -o h5_many_datasets "$here/h5_many_datasets.c")
echo "built in $out: noncontig_write contig_write smallw seqwrite fill h5_many_datasets"
