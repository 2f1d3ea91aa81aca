/* iolens' knob layer: preloaded (LD_PRELOAD) into an unchanged application by `iolens run --set`, it sets
   HDF5 and netCDF tuning on the property lists and files the application creates. Written for the
   mechanism, not one HDF5 build: no HDF5/MPI/netCDF header is used; every library symbol is looked up
   with dlsym at run time, so one build serves HDF5 1.10-1.14, MPICH and Open MPI, with or without them.

   Configuration: IOLENS_KNOBS holds "name=value" lines (values already checked and normalised by
   iolens' Python side). At exit each process appends what it applied and what it could not to the file
   named by IOLENS_KNOBS_REPORT, which `iolens run` reads back. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* old login nodes: dlsym moved from libdl to libc (GLIBC_2.34) and memcpy got a new version (2.14) */
#if defined(__x86_64__)
__asm__(".symver dlsym,dlsym@GLIBC_2.2.5");
__asm__(".symver memcpy,memcpy@GLIBC_2.2.5");
#elif defined(__aarch64__)
__asm__(".symver dlsym,dlsym@GLIBC_2.17");
#endif

typedef int64_t hid_t; /* HDF5 >= 1.10 */
typedef int herr_t;
typedef uint64_t hsize_t;
typedef int64_t mpi_handle; /* MPI_Comm / MPI_Info: an int (MPICH) or a pointer (Open MPI), passed in a register */

enum { K_ALIGN, K_ALIGN_THRESHOLD, K_META_BLOCK, K_SIEVE_BUF, K_COLL_META, K_MDC_FLUSH, K_EVICT, K_TRANSFER,
       K_CHUNK_CACHE, K_FILL_TIME, K_NC_FILL, N_KNOBS };
static const char *knob_names[N_KNOBS] = {
    "hdf5.alignment", "hdf5.alignment_threshold", "hdf5.meta_block_size", "hdf5.sieve_buf_size",
    "hdf5.coll_metadata", "hdf5.mdc_flush", "hdf5.evict_on_close", "hdf5.transfer", "hdf5.chunk_cache",
    "hdf5.fill_time", "netcdf.fill"};
/* the calls that give each knob a chance to apply, for "not applied" reasons */
static const char *knob_calls[N_KNOBS] = {
    "H5Fcreate/H5Fopen", "H5Fcreate/H5Fopen", "H5Fcreate/H5Fopen", "H5Fcreate/H5Fopen", "H5Fcreate/H5Fopen",
    "H5Fcreate/H5Fopen", "H5Fcreate/H5Fopen", "H5Dwrite/H5Dread on an MPI-IO file", "H5Dcreate2/H5Dopen2",
    "H5Dcreate2", "nc_create/nc_create_par/ncmpi_create"};

struct knob {
    int set;
    uint64_t value; /* sizes in bytes; on/off 1/0; transfer 1 collective 0 independent; mdc_flush 1 deferred 0 default;
                       fill_time 0 alloc 1 never 2 ifset; netcdf.fill 0 off 1 on */
    long applied;
    const char *where;
    char why[240]; /* the first reason it could not be applied */
};
static struct knob knobs[N_KNOBS];
#define MAX_HINTS 64
static struct { char key[128], value[256]; long applied; char why[240]; } hints[MAX_HINTS];
static int n_hints, configured, seen_file_call, seen_xfer_call, seen_dset_call, seen_nc_call;

static void note_failure(char *why, size_t size, const char *fmt, const char *a, const char *b) {
    if (!why[0]) snprintf(why, size, fmt, a, b);
}
#define FAIL(k, fmt, a, b) note_failure(knobs[k].why, sizeof knobs[k].why, fmt, a, b)

static void configure(void) {
    const char *text = getenv("IOLENS_KNOBS");
    if (!text || !*text) return;
    configured = 1;
    char line[512];
    while (*text) {
        size_t n = strcspn(text, "\n");
        if (n < sizeof line) {
            memcpy(line, text, n);
            line[n] = 0;
            char *eq = strchr(line, '=');
            if (eq) {
                *eq = 0;
                const char *value = eq + 1;
                if (!strncmp(line, "romio.", 6) && n_hints < MAX_HINTS) {
                    snprintf(hints[n_hints].key, sizeof hints[0].key, "%.127s", line + 6);
                    snprintf(hints[n_hints].value, sizeof hints[0].value, "%.255s", value);
                    n_hints++;
                }
                for (int k = 0; k < N_KNOBS; k++)
                    if (!strcmp(line, knob_names[k])) {
                        knobs[k].set = 1;
                        knobs[k].value = strtoull(value, NULL, 10);
                    }
            }
        }
        text += n;
        if (*text) text++;
    }
}

/* --- HDF5, resolved at run time ----------------------------------------------------------------- */
typedef herr_t (*auto_fn)(hid_t, void *);
static struct {
    int ready, usable; /* usable: HDF5 >= 1.10 */
    unsigned major, minor, release;
    hid_t fapl_cls, dapl_cls, dxpl_cls, dcpl_cls;
} h5;

static void *h5sym(const char *name) { return dlsym(RTLD_DEFAULT, name); }
/* call a library function by name; each call site keeps what it found (a miss is looked up again: the
   library may be loaded later, e.g. by dlopen) */
#define CALL(type, name, ...)                                                  \
    __extension__({                                                            \
        static void *found_;                                                   \
        if (!found_) found_ = h5sym(name);                                     \
        found_ ? ((type)found_)(__VA_ARGS__) : -1;                             \
    })

typedef herr_t (*get_auto_t)(hid_t, auto_fn *, void **);
typedef herr_t (*set_auto_t)(hid_t, auto_fn, void *);
static auto_fn saved_fn;
static void *saved_data;
static int quiet_depth;
/* HDF5 prints its error stack on a failed call: our probing must stay silent */
static void quiet(int on) {
    get_auto_t get = (get_auto_t)h5sym("H5Eget_auto2");
    set_auto_t set = (set_auto_t)h5sym("H5Eset_auto2");
    if (!get || !set) return;
    if (on && quiet_depth++ == 0) {
        get(0, &saved_fn, &saved_data);
        set(0, NULL, NULL);
    } else if (!on && --quiet_depth == 0) {
        set(0, saved_fn, saved_data);
    }
}

static hid_t class_id(const char *global) {
    hid_t *id = (hid_t *)h5sym(global);
    return id ? *id : -1;
}

static int h5_init(void) {
    if (h5.ready) return h5.usable;
    h5.ready = 1;
    CALL(herr_t (*)(void), "H5open");
    CALL(herr_t (*)(unsigned *, unsigned *, unsigned *), "H5get_libversion", &h5.major, &h5.minor, &h5.release);
    h5.usable = h5.major > 1 || (h5.major == 1 && h5.minor >= 10);
    h5.fapl_cls = class_id("H5P_CLS_FILE_ACCESS_ID_g");
    h5.dapl_cls = class_id("H5P_CLS_DATASET_ACCESS_ID_g");
    h5.dxpl_cls = class_id("H5P_CLS_DATASET_XFER_ID_g");
    h5.dcpl_cls = class_id("H5P_CLS_DATASET_CREATE_ID_g");
    if (!h5.usable)
        for (int k = 0; k < K_NC_FILL; k++)
            FAIL(k, "the program loads HDF5 %s, and iolens' knob layer needs HDF5 1.10 or newer%s", "1.8 or older", "");
    return h5.usable;
}

static char h5_version[32];
static const char *h5_ver(void) {
    snprintf(h5_version, sizeof h5_version, "%u.%u.%u", h5.major, h5.minor, h5.release);
    return h5_version;
}

/* a copy of the application's list (never the list itself), or a new one of the class for H5P_DEFAULT */
static hid_t copy_list(hid_t plist, hid_t cls) {
    return plist == 0 ? CALL(hid_t (*)(hid_t), "H5Pcreate", cls) : CALL(hid_t (*)(hid_t), "H5Pcopy", plist);
}
static void close_list(hid_t plist) { CALL(herr_t (*)(hid_t), "H5Pclose", plist); }

/* set one property through `fn`: 1 if it took, else the reason is kept */
static int set_result(int k, const char *fn, herr_t rc) {
    if (rc >= 0) return 1;
    if (!h5sym(fn))
        FAIL(k, "this HDF5 (%s) has no %s (a serial build, or too old)", h5_ver(), fn);
    else
        FAIL(k, "HDF5 %s refused it (%s failed)", h5_ver(), fn);
    return 0;
}

/* version 1 of H5AC_cache_config_t, the same in HDF5 1.10-1.14 (hbool_t is C99 bool) */
typedef struct {
    int version;
    uint8_t rpt_fcn_enabled, open_trace_file, close_trace_file;
    char trace_file_name[1025];
    uint8_t evictions_enabled, set_initial_size;
    size_t initial_size;
    double min_clean_fraction;
    size_t max_size, min_size;
    long epoch_length;
    int incr_mode;
    double lower_hr_threshold, increment;
    uint8_t apply_max_increment;
    size_t max_increment;
    int flash_incr_mode;
    double flash_multiple, flash_threshold;
    int decr_mode;
    double upper_hr_threshold, decrement;
    uint8_t apply_max_decrement;
    size_t max_decrement;
    int epochs_before_eviction;
    uint8_t apply_empty_reserve;
    double empty_reserve;
    size_t dirty_bytes_threshold;
    int metadata_write_strategy;
} mdc_config;
typedef herr_t (*mdc_fn)(hid_t, mdc_config *);

static herr_t set_mdc(hid_t fapl, int deferred) {
    mdc_config c;
    memset(&c, 0, sizeof c);
    c.version = 1;
    hid_t source = deferred ? fapl : copy_list(0, h5.fapl_cls); /* default: HDF5's own settings */
    herr_t rc = CALL(mdc_fn, "H5Pget_mdc_config", source, &c);
    if (!deferred) close_list(source);
    if (rc < 0) return rc;
    if (deferred) { /* no evictions, hence no metadata writes until the file is flushed or closed */
        c.evictions_enabled = 0;
        c.incr_mode = c.flash_incr_mode = c.decr_mode = 0; /* HDF5 requires automatic resizing off then */
    }
    return CALL(mdc_fn, "H5Pset_mdc_config", fapl, &c);
}

static int is_mpio(hid_t fapl) {
    hid_t drv = CALL(hid_t (*)(hid_t), "H5Pget_driver", fapl);
    hid_t mpio = CALL(hid_t (*)(void), "H5FD_mpio_init");
    return drv >= 0 && mpio >= 0 && drv == mpio;
}

static mpi_handle info_null(void) {
    void *ompi = dlsym(RTLD_DEFAULT, "ompi_mpi_info_null");
    return ompi ? (mpi_handle)(intptr_t)ompi : (mpi_handle)0x1c000000; /* Open MPI's object, or MPICH's constant */
}

/* ROMIO hints into the file's MPI_Info: they reach HDF5 files where ROMIO_HINTS is not read */
static void add_hints(hid_t fapl, const char *call) {
    if (!n_hints || !is_mpio(fapl)) return;
    mpi_handle comm = 0, info = 0;
    if (CALL(herr_t (*)(hid_t, mpi_handle *, mpi_handle *), "H5Pget_fapl_mpio", fapl, &comm, &info) < 0) return;
    int (*info_create)(mpi_handle *) = (int (*)(mpi_handle *))h5sym("MPI_Info_create");
    int (*info_set)(mpi_handle, const char *, const char *) = (int (*)(mpi_handle, const char *, const char *))h5sym("MPI_Info_set");
    int (*info_free)(mpi_handle *) = (int (*)(mpi_handle *))h5sym("MPI_Info_free");
    int (*comm_free)(mpi_handle *) = (int (*)(mpi_handle *))h5sym("MPI_Comm_free");
    if (info_create && info_set && info_free && comm_free) {
        if (info == info_null()) info_create(&info);
        for (int i = 0; i < n_hints; i++) info_set(info, hints[i].key, hints[i].value);
        if (CALL(herr_t (*)(hid_t, mpi_handle, mpi_handle), "H5Pset_fapl_mpio", fapl, comm, info) >= 0)
            for (int i = 0; i < n_hints; i++) hints[i].applied++;
        info_free(&info);
    }
    if (comm_free) comm_free(&comm);
    (void)call;
}

static int any_set(int from, int to) {
    for (int k = from; k <= to; k++)
        if (knobs[k].set) return 1;
    return 0;
}

static int fapl_ok[N_KNOBS];
static hid_t tuned_fapl(hid_t fapl) {
    memset(fapl_ok, 0, sizeof fapl_ok);
    if (!configured || !(any_set(K_ALIGN, K_EVICT) || n_hints) || !h5_init()) return -1;
    quiet(1);
    hid_t t = copy_list(fapl, h5.fapl_cls);
    if (t < 0) {
        quiet(0);
        return -1;
    }
    if (knobs[K_ALIGN].set) {
        hsize_t threshold = knobs[K_ALIGN_THRESHOLD].set ? knobs[K_ALIGN_THRESHOLD].value : 1;
        fapl_ok[K_ALIGN] = fapl_ok[K_ALIGN_THRESHOLD] = set_result(K_ALIGN, "H5Pset_alignment",
            CALL(herr_t (*)(hid_t, hsize_t, hsize_t), "H5Pset_alignment", t, threshold, knobs[K_ALIGN].value));
    }
    if (knobs[K_META_BLOCK].set)
        fapl_ok[K_META_BLOCK] = set_result(K_META_BLOCK, "H5Pset_meta_block_size",
            CALL(herr_t (*)(hid_t, hsize_t), "H5Pset_meta_block_size", t, knobs[K_META_BLOCK].value));
    if (knobs[K_SIEVE_BUF].set)
        fapl_ok[K_SIEVE_BUF] = set_result(K_SIEVE_BUF, "H5Pset_sieve_buf_size",
            CALL(herr_t (*)(hid_t, size_t), "H5Pset_sieve_buf_size", t, (size_t)knobs[K_SIEVE_BUF].value));
    if (knobs[K_COLL_META].set) {
        unsigned on = knobs[K_COLL_META].value != 0;
        fapl_ok[K_COLL_META] = set_result(K_COLL_META, "H5Pset_all_coll_metadata_ops",
                CALL(herr_t (*)(hid_t, unsigned), "H5Pset_all_coll_metadata_ops", t, on)) &&
            set_result(K_COLL_META, "H5Pset_coll_metadata_write",
                CALL(herr_t (*)(hid_t, unsigned), "H5Pset_coll_metadata_write", t, on));
    }
    if (knobs[K_MDC_FLUSH].set)
        fapl_ok[K_MDC_FLUSH] = set_result(K_MDC_FLUSH, "H5Pset_mdc_config", set_mdc(t, knobs[K_MDC_FLUSH].value != 0));
    if (knobs[K_EVICT].set)
        fapl_ok[K_EVICT] = set_result(K_EVICT, "H5Pset_evict_on_close",
            CALL(herr_t (*)(hid_t, unsigned), "H5Pset_evict_on_close", t, (unsigned)(knobs[K_EVICT].value != 0)));
    add_hints(t, "");
    quiet(0);
    return t;
}

static void count_applied(const int *ok, int from, int to, const char *call) {
    for (int k = from; k <= to; k++)
        if (ok[k]) {
            knobs[k].applied++;
            if (!knobs[k].where) knobs[k].where = call;
        }
}

/* files opened through the MPI-IO driver: only their transfers may be made collective */
#define MAX_FILES 1024
static hid_t mpio_files[MAX_FILES];
static int n_mpio_files;
static void remember_file(hid_t file, hid_t fapl) {
    if (file < 0 || !configured || !knobs[K_TRANSFER].set || !h5_init()) return;
    quiet(1);
    int mpio = is_mpio(fapl);
    quiet(0);
    if (mpio && n_mpio_files < MAX_FILES) mpio_files[n_mpio_files++] = file;
}
static int on_mpio_file(hid_t obj) {
    quiet(1);
    hid_t file = CALL(hid_t (*)(hid_t), "H5Iget_file_id", obj);
    int found = 0;
    for (int i = 0; i < n_mpio_files && file >= 0; i++) found |= mpio_files[i] == file;
    if (file >= 0) CALL(int (*)(hid_t), "H5Idec_ref", file);
    quiet(0);
    return found;
}

static hid_t open_file(const char *call, hid_t fapl, hid_t (*next)(void *, hid_t), void *args) {
    seen_file_call = 1;
    hid_t t = tuned_fapl(fapl);
    hid_t file = next(args, t >= 0 ? t : fapl);
    if (file >= 0 && t >= 0) count_applied(fapl_ok, K_ALIGN, K_EVICT, call);
    remember_file(file, t >= 0 ? t : fapl);
    if (t >= 0) close_list(t);
    return file;
}

struct fcreate_args { const char *name; unsigned flags; hid_t fcpl; };
static hid_t do_fcreate(void *a, hid_t fapl) {
    struct fcreate_args *x = a;
    static hid_t (*next)(const char *, unsigned, hid_t, hid_t);
    if (!next) next = (hid_t (*)(const char *, unsigned, hid_t, hid_t))dlsym(RTLD_NEXT, "H5Fcreate");
    return next ? next(x->name, x->flags, x->fcpl, fapl) : -1;
}
hid_t H5Fcreate(const char *name, unsigned flags, hid_t fcpl, hid_t fapl) {
    struct fcreate_args a = {name, flags, fcpl};
    return open_file("H5Fcreate", fapl, do_fcreate, &a);
}

struct fopen_args { const char *name; unsigned flags; };
static hid_t do_fopen(void *a, hid_t fapl) {
    struct fopen_args *x = a;
    static hid_t (*next)(const char *, unsigned, hid_t);
    if (!next) next = (hid_t (*)(const char *, unsigned, hid_t))dlsym(RTLD_NEXT, "H5Fopen");
    return next ? next(x->name, x->flags, fapl) : -1;
}
hid_t H5Fopen(const char *name, unsigned flags, hid_t fapl) {
    struct fopen_args a = {name, flags};
    return open_file("H5Fopen", fapl, do_fopen, &a);
}

/* dataset access (chunk cache, collective metadata reads) and creation (fill time) */
static hid_t tuned_dapl(hid_t dapl, int *ok) {
    if (!configured || !(knobs[K_CHUNK_CACHE].set || knobs[K_COLL_META].set) || !h5_init()) return -1;
    quiet(1);
    hid_t t = copy_list(dapl, h5.dapl_cls);
    if (t >= 0 && knobs[K_CHUNK_CACHE].set)
        ok[K_CHUNK_CACHE] = set_result(K_CHUNK_CACHE, "H5Pset_chunk_cache",
            CALL(herr_t (*)(hid_t, size_t, size_t, double), "H5Pset_chunk_cache", t, (size_t)-1,
                 (size_t)knobs[K_CHUNK_CACHE].value, -1.0));
    if (t >= 0 && knobs[K_COLL_META].set) /* an access list's own setting overrides the file's */
        CALL(herr_t (*)(hid_t, unsigned), "H5Pset_all_coll_metadata_ops", t, (unsigned)(knobs[K_COLL_META].value != 0));
    quiet(0);
    return t;
}
static hid_t tuned_dcpl(hid_t dcpl, int *ok) {
    if (!configured || !knobs[K_FILL_TIME].set || !h5_init()) return -1;
    quiet(1);
    hid_t t = copy_list(dcpl, h5.dcpl_cls);
    if (t >= 0)
        ok[K_FILL_TIME] = set_result(K_FILL_TIME, "H5Pset_fill_time",
            CALL(herr_t (*)(hid_t, int), "H5Pset_fill_time", t, (int)knobs[K_FILL_TIME].value));
    quiet(0);
    return t;
}

hid_t H5Dcreate2(hid_t loc, const char *name, hid_t type, hid_t space, hid_t lcpl, hid_t dcpl, hid_t dapl) {
    hid_t (*next)(hid_t, const char *, hid_t, hid_t, hid_t, hid_t, hid_t) =
        (hid_t (*)(hid_t, const char *, hid_t, hid_t, hid_t, hid_t, hid_t))dlsym(RTLD_NEXT, "H5Dcreate2");
    if (!next) return -1;
    seen_dset_call = 1;
    int ok[N_KNOBS] = {0};
    hid_t c = tuned_dcpl(dcpl, ok), a = tuned_dapl(dapl, ok);
    hid_t dset = next(loc, name, type, space, lcpl, c >= 0 ? c : dcpl, a >= 0 ? a : dapl);
    if (dset >= 0) count_applied(ok, K_CHUNK_CACHE, K_FILL_TIME, "H5Dcreate2");
    if (c >= 0) close_list(c);
    if (a >= 0) close_list(a);
    return dset;
}

hid_t H5Dopen2(hid_t loc, const char *name, hid_t dapl) {
    hid_t (*next)(hid_t, const char *, hid_t) = (hid_t (*)(hid_t, const char *, hid_t))dlsym(RTLD_NEXT, "H5Dopen2");
    if (!next) return -1;
    seen_dset_call = 1;
    int ok[N_KNOBS] = {0};
    hid_t a = tuned_dapl(dapl, ok);
    hid_t dset = next(loc, name, a >= 0 ? a : dapl);
    if (dset >= 0) count_applied(ok, K_CHUNK_CACHE, K_CHUNK_CACHE, "H5Dopen2");
    if (a >= 0) close_list(a);
    return dset;
}

/* raw-data transfers: collective or independent MPI-IO */
static const char *io_mode_props[] = {"actual_io_mode", "actual_chunk_opt_mode", "local_no_collective_cause",
                                      "global_no_collective_cause"};
static hid_t tuned_dxpl(hid_t dxpl, hid_t dset) {
    if (!configured || !knobs[K_TRANSFER].set || !h5_init()) return -1;
    seen_xfer_call = 1;
    if (!on_mpio_file(dset)) return -1; /* HDF5 refuses collective transfers on other drivers */
    quiet(1);
    hid_t t = copy_list(dxpl, h5.dxpl_cls);
    if (t >= 0 && !set_result(K_TRANSFER, "H5Pset_dxpl_mpio",
                              CALL(herr_t (*)(hid_t, int), "H5Pset_dxpl_mpio", t, (int)knobs[K_TRANSFER].value))) {
        close_list(t);
        t = -1;
    }
    quiet(0);
    return t;
}
/* HDF5 records the I/O mode it really used on the list of the call: hand it back to the application's
   own list, so that its H5Pget_mpio_actual_io_mode tells the truth about the transfer just made */
static void finish_xfer(hid_t t, hid_t dxpl, herr_t rc, const char *call) {
    if (t < 0) return;
    if (rc >= 0) count_applied((int[N_KNOBS]){[K_TRANSFER] = 1}, K_TRANSFER, K_TRANSFER, call);
    quiet(1);
    for (size_t i = 0; dxpl != 0 && i < sizeof io_mode_props / sizeof *io_mode_props; i++) {
        uint64_t value[4] = {0};
        if (CALL(int (*)(hid_t, const char *), "H5Pexist", dxpl, io_mode_props[i]) > 0 &&
            CALL(herr_t (*)(hid_t, const char *, void *), "H5Pget", t, io_mode_props[i], value) >= 0)
            CALL(herr_t (*)(hid_t, const char *, const void *), "H5Pset", dxpl, io_mode_props[i], value);
    }
    close_list(t);
    quiet(0);
}

typedef herr_t (*dwrite_t)(hid_t, hid_t, hid_t, hid_t, hid_t, const void *);
herr_t H5Dwrite(hid_t dset, hid_t mtype, hid_t mspace, hid_t fspace, hid_t dxpl, const void *buf) {
    static dwrite_t next;
    if (!next) next = (dwrite_t)dlsym(RTLD_NEXT, "H5Dwrite");
    if (!next) return -1;
    hid_t t = tuned_dxpl(dxpl, dset);
    herr_t rc = next(dset, mtype, mspace, fspace, t >= 0 ? t : dxpl, buf);
    finish_xfer(t, dxpl, rc, "H5Dwrite");
    return rc;
}

typedef herr_t (*dread_t)(hid_t, hid_t, hid_t, hid_t, hid_t, void *);
herr_t H5Dread(hid_t dset, hid_t mtype, hid_t mspace, hid_t fspace, hid_t dxpl, void *buf) {
    static dread_t next;
    if (!next) next = (dread_t)dlsym(RTLD_NEXT, "H5Dread");
    if (!next) return -1;
    hid_t t = tuned_dxpl(dxpl, dset);
    herr_t rc = next(dset, mtype, mspace, fspace, t >= 0 ? t : dxpl, buf);
    finish_xfer(t, dxpl, rc, "H5Dread");
    return rc;
}

/* --- netCDF and PnetCDF: fill mode on created files -------------------------------------------- */
#define NC_NOFILL 0x100
#define NC_FILL 0
static int nc_depth; /* nc_create calls nc__create in some netCDF versions: set the fill mode once, outermost */
static void set_nc_fill(int rc, int *ncidp, const char *setter, const char *call) {
    seen_nc_call = 1;
    if (nc_depth > 0 || !configured || !knobs[K_NC_FILL].set || rc != 0 || !ncidp) return;
    int old = 0, (*fn)(int, int, int *) = (int (*)(int, int, int *))dlsym(RTLD_DEFAULT, setter);
    int mode = knobs[K_NC_FILL].value ? NC_FILL : NC_NOFILL;
    if (fn && fn(*ncidp, mode, &old) == 0)
        count_applied((int[N_KNOBS]){[K_NC_FILL] = 1}, K_NC_FILL, K_NC_FILL, call);
    else
        FAIL(K_NC_FILL, "%s failed after %s", setter, call);
}

int nc_create(const char *path, int cmode, int *ncidp) {
    int (*next)(const char *, int, int *) = (int (*)(const char *, int, int *))dlsym(RTLD_NEXT, "nc_create");
    nc_depth++;
    int rc = next ? next(path, cmode, ncidp) : -1;
    nc_depth--;
    set_nc_fill(rc, ncidp, "nc_set_fill", "nc_create");
    return rc;
}
int nc__create(const char *path, int cmode, size_t initialsz, size_t *chunk, int *ncidp) {
    int (*next)(const char *, int, size_t, size_t *, int *) =
        (int (*)(const char *, int, size_t, size_t *, int *))dlsym(RTLD_NEXT, "nc__create");
    nc_depth++;
    int rc = next ? next(path, cmode, initialsz, chunk, ncidp) : -1;
    nc_depth--;
    set_nc_fill(rc, ncidp, "nc_set_fill", "nc__create");
    return rc;
}
int nc_create_par(const char *path, int cmode, mpi_handle comm, mpi_handle info, int *ncidp) {
    int (*next)(const char *, int, mpi_handle, mpi_handle, int *) =
        (int (*)(const char *, int, mpi_handle, mpi_handle, int *))dlsym(RTLD_NEXT, "nc_create_par");
    nc_depth++;
    int rc = next ? next(path, cmode, comm, info, ncidp) : -1;
    nc_depth--;
    set_nc_fill(rc, ncidp, "nc_set_fill", "nc_create_par");
    return rc;
}
int ncmpi_create(mpi_handle comm, const char *path, int cmode, mpi_handle info, int *ncidp) {
    int (*next)(mpi_handle, const char *, int, mpi_handle, int *) =
        (int (*)(mpi_handle, const char *, int, mpi_handle, int *))dlsym(RTLD_NEXT, "ncmpi_create");
    nc_depth++;
    int rc = next ? next(comm, path, cmode, info, ncidp) : -1;
    nc_depth--;
    set_nc_fill(rc, ncidp, "ncmpi_set_fill", "ncmpi_create");
    return rc;
}

/* --- the report ------------------------------------------------------------------------------- */
static size_t put(char *buf, size_t used, size_t size, const char *a, const char *b, const char *c) {
    if (used >= size) return used;
    int n = snprintf(buf + used, size - used, "%s\t%s\t%s\n", a, b, c);
    return n > 0 ? used + (size_t)n : used;
}

static const char *why_not(int k, int hdf5_loaded, int nc_loaded, char *buf, size_t size) {
    if (knobs[k].why[0]) return knobs[k].why;
    if (k == K_NC_FILL) {
        if (!nc_loaded) return "the program did not load netCDF or PnetCDF (it does not use them, or links them statically)";
    } else if (!hdf5_loaded) {
        return "the program did not load HDF5 (it does not use it, or links it statically, out of a preload's reach)";
    }
    int called = k == K_NC_FILL ? seen_nc_call : k == K_TRANSFER ? seen_xfer_call
                 : (k == K_CHUNK_CACHE || k == K_FILL_TIME) ? seen_dset_call : seen_file_call;
    if (k == K_TRANSFER && seen_xfer_call)
        return "no H5Dwrite/H5Dread on a file opened with the MPI-IO driver (H5Pset_fapl_mpio)";
    snprintf(buf, size, "the program made no %s call%s", knob_calls[k], called ? " that succeeded" : "");
    return buf;
}

__attribute__((destructor)) static void write_report(void) {
    const char *path = getenv("IOLENS_KNOBS_REPORT");
    if (!configured || !path || !*path) return;
    static char buf[16384], text[64], pid[24], exe[512], why[256];
    size_t used = 0;
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = 0;
    snprintf(pid, sizeof pid, "%d", (int)getpid());
    used = put(buf, used, sizeof buf, "process", pid, exe);
    int hdf5_loaded = h5sym("H5open") != NULL;
    int nc_loaded = h5sym("nc_set_fill") != NULL || h5sym("ncmpi_set_fill") != NULL;
    if (hdf5_loaded) {
        unsigned a = 0, b = 0, c = 0;
        CALL(herr_t (*)(unsigned *, unsigned *, unsigned *), "H5get_libversion", &a, &b, &c);
        snprintf(text, sizeof text, "%u.%u.%u", a, b, c);
    }
    used = put(buf, used, sizeof buf, "library", "hdf5", hdf5_loaded ? text : "-");
    used = put(buf, used, sizeof buf, "library", "netcdf", nc_loaded ? "loaded" : "-");
    for (int k = 0; k < N_KNOBS; k++) {
        if (!knobs[k].set) continue;
        if (knobs[k].applied) {
            snprintf(text, sizeof text, "%s x%ld", knobs[k].where, knobs[k].applied);
            used = put(buf, used, sizeof buf, "applied", knob_names[k], text);
        } else {
            used = put(buf, used, sizeof buf, "unapplied", knob_names[k], why_not(k, hdf5_loaded, nc_loaded, why, sizeof why));
        }
    }
    for (int i = 0; i < n_hints; i++) {
        char name[160];
        snprintf(name, sizeof name, "romio.%.127s", hints[i].key);
        snprintf(text, sizeof text, "HDF5 file MPI_Info x%ld", hints[i].applied);
        if (hints[i].applied) used = put(buf, used, sizeof buf, "applied", name, text);
    }
    used = put(buf, used, sizeof buf, "end", pid, "");
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd < 0) return;
    ssize_t w = write(fd, buf, used > sizeof buf ? sizeof buf : used); /* one write: lines of processes stay whole */
    (void)w;
    close(fd);
}

__attribute__((constructor)) static void start(void) { configure(); }
