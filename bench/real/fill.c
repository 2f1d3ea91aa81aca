/* Fill, then write: rank 0 first writes zeros over the whole shared file (as a library's fill values or a
 * "clear the file" step would), then every rank writes its own block of it. FILL=0 skips the fill (the one
 * change of a fill vs no-fill pair). All writes are independent MPI-IO writes of REQUEST_KIB KiB.
 * The file is not deleted or truncated: create it beforehand (in the page cache). Prints the slowest rank's
 * time in the write phase (fill included).
 *
 * usage: fill FILE MIB_PER_RANK FILL(0|1) REQUEST_KIB
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    int rank, nprocs;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (argc < 5) {
        if (rank == 0) fprintf(stderr, "usage: %s FILE MIB_PER_RANK FILL(0|1) REQUEST_KIB\n", argv[0]);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Offset per_rank = (MPI_Offset)atol(argv[2]) << 20;
    int fill = atoi(argv[3]);
    long request = atol(argv[4]) << 10;
    if (per_rank <= 0 || request <= 0 || per_rank % request) MPI_Abort(MPI_COMM_WORLD, 2);

    char *zeros = calloc(1, (size_t)request), *buf = malloc((size_t)request);
    memset(buf, 'a' + rank % 26, (size_t)request);
    MPI_File fh;
    if (MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh)
        != MPI_SUCCESS) {
        fprintf(stderr, "rank %d: cannot open %s\n", rank, argv[1]);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    long long written = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    if (fill && rank == 0) {
        for (MPI_Offset at = 0; at < per_rank * nprocs; at += request) {
            if (MPI_File_write_at(fh, at, zeros, (int)request, MPI_BYTE, MPI_STATUS_IGNORE) != MPI_SUCCESS)
                MPI_Abort(MPI_COMM_WORLD, 1);
            written += request;
        }
    }
    if (fill) MPI_Barrier(MPI_COMM_WORLD);  /* the data must land after the fill */
    for (MPI_Offset done = 0; done < per_rank; done += request) {
        if (MPI_File_write_at(fh, (MPI_Offset)rank * per_rank + done, buf, (int)request, MPI_BYTE,
                              MPI_STATUS_IGNORE) != MPI_SUCCESS)
            MPI_Abort(MPI_COMM_WORLD, 1);
        written += request;
    }
    double mine = MPI_Wtime() - t0, slowest, fastest;
    MPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&mine, &fastest, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
    MPI_File_close(&fh);
    double total = MPI_Wtime() - t0;
    long long all = 0;
    MPI_Reduce(&written, &all, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("fill: nprocs=%d fill=%d bytes=%lld io_phase_max=%.3fs io_phase_min=%.3fs total=%.3fs\n",
               nprocs, fill, all, slowest, fastest, total);
    free(zeros);
    free(buf);
    MPI_Finalize();
    return 0;
}
