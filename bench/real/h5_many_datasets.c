/* Many small shared datasets written by every rank through parallel HDF5 (MPI-IO driver).
 *
 * Each of NDSETS one-dimensional datasets holds ELEMS doubles per rank; every rank writes its own
 * contiguous slice of each. The HDF5 settings that move this workload are command-line switches, so they can
 * be measured without a rebuild: dataset transfer (-t coll|indep), collective metadata reads and writes (-M),
 * file-space alignment (-a BYTES), fill values at allocation (-F: never fill), and an H5Fflush after every
 * dataset (-f, as a program checkpointing its metadata would). Prints the slowest rank's
 * time from H5Fcreate to H5Fclose; -v also prints the first dataset's file offset and the actual MPI-IO mode
 * HDF5 used for the last write (H5Dget_offset, H5Pget_mpio_actual_io_mode).
 *
 * usage: h5_many_datasets FILE [-d NDSETS] [-e ELEMS] [-t coll|indep] [-M] [-a ALIGN] [-F] [-f] [-v]
 */
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHECK(x) do { if ((x) < 0) { fprintf(stderr, "HDF5 call failed: %s\n", #x); MPI_Abort(MPI_COMM_WORLD, 1); } } while (0)

int main(int argc, char **argv)
{
    int rank, nprocs, opt, verbose = 0, coll_meta = 0, no_fill = 0, coll_transfer = 1, flush = 0;
    long ndsets = 50, elems = 1024;
    hsize_t align = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    while ((opt = getopt(argc, argv, "d:e:t:Ma:Ffv")) != -1) {
        if (opt == 'd') ndsets = atol(optarg);
        else if (opt == 'e') elems = atol(optarg);
        else if (opt == 't') coll_transfer = strcmp(optarg, "indep") != 0;
        else if (opt == 'M') coll_meta = 1;
        else if (opt == 'a') align = (hsize_t)atoll(optarg);
        else if (opt == 'F') no_fill = 1;
        else if (opt == 'f') flush = 1;
        else if (opt == 'v') verbose = 1;
        else MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (optind >= argc || ndsets <= 0 || elems <= 0) {
        if (rank == 0)
            fprintf(stderr, "usage: %s FILE [-d NDSETS] [-e ELEMS] [-t coll|indep] [-M] [-a ALIGN] [-F] [-f] [-v]\n",
                    argv[0]);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }

    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    CHECK(H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL));
    if (coll_meta) {
        CHECK(H5Pset_all_coll_metadata_ops(fapl, 1));
        CHECK(H5Pset_coll_metadata_write(fapl, 1));
    }
    if (align > 0) CHECK(H5Pset_alignment(fapl, 0, align));
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    if (no_fill) CHECK(H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER));
    hid_t dxpl = H5Pcreate(H5P_DATASET_XFER);
    CHECK(H5Pset_dxpl_mpio(dxpl, coll_transfer ? H5FD_MPIO_COLLECTIVE : H5FD_MPIO_INDEPENDENT));

    double *data = malloc(sizeof(double) * elems);
    for (long i = 0; i < elems; i++) data[i] = rank * 1e6 + i;
    hsize_t total = (hsize_t)elems * nprocs, count = (hsize_t)elems, start = (hsize_t)elems * rank;
    hid_t filespace = H5Screate_simple(1, &total, NULL), memspace = H5Screate_simple(1, &count, NULL);
    CHECK(H5Sselect_hyperslab(filespace, H5S_SELECT_SET, &start, NULL, &count, NULL));

    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    hid_t file = H5Fcreate(argv[optind], H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    CHECK(file);
    haddr_t first_offset = HADDR_UNDEF;
    H5D_mpio_actual_io_mode_t mode = H5D_MPIO_NO_COLLECTIVE;
    for (long d = 0; d < ndsets; d++) {
        char name[64];
        snprintf(name, sizeof name, "var%05ld", d);
        hid_t dset = H5Dcreate2(file, name, H5T_NATIVE_DOUBLE, filespace, H5P_DEFAULT, dcpl, H5P_DEFAULT);
        CHECK(dset);
        CHECK(H5Dwrite(dset, H5T_NATIVE_DOUBLE, memspace, filespace, dxpl, data));
        if (d == 0) first_offset = H5Dget_offset(dset);
        if (d == ndsets - 1) CHECK(H5Pget_mpio_actual_io_mode(dxpl, &mode));
        CHECK(H5Dclose(dset));
        if (flush) CHECK(H5Fflush(file, H5F_SCOPE_LOCAL));
    }
    CHECK(H5Fclose(file));
    double mine = MPI_Wtime() - t0, slowest;
    MPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("h5_many_datasets: %d ranks, %ld datasets x %ld doubles/rank, transfer %s, coll metadata %s, "
               "alignment %llu, fill %s, flush %s: slowest rank %.3f s\n", nprocs, ndsets, elems,
               coll_transfer ? "collective" : "independent", coll_meta ? "on" : "off", (unsigned long long)align,
               no_fill ? "never" : "default", flush ? "every dataset" : "none", slowest);
        if (verbose)
            printf("first dataset offset %llu; last write's actual MPI-IO mode %s\n",
                   (unsigned long long)first_offset,
                   mode == H5D_MPIO_NO_COLLECTIVE ? "independent" :
                   mode == H5D_MPIO_CONTIGUOUS_COLLECTIVE ? "contiguous collective" : "collective (other)");
    }
    free(data);
    H5Sclose(memspace);
    H5Sclose(filespace);
    H5Pclose(dxpl);
    H5Pclose(dcpl);
    H5Pclose(fapl);
    MPI_Finalize();
    return 0;
}
