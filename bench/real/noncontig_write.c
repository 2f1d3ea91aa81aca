/* Rank-interleaved noncontiguous writes to one shared file through MPI-IO.
 *
 * Every rank owns every nprocs-th block of BLOCK bytes: a vector file view, so each call is noncontiguous
 * in the file. ROMIO's hints decide how that reaches the file system: two-phase collective buffering
 * (romio_cb_write, cb_nodes, cb_buffer_size) for the collective calls, data sieving (romio_ds_write,
 * ind_wr_buffer_size) for the independent ones. Prints the slowest rank's time spent in the writes.
 *
 * usage: noncontig_write FILE [-b BLOCK] [-n BLOCKS_PER_CALL] [-c CALLS] [-m coll|indep]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    int rank, nprocs, opt;
    long block = 256, blocks = 1024, calls = 16;
    int collective = 1;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    while ((opt = getopt(argc, argv, "b:n:c:m:")) != -1) {
        if (opt == 'b') block = atol(optarg);
        else if (opt == 'n') blocks = atol(optarg);
        else if (opt == 'c') calls = atol(optarg);
        else if (opt == 'm') collective = strcmp(optarg, "indep") != 0;
        else MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (optind >= argc || block <= 0 || blocks <= 0 || calls <= 0) {
        if (rank == 0) fprintf(stderr, "usage: %s FILE [-b BLOCK] [-n BLOCKS] [-c CALLS] [-m coll|indep]\n", argv[0]);
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
    /* the file is a sequence of rows of nprocs blocks; this rank owns the rank-th block of each row */
    MPI_Datatype row, filetype;
    MPI_Type_vector(1, (int)block, (int)(block * nprocs), MPI_BYTE, &row);
    MPI_Type_create_resized(row, 0, block * nprocs, &filetype);
    MPI_Type_commit(&filetype);
    MPI_File_set_view(fh, rank * block, MPI_BYTE, filetype, "native", MPI_INFO_NULL);

    size_t bytes = (size_t)block * blocks;
    char *buf = malloc(bytes);
    memset(buf, 'a' + rank % 26, bytes);

    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (long c = 0; c < calls; c++) {
        MPI_Offset at = c * (MPI_Offset)bytes;  /* in view units: this rank's bytes */
        int rc = collective ? MPI_File_write_at_all(fh, at, buf, (int)bytes, MPI_BYTE, MPI_STATUS_IGNORE)
                            : MPI_File_write_at(fh, at, buf, (int)bytes, MPI_BYTE, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) MPI_Abort(MPI_COMM_WORLD, 1);
    }
    double mine = MPI_Wtime() - t0, slowest;
    MPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_File_close(&fh);
    if (rank == 0)
        printf("noncontig_write: %d ranks, %s, %ld calls x %ld blocks x %ld B: slowest rank %.3f s\n", nprocs,
               collective ? "collective" : "independent", calls, blocks, block, slowest);
    free(buf);
    MPI_Type_free(&filetype);
    MPI_Type_free(&row);
    MPI_Finalize();
    return 0;
}
