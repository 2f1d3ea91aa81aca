/* A plain netCDF application for the knob-layer tests (knows nothing of iolens): it creates a file
   (classic or netCDF-4), writes every element of one variable, and says whether the variable is in
   no-fill mode (nc_inq_var_fill). usage: netcdf_fill_app FILE classic|nc4 */
#include <netcdf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 100000

int main(int argc, char **argv) {
    if (argc < 3) return 2;
    int ncid, dim, var, no_fill = -1;
    int mode = NC_CLOBBER | (strcmp(argv[2], "nc4") == 0 ? NC_NETCDF4 : 0);
    if (nc_create(argv[1], mode, &ncid) != NC_NOERR) return 1;
    nc_def_dim(ncid, "x", N, &dim);
    nc_def_var(ncid, "temperature", NC_DOUBLE, 1, &dim, &var);
    nc_enddef(ncid);
    double *buf = malloc(N * sizeof *buf);
    for (int i = 0; i < N; i++) buf[i] = 0.5 * i;
    if (nc_put_var_double(ncid, var, buf) != NC_NOERR) return 1;
    nc_inq_var_fill(ncid, var, &no_fill, NULL);
    printf("no_fill %d\n", no_fill);
    nc_close(ncid);
    free(buf);
    return 0;
}
