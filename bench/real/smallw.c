/* Many small rank-interleaved records in one shared file: independent writes, or the same data collectively.
 *
 * Record i has a size between 1 and 4 KiB (the same pseudo-random size on every rank); row i of the file holds
 * every rank's record i side by side, so each rank's records interleave with the others'. `indep` writes each
 * record with its own MPI_File_write_at; `coll` writes BATCH records per MPI_File_write_at_all through an
 * hindexed file view (ROMIO's two-phase collective buffering then turns them into a few large writes).
 * The file is not deleted or truncated: create it beforehand (at its final size, in the page cache) so that
 * first-touch allocation does not dominate. Prints the slowest rank's time in the write phase.
 *
 * usage: smallw FILE RECORDS indep|coll [BATCH]      (BATCH default 2000)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int record_size(long i)  /* 1024..4096 bytes, the same on every rank */
{
    unsigned long x = (unsigned long)i * 2654435761UL + 12345UL;
    x ^= x >> 13;
    return 1024 + (int)(x % 3073);
}

int main(int argc, char **argv)
{
    int rank, nprocs;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (argc < 4) {
        if (rank == 0) fprintf(stderr, "usage: %s FILE RECORDS indep|coll [BATCH]\n", argv[0]);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    long records = atol(argv[2]);
    int collective = strcmp(argv[3], "coll") == 0;
    long batch = argc > 4 ? atol(argv[4]) : 2000;
    if (records <= 0 || batch <= 0) MPI_Abort(MPI_COMM_WORLD, 2);

    int *sizes = malloc(sizeof(int) * records);
    MPI_Aint *offsets = malloc(sizeof(MPI_Aint) * records);
    MPI_Offset row = 0, mine_bytes = 0;
    for (long i = 0; i < records; i++) {
        sizes[i] = record_size(i);
        offsets[i] = (MPI_Aint)(row + (MPI_Offset)rank * sizes[i]);
        row += (MPI_Offset)nprocs * sizes[i];
        mine_bytes += sizes[i];
    }
    char *buf = malloc((size_t)mine_bytes);
    memset(buf, 'a' + rank % 26, (size_t)mine_bytes);

    MPI_File fh;
    if (MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh)
        != MPI_SUCCESS) {
        fprintf(stderr, "rank %d: cannot open %s\n", rank, argv[1]);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    char *p = buf;
    if (!collective) {
        for (long i = 0; i < records; i++) {
            if (MPI_File_write_at(fh, offsets[i], p, sizes[i], MPI_BYTE, MPI_STATUS_IGNORE) != MPI_SUCCESS)
                MPI_Abort(MPI_COMM_WORLD, 1);
            p += sizes[i];
        }
    } else {
        for (long first = 0; first < records; first += batch) {
            int n = (int)(records - first < batch ? records - first : batch), bytes = 0;
            MPI_Datatype view;
            MPI_Type_create_hindexed(n, sizes + first, offsets + first, MPI_BYTE, &view);
            MPI_Type_commit(&view);
            MPI_File_set_view(fh, 0, MPI_BYTE, view, "native", MPI_INFO_NULL);
            for (int k = 0; k < n; k++) bytes += sizes[first + k];
            if (MPI_File_write_at_all(fh, 0, p, bytes, MPI_BYTE, MPI_STATUS_IGNORE) != MPI_SUCCESS)
                MPI_Abort(MPI_COMM_WORLD, 1);
            p += bytes;
            MPI_Type_free(&view);
        }
    }
    double mine = MPI_Wtime() - t0, slowest, fastest;
    MPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&mine, &fastest, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
    MPI_File_close(&fh);
    double total = MPI_Wtime() - t0;
    long long all_bytes = 0, my = (long long)mine_bytes;
    MPI_Reduce(&my, &all_bytes, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("smallw: nprocs=%d %s records=%ld bytes=%lld io_phase_max=%.3fs io_phase_min=%.3fs total=%.3fs\n",
               nprocs, collective ? "coll" : "indep", records, all_bytes, slowest, fastest, total);
    free(buf);
    free(offsets);
    free(sizes);
    MPI_Finalize();
    return 0;
}
