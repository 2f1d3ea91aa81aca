/* A plain parallel HDF5 application for the knob-layer tests: it knows nothing of iolens. Each rank writes
   its slice of three datasets (its own transfer list, independent unless told), then reports, through
   HDF5's own calls, what the file and its datasets ended up with: dataset offsets, the transfer mode
   HDF5 really used, the file's access properties, fill time and chunk cache.
   usage: hdf5_knobs_app FILE [app-coll-metadata] [chunked]; prints "key value" lines from rank 0. */
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 65536 /* doubles per rank and dataset: 512 KiB */

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int app_coll = 0, chunked = 0;
    for (int i = 2; i < argc; i++) {
        app_coll |= !strcmp(argv[i], "app-coll-metadata");
        chunked |= !strcmp(argv[i], "chunked");
    }
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL);
    if (app_coll) { /* the application's own choice, which a knob may turn off */
        H5Pset_all_coll_metadata_ops(fapl, 1);
        H5Pset_coll_metadata_write(fapl, 1);
    }
    hid_t file = H5Fcreate(argv[1], H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    if (file < 0) return 1;
    hsize_t dims = (hsize_t)N * size, start = (hsize_t)N * rank, count = N;
    hid_t fspace = H5Screate_simple(1, &dims, NULL), mspace = H5Screate_simple(1, &count, NULL);
    H5Sselect_hyperslab(fspace, H5S_SELECT_SET, &start, NULL, &count, NULL);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    if (chunked) {
        hsize_t chunk = N;
        H5Pset_chunk(dcpl, 1, &chunk);
    }
    hid_t dxpl = H5Pcreate(H5P_DATASET_XFER); /* independent transfers: HDF5's default */
    double *buf = malloc(N * sizeof *buf);
    const char *names[3] = {"density", "pressure", "velocity"};
    hid_t dsets[3];
    for (int d = 0; d < 3; d++) {
        for (int i = 0; i < N; i++) buf[i] = d * 1e6 + rank * N + i;
        dsets[d] = H5Dcreate2(file, names[d], H5T_NATIVE_DOUBLE, fspace, H5P_DEFAULT, dcpl, H5P_DEFAULT);
        if (H5Dwrite(dsets[d], H5T_NATIVE_DOUBLE, mspace, fspace, dxpl, buf) < 0) return 2;
    }
    H5D_mpio_actual_io_mode_t mode;
    H5Pget_mpio_actual_io_mode(dxpl, &mode);
    H5FD_mpio_xfer_t asked;
    H5Pget_dxpl_mpio(dxpl, &asked);
    hid_t file_fapl = H5Fget_access_plist(file);
    hbool_t coll_ops = 0, coll_write = 0;
    H5Pget_all_coll_metadata_ops(file_fapl, &coll_ops);
    H5Pget_coll_metadata_write(file_fapl, &coll_write);
    hsize_t threshold = 0, alignment = 0, meta_block = 0;
    size_t sieve = 0;
    H5Pget_alignment(file_fapl, &threshold, &alignment);
    H5Pget_meta_block_size(file_fapl, &meta_block);
    H5Pget_sieve_buf_size(file_fapl, &sieve);
    MPI_Comm file_comm;
    MPI_Info file_info;
    char cb_nodes[64] = "unset";
    int has_cb_nodes = 0;
    H5Pget_fapl_mpio(file_fapl, &file_comm, &file_info);
    if (file_info != MPI_INFO_NULL) {
        MPI_Info_get(file_info, "cb_nodes", sizeof cb_nodes - 1, cb_nodes, &has_cb_nodes);
        MPI_Info_free(&file_info);
    }
    MPI_Comm_free(&file_comm);
    H5AC_cache_config_t mdc;
    mdc.version = H5AC__CURR_CACHE_CONFIG_VERSION;
    H5Fget_mdc_config(file, &mdc);
    hid_t created = H5Dget_create_plist(dsets[0]), access = H5Dget_access_plist(dsets[0]);
    H5D_fill_time_t fill_time;
    H5Pget_fill_time(created, &fill_time);
    size_t slots, cache_bytes;
    double w0;
    H5Pget_chunk_cache(access, &slots, &cache_bytes, &w0);
    if (rank == 0) {
        for (int d = 0; d < 3; d++) printf("offset.%s %llu\n", names[d], (unsigned long long)H5Dget_offset(dsets[d]));
        printf("actual_io_mode %s\n", mode == H5D_MPIO_CONTIGUOUS_COLLECTIVE ? "contiguous-collective"
               : mode == H5D_MPIO_CHUNK_COLLECTIVE ? "chunk-collective" : mode == H5D_MPIO_NO_COLLECTIVE ? "independent"
               : "mixed");
        printf("dxpl_mpio %s\n", asked == H5FD_MPIO_COLLECTIVE ? "collective" : "independent");
        printf("all_coll_metadata_ops %d\ncoll_metadata_write %d\n", (int)coll_ops, (int)coll_write);
        printf("alignment %llu %llu\n", (unsigned long long)threshold, (unsigned long long)alignment);
        printf("meta_block_size %llu\nsieve_buf_size %zu\n", (unsigned long long)meta_block, sieve);
        printf("mdc_evictions_enabled %d\n", (int)mdc.evictions_enabled);
        printf("fill_time %s\n", fill_time == H5D_FILL_TIME_NEVER ? "never" : fill_time == H5D_FILL_TIME_ALLOC ? "alloc"
               : "ifset");
        printf("chunk_cache_bytes %zu\n", cache_bytes);
        printf("fapl_info_cb_nodes %s\n", has_cb_nodes ? cb_nodes : "unset");
    }
    H5Pclose(created);
    H5Pclose(access);
    H5Pclose(file_fapl);
    for (int d = 0; d < 3; d++) H5Dclose(dsets[d]);
    H5Pclose(dxpl);
    H5Pclose(dcpl);
    H5Sclose(fspace);
    H5Sclose(mspace);
    H5Pclose(fapl);
    H5Fclose(file);
    free(buf);
    MPI_Finalize();
    return 0;
}
