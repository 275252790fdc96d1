/* src/mpi-interop/ompi-ext/c/mpiext_sluice.c - the "sluice" MPI extension of
 * Open MPI 4.1 (ompi/mpiext/sluice/c/ once copied into an Open MPI tree; see
 * ../README.md).  Built into libmpi with --enable-mpi-ext=sluice.
 *
 * What it does:
 * - MPI_Init starts Sluice over MPI_COMM_WORLD (MPIX_Sluice_init) when the
 *   program uses Sluice, so the program never calls sluice_init.
 * - MPI_Finalize finalizes Sluice: the mpi bootstrap of libsluice-mpi already
 *   puts an attribute on MPI_COMM_SELF that runs sluice_finalize at the start
 *   of MPI_Finalize, while MPI still works; the extension only gets out of
 *   its way first.
 * - Sluice's poll runs inside Open MPI's progress loop, so a rank waiting in
 *   an MPI call still runs Sluice handlers.
 *
 * Where this sits in Open MPI 4.1:
 * - ompi_mpiext_init runs near the end of MPI_Init.  MPI communication works
 *   there, but MPI_Initialized still says 0, and Sluice's bootstrap would then
 *   call MPI_Init_thread again (an error).  So the init hook only reads the
 *   MCA variables and registers a callback with the hook framework.
 * - The hook framework's mpi_init_bottom callback runs as the very last step
 *   of MPI_Init, after MPI_Initialized says 1: Sluice starts there.
 * - ompi_mpiext_fini runs in MPI_Finalize after the finalize_top callbacks
 *   and just before MPI_COMM_SELF's attributes are deleted: the progress
 *   callback goes away there, then Sluice's attribute finalizes Sluice.
 *
 * libmpi does not link Sluice.  libsluice-mpi links libmpi, so linking it
 * into libmpi would make a cycle between the two libraries and make every
 * MPI program load Sluice.  The extension finds Sluice at run time instead:
 * the program's own libsluice when it links Sluice, and libsluice-mpi by
 * dlopen (see open_sluice_mpi).
 *
 * Everything is plain C and uses Sluice only through its public C API,
 * looked up by name.  The one exception is the handler check of the progress
 * callback (see in_sluice_handler). */

#include "ompi_config.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef HAVE_EXECINFO_H
#include <execinfo.h>
#endif

#include "mpi.h"
#include "ompi/constants.h"
#include "ompi/mpiext/mpiext.h"
#include "ompi/mca/hook/hook.h"
#include "ompi/mca/hook/base/base.h"
#include "opal/mca/base/mca_base_var.h"
#include "opal/runtime/opal_progress.h"

/* configure.m4 sets these from what this Open MPI offers. */
#ifndef MPIEXT_SLUICE_HAVE_PROGRESS
#define MPIEXT_SLUICE_HAVE_PROGRESS 0
#endif

/* The same values as mpiext_sluice_c.h (installed, not included here: it
 * needs Sluice's headers, which building Open MPI does not). */
#define EXT_STARTED 1
#define EXT_PROGRESS 2
OMPI_DECLSPEC int MPIX_Query_sluice_support(void);

/* ---- the Sluice calls the extension makes -------------------------------- */

/* Their C signatures are those of sluice.h and mpix_sluice.h: sluice_status_t
 * is int, 0 is SLUICE_OK. */
typedef int (*init_over_fn)(MPI_Comm, int *, char ***);
typedef int (*int_fn)(void);
typedef const char *(*string_fn)(void);

static struct {
    void *core;            /* libsluice */
    init_over_fn init_over; /* MPIX_Sluice_init, from libsluice-mpi */
    int_fn initialized;    /* sluice_initialized */
    int_fn poll;           /* sluice_poll */
    string_fn last_error;  /* sluice_last_error */
    int_fn in_handler;     /* sluice_in_handler */
} api;

static const char core_soname[] = "libsluice.so.0";
/* The Open MPI build of libsluice-mpi first: a Sluice configured for several
 * MPIs names the others' libsluice-mpi-FLAVOR and may have built the
 * unsuffixed one for another MPI. */
static const char *const mpi_sonames[] = {"libsluice-mpi-openmpi.so.0", "libsluice-mpi.so.0"};
#define MPI_SONAMES (sizeof mpi_sonames / sizeof mpi_sonames[0])
/* ---- MCA variables (OMPI_MCA_mpiext_sluice_*, mpirun --mca ...) -------- */

enum start_mode { START_AUTO, START_ALWAYS, START_NEVER };
static char *start_var;
static int progress_var = 1;
static char *library_var;
static bool verbose_var;
static enum start_mode start_mode = START_AUTO;

/* ---- state ----------------------------------------------------------------- */

static int status_bits;        /* MPIX_Query_sluice_support */
static int world_rank = -1;
static bool hooks_registered;

static void say(const char *format, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *format, ...) {
    char line[1024];
    va_list ap;
    va_start(ap, format);
    vsnprintf(line, sizeof line, format, ap);
    va_end(ap);
    if (world_rank >= 0)
        fprintf(stderr, "sluice mpiext[rank %d]: %s\n", world_rank, line);
    else
        fprintf(stderr, "sluice mpiext: %s\n", line);
}

#define VERBOSE(...)                       \
    do {                                   \
        if (verbose_var) say(__VA_ARGS__); \
    } while (0)

/* ---- the progress callback --------------------------------------------------- */
#if MPIEXT_SLUICE_HAVE_PROGRESS

static bool progress_registered;
static int progress_on;                  /* between Sluice's start and MPI_Finalize */
static int poller_busy;                  /* one thread in Sluice's poll for MPI at a time */
static __thread int in_progress;         /* this thread polls Sluice for MPI right now */

/* Called by opal_progress, i.e. by every MPI call that waits or tests, on
 * whichever thread makes it.  Cheap when there is nothing to do, never
 * re-entered on one thread (a handler run by this poll may call MPI), one
 * thread at a time (the others skip), silent outside Sluice's lifetime and
 * inside handlers. */
static int progress_callback(void) {
    if (!__atomic_load_n(&progress_on, __ATOMIC_ACQUIRE) || in_progress) return 0;
    /* sluice_poll may not run inside a handler (a handler calling MPI reaches
     * here): it would fail with SLUICE_ERR_CONTEXT. */
    if (!api.initialized() || api.in_handler()) return 0;
    if (__atomic_exchange_n(&poller_busy, 1, __ATOMIC_ACQUIRE)) return 0;
    in_progress = 1;
    (void)api.poll();
    in_progress = 0;
    __atomic_store_n(&poller_busy, 0, __ATOMIC_RELEASE);
    return 0;
}
#endif

static void progress_start(void) {
#if MPIEXT_SLUICE_HAVE_PROGRESS
    if (progress_var <= 0 || progress_registered) return;
    __atomic_store_n(&progress_on, 1, __ATOMIC_RELEASE); /* after api.* are set */
    int rc = progress_var == 1 ? opal_progress_register_lp(progress_callback)
                               : opal_progress_register(progress_callback);
    if (OPAL_SUCCESS != rc) {
        __atomic_store_n(&progress_on, 0, __ATOMIC_RELEASE);
        say("no progress hook: opal_progress_register failed (%d)", rc);
        return;
    }
    progress_registered = true;
    status_bits |= EXT_PROGRESS;
    VERBOSE("Sluice's poll runs in MPI's progress (%s)",
            progress_var == 1 ? "every 8th opal_progress" : "every opal_progress");
#endif
}

static void progress_stop(void) {
#if MPIEXT_SLUICE_HAVE_PROGRESS
    if (!progress_registered) return;
    __atomic_store_n(&progress_on, 0, __ATOMIC_RELEASE);
    (void)opal_progress_unregister(progress_callback);
    progress_registered = false;
#endif
}

/* ---- finding Sluice ---------------------------------------------------------- */

/* libsluice, when the program (or a library it loaded) uses Sluice. */
static void *sluice_in_process(void) {
    return dlopen(core_soname, RTLD_NOW | RTLD_NOLOAD);
}

/* The calls of libsluice, through `handle` (libsluice or a library that
 * depends on it: dlsym searches its dependencies). */
static bool core_resolve(void *handle) {
    api.core = handle;
    api.initialized = (int_fn)dlsym(handle, "sluice_initialized");
    api.poll = (int_fn)dlsym(handle, "sluice_poll");
    api.last_error = (string_fn)dlsym(handle, "sluice_last_error");
    api.in_handler = (int_fn)dlsym(handle, "sluice_in_handler");
    return api.initialized && api.poll && api.last_error && api.in_handler;
}

static void *try_open(const char *path, char *why, size_t len) {
    void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(why, len, "%s", e ? e : path);
    } else {
        VERBOSE("loaded %s", path);
    }
    return h;
}

/* libsluice-mpi: the mpiext_sluice_library variable if set; else the one the
 * process has already loaded; else the one beside the program's libsluice;
 * else the one in the directory configure was given (--with-sluice); else
 * the dynamic linker's search (LD_LIBRARY_PATH, ld.so.cache). */
static void *open_sluice_mpi(char *why, size_t len) {
    char path[4096];
    void *h;
    size_t i;
    snprintf(why, len, "no libsluice-mpi found");
    if (library_var && *library_var) return try_open(library_var, why, len);
    for (i = 0; i < MPI_SONAMES; ++i)
        if ((h = dlopen(mpi_sonames[i], RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD))) return h;
    void *core = sluice_in_process();
    if (core) {
        Dl_info info;
        void *sym = dlsym(core, "sluice_init");
        if (sym && dladdr(sym, &info) && info.dli_fname && strrchr(info.dli_fname, '/')) {
            int dir = (int)(strrchr(info.dli_fname, '/') - info.dli_fname);
            for (i = 0; i < MPI_SONAMES; ++i) {
                snprintf(path, sizeof path, "%.*s/%s", dir, info.dli_fname, mpi_sonames[i]);
                if (access(path, R_OK) == 0 && (h = try_open(path, why, len))) return h;
            }
        }
        dlclose(core);
    }
#ifdef MPIEXT_SLUICE_LIBDIR
    for (i = 0; i < MPI_SONAMES; ++i) {
        snprintf(path, sizeof path, "%s/%s", MPIEXT_SLUICE_LIBDIR, mpi_sonames[i]);
        if (access(path, R_OK) == 0 && (h = try_open(path, why, len))) return h;
    }
#endif
    for (i = 0; i < MPI_SONAMES; ++i)
        if ((h = try_open(mpi_sonames[i], why, len))) return h;
    return NULL;
}

/* Whether MPI_Init was called by Sluice itself: sluice_init under mpirun
 * initializes MPI when the program has not (docs/mpi-hybrid.md).  Sluice then
 * starts over MPI on its own, and starting it here as well would nest two
 * sluice_init.  The frames of libsluice or libsluice-mpi are then on this
 * thread's stack. */
static bool called_from_sluice(void *core) {
#ifdef HAVE_EXECINFO_H
    void *bases[1 + MPI_SONAMES];
    int nbases = 0, n, i, j;
    Dl_info info;
    void *sym = dlsym(core, "sluice_init");
    if (sym && dladdr(sym, &info)) bases[nbases++] = info.dli_fbase;
    for (i = 0; i < (int)MPI_SONAMES; ++i) {
        void *h = dlopen(mpi_sonames[i], RTLD_NOW | RTLD_NOLOAD);
        if (!h) continue;
        sym = dlsym(h, "MPIX_Sluice_init");
        if (sym && dladdr(sym, &info)) bases[nbases++] = info.dli_fbase;
        dlclose(h);
    }
    void *frames[128];
    n = backtrace(frames, 128);
    for (i = 0; i < n; ++i) {
        if (!dladdr(frames[i], &info)) continue;
        for (j = 0; j < nbases; ++j)
            if (info.dli_fbase == bases[j]) return true;
    }
    return false;
#else
    (void)core;
    return false;
#endif
}

/* ---- MPI_Init and MPI_Finalize ----------------------------------------------- */

static void start_failed(const char *what, const char *fix) __attribute__((noreturn));
static void start_failed(const char *what, const char *fix) {
    say("Sluice did not start at MPI_Init: %s; fix: %s", what, fix);
    PMPI_Abort(MPI_COMM_WORLD, 1);
    abort();
}

/* The last step of MPI_Init (MPI_Initialized says 1). */
static void on_mpi_init_bottom(int argc, char **argv, int requested, int *provided) {
    (void)requested;
    (void)provided;
    char why[1024];
    PMPI_Comm_rank(MPI_COMM_WORLD, &world_rank);

    void *core = sluice_in_process();
    const bool nested = core && called_from_sluice(core);
    const bool start = !nested && (start_mode == START_ALWAYS || (start_mode == START_AUTO && core));
    const bool progress = MPIEXT_SLUICE_HAVE_PROGRESS && progress_var > 0 && (start || core);
    if (nested) VERBOSE("MPI_Init called by sluice_init: Sluice starts itself");
    if (!start && !progress) {
        VERBOSE("nothing to do (%s)", core ? "Sluice is not started here and mpiext_sluice_progress is 0"
                                           : "the program does not use Sluice");
        if (core) dlclose(core);
        return;
    }
    if (start) {
        void *h = open_sluice_mpi(why, sizeof why);
        if (!h)
            start_failed(why,
                         "install libsluice-mpi beside libsluice, or set OMPI_MCA_mpiext_sluice_library to its path");
        api.init_over = (init_over_fn)dlsym(h, "MPIX_Sluice_init");
        if (!api.init_over || !core_resolve(h))
            start_failed("the libsluice-mpi found lacks MPIX_Sluice_init or one of sluice_initialized, sluice_poll, "
                         "sluice_last_error, sluice_in_handler (an older Sluice)",
                         "point OMPI_MCA_mpiext_sluice_library at a libsluice-mpi built for this Open MPI");
        int a = argc;
        char **v = argv;
        if (api.init_over(MPI_COMM_WORLD, &a, &v) != 0)
            start_failed(api.last_error(),
                         "see Sluice's message above; to start Sluice yourself set OMPI_MCA_mpiext_sluice_start=never");
        status_bits |= EXT_STARTED;
        VERBOSE("Sluice started over MPI_COMM_WORLD");
    } else if (!core_resolve(core)) {
        say("no progress hook: the libsluice in this process lacks one of sluice_initialized, sluice_poll, "
            "sluice_last_error, sluice_in_handler (an older Sluice); fix: use the Sluice this extension came with");
        return;
    }
    progress_start();
}

static ompi_hook_base_component_t hook_component = {
    .hookm_version =
        {
            OMPI_HOOK_BASE_VERSION_1_0_0,
            .mca_component_name = "mpiext_sluice",
        },
    .hookm_mpi_init_bottom = on_mpi_init_bottom,
};

/* One read-only MCA variable of this extension: OMPI_MCA_mpiext_sluice_<name>. */
static void var_register(const char *name, const char *help, mca_base_var_type_t type, void *storage) {
    (void)mca_base_var_register("ompi", "mpiext", "sluice", name, help, type, NULL, 0, 0, OPAL_INFO_LVL_4,
                                MCA_BASE_VAR_SCOPE_READONLY, storage);
}

static void variables_register(void) {
    start_var = (char *)"auto";
    var_register("start",
                 "Whether MPI_Init starts Sluice over MPI_COMM_WORLD: auto (when the program uses "
                 "Sluice, i.e. libsluice is loaded), always (loading libsluice-mpi if needed), never "
                 "(the program calls sluice_init or MPIX_Sluice_init itself)",
                 MCA_BASE_VAR_TYPE_STRING, &start_var);
    progress_var = 1;
    var_register("progress",
                 "Sluice's poll inside MPI's progress: 0 never, 1 every 8th opal_progress call, 2 every "
                 "call (a rank waiting in MPI runs Sluice handlers)",
                 MCA_BASE_VAR_TYPE_INT, &progress_var);
    library_var = NULL;
    var_register("library",
                 "Path of the libsluice-mpi to load (default: beside the program's libsluice, then the "
                 "configured directory, then the dynamic linker's search)",
                 MCA_BASE_VAR_TYPE_STRING, &library_var);
    verbose_var = false;
    var_register("verbose",
                 "Say on stderr what the sluice extension does at MPI_Init", MCA_BASE_VAR_TYPE_BOOL,
                 &verbose_var);
    if (!start_var || !strcmp(start_var, "auto"))
        start_mode = START_AUTO;
    else if (!strcmp(start_var, "always"))
        start_mode = START_ALWAYS;
    else if (!strcmp(start_var, "never"))
        start_mode = START_NEVER;
    else {
        say("mpiext_sluice_start=%s is not auto, always or never; using auto", start_var);
        start_mode = START_AUTO;
    }
}

/* Near the end of MPI_Init, before MPI_Initialized says 1. */
static int sluice_ext_init(void) {
    variables_register();
    if (OMPI_SUCCESS == ompi_hook_base_register_callbacks(&hook_component)) hooks_registered = true;
    return OMPI_SUCCESS;
}

/* At the start of MPI_Finalize, before MPI_COMM_SELF's attributes are
 * deleted (where Sluice finalizes, collectively).  libsluice-mpi stays
 * loaded: libsluice holds its bootstrap and exit handlers. */
static int sluice_ext_fini(void) {
    progress_stop();
    if (hooks_registered) {
        (void)ompi_hook_base_deregister_callbacks(&hook_component);
        hooks_registered = false;
    }
    return OMPI_SUCCESS;
}

const ompi_mpiext_component_t ompi_mpiext_sluice = {sluice_ext_init, sluice_ext_fini};

int MPIX_Query_sluice_support(void) {
    return status_bits;
}
