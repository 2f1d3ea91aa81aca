/* Large contiguous independent writes, one region per rank, to one shared file through MPI-IO.
 *
 * Each call is one contiguous request of BLOCK bytes at an offset no other rank touches: no data sieving,
 * no collective buffering, no exchange between ranks, so no ROMIO hint has anything to change.
 * Prints the slowest rank's time spent in the writes.
 *
 * usage: contig_write FILE [-b BLOCK] [-c CALLS]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    int rank, nprocs, opt;
    long block = 4 << 20, calls = 8;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    while ((opt = getopt(argc, argv, "b:c:")) != -1) {
        if (opt == 'b') block = atol(optarg);
        else if (opt == 'c') calls = atol(optarg);
        else MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (optind >= argc || block <= 0 || calls <= 0) {
        if (rank == 0) fprintf(stderr, "usage: %s FILE [-b BLOCK] [-c CALLS]\n", argv[0]);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }

    /* start from no file, so that every run (the first one too) allocates the same blocks */
    if (rank == 0) MPI_File_delete(argv[optind], MPI_INFO_NULL);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_File fh;
    if (MPI_File_open(MPI_COMM_WORLD, argv[optind], MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh)
        != MPI_SUCCESS) {
        fprintf(stderr, "rank %d: cannot open %s\n", rank, argv[optind]);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    char *buf = malloc((size_t)block);
    memset(buf, 'a' + rank % 26, (size_t)block);

    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (long c = 0; c < calls; c++) {  /* this rank's region is calls consecutive blocks */
        MPI_Offset at = ((MPI_Offset)rank * calls + c) * block;
        if (MPI_File_write_at(fh, at, buf, (int)block, MPI_BYTE, MPI_STATUS_IGNORE) != MPI_SUCCESS)
            MPI_Abort(MPI_COMM_WORLD, 1);
    }
    double mine = MPI_Wtime() - t0, slowest;
    MPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_File_close(&fh);
    if (rank == 0)
        printf("contig_write: %d ranks, %ld calls x %ld B: slowest rank %.3f s\n", nprocs, calls, block, slowest);
    free(buf);
    MPI_Finalize();
    return 0;
}
