/* Each rank writes its own region of one shared file sequentially, in requests of a fixed size, through
 * independent MPI-IO writes; -s SHIFT moves every region SHIFT bytes past a boundary (misaligned requests).
 * The file is not deleted or truncated: create it beforehand (in the page cache) so that first-touch
 * allocation does not dominate. Prints the slowest rank's time in the write phase.
 *
 * usage: seqwrite FILE MIB_PER_RANK REQUEST_BYTES [-s SHIFT]
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
    if (argc < 4) {
        if (rank == 0) fprintf(stderr, "usage: %s FILE MIB_PER_RANK REQUEST_BYTES [-s SHIFT]\n", argv[0]);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Offset per_rank = (MPI_Offset)atol(argv[2]) << 20, shift = 0;
    long request = atol(argv[3]);
    if (argc > 5 && strcmp(argv[4], "-s") == 0) shift = atol(argv[5]);
    if (per_rank <= 0 || request <= 0 || per_rank % request) MPI_Abort(MPI_COMM_WORLD, 2);

    char *buf = malloc((size_t)request);
    memset(buf, 'a' + rank % 26, (size_t)request);
    MPI_File fh;
    if (MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh)
        != MPI_SUCCESS) {
        fprintf(stderr, "rank %d: cannot open %s\n", rank, argv[1]);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (MPI_Offset done = 0; done < per_rank; done += request) {
        MPI_Offset at = shift + (MPI_Offset)rank * per_rank + done;
        if (MPI_File_write_at(fh, at, buf, (int)request, MPI_BYTE, MPI_STATUS_IGNORE) != MPI_SUCCESS)
            MPI_Abort(MPI_COMM_WORLD, 1);
    }
    double mine = MPI_Wtime() - t0, slowest, fastest;
    MPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&mine, &fastest, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
    MPI_File_close(&fh);
    double total = MPI_Wtime() - t0;
    if (rank == 0)
        printf("seqwrite: nprocs=%d bytes=%lld shift=%lld io_phase_max=%.3fs io_phase_min=%.3fs total=%.3fs\n",
               nprocs, (long long)per_rank * nprocs, (long long)shift, slowest, fastest, total);
    free(buf);
    MPI_Finalize();
    return 0;
}
