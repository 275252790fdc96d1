# -*- shell-script -*-
# src/mpi-interop/ompi-ext/configure.m4 - ompi/mpiext/sluice/configure.m4 in
# an Open MPI 4.1 source tree: configure part of the "sluice" MPI extension
# (see README.md).  Open MPI's autogen.pl finds it; its configure expands
# OMPI_MPIEXT_sluice_CONFIG([action if built], [action if not]).

# The extension has init and fini hooks: Open MPI lists its component
# structure (ompi_mpiext_sluice) in ompi/mpiext/static-components.h.
m4_define([OMPI_MPIEXT_sluice_NEED_INIT], [1])

# Open MPI expands this macro inside m4_foreach(extension, ...), so the word
# "extension" in its text would become "sluice": messages say "mpiext".

AC_DEFUN([OMPI_MPIEXT_sluice_CONFIG], [
    AC_CONFIG_FILES([ompi/mpiext/sluice/Makefile])
    AC_CONFIG_FILES([ompi/mpiext/sluice/c/Makefile])

    AC_ARG_WITH([sluice],
        [AS_HELP_STRING([--with-sluice=DIR],
            [sluice mpiext: Sluice installed under DIR (DIR/include, DIR/lib).  The mpicc wrappers then
             find <mpix_sluice.h> and libsluice-mpi, and MPI_Init looks for libsluice-mpi in DIR/lib after
             beside the program's libsluice.  Without it, both come from the usual search paths])])
    AC_ARG_WITH([sluice-libdir],
        [AS_HELP_STRING([--with-sluice-libdir=DIR],
            [sluice mpiext: Sluice's libraries are in DIR (default: the lib directory of --with-sluice)])])

    mpiext_sluice_happy=yes
    # Built only when asked for by name: it changes what MPI_Init does.
    AS_IF([test "$ENABLE_sluice" != "1"], [mpiext_sluice_happy=no])
    AS_IF([test "$with_sluice" = "no"], [mpiext_sluice_happy=no])

    MPIEXT_SLUICE_CPPFLAGS=
    MPIEXT_SLUICE_LIBS=
    AS_IF([test "$mpiext_sluice_happy" = "yes"], [
        # Sluice starts from the hook framework's last MPI_Init callback,
        # registered at run time (Open MPI 3.1 and later).
        AC_MSG_CHECKING([whether Open MPI lets an MPI ext register MPI_Init hooks])
        AS_IF([grep ompi_hook_base_register_callbacks "$srcdir/ompi/mca/hook/base/base.h" >/dev/null 2>&1],
              [AC_MSG_RESULT([yes])],
              [AC_MSG_RESULT([no])
               AC_MSG_ERROR([mpiext sluice needs ompi_hook_base_register_callbacks (Open MPI 3.1 or later)])])

        # Sluice's poll inside opal_progress: without it, Sluice still
        # starts and stops with MPI.
        AC_MSG_CHECKING([whether Open MPI has progress callbacks (opal_progress_register_lp)])
        AS_IF([grep opal_progress_register_lp "$srcdir/opal/runtime/opal_progress.h" >/dev/null 2>&1],
              [AC_MSG_RESULT([yes])
               MPIEXT_SLUICE_CPPFLAGS="-DMPIEXT_SLUICE_HAVE_PROGRESS=1"],
              [AC_MSG_RESULT([no; Sluice's poll will not run inside MPI calls])
               MPIEXT_SLUICE_CPPFLAGS="-DMPIEXT_SLUICE_HAVE_PROGRESS=0"])

        # dlopen: in libc from glibc 2.34, in libdl before.
        mpiext_sluice_save_LIBS=$LIBS
        AC_SEARCH_LIBS([dlopen], [dl], [],
                       [AC_MSG_ERROR([mpiext sluice needs dlopen])])
        LIBS=$mpiext_sluice_save_LIBS
        AS_IF([test "$ac_cv_search_dlopen" != "none required"],
              [MPIEXT_SLUICE_LIBS=$ac_cv_search_dlopen])

        mpiext_sluice_libdir=
        AS_IF([test -n "$with_sluice" && test "$with_sluice" != "yes"], [
            AC_MSG_CHECKING([for mpix_sluice.h in $with_sluice/include])
            AS_IF([test -r "$with_sluice/include/mpix_sluice.h"], [AC_MSG_RESULT([yes])],
                  [AC_MSG_RESULT([no])
                   AC_MSG_ERROR([--with-sluice=$with_sluice: no include/mpix_sluice.h there])])
            mpiext_sluice_libdir=$with_sluice/lib
            # For mpicc and friends: Sluice's headers and libraries.  The
            # program still names -lsluice-mpi -lsluice: every MPI program
            # linked with them would start Sluice at MPI_Init.
            mpiext_sluice_WRAPPER_EXTRA_CPPFLAGS="-I$with_sluice/include"
        ])
        AS_IF([test -n "$with_sluice_libdir" && test "$with_sluice_libdir" != "yes" &&
               test "$with_sluice_libdir" != "no"],
              [mpiext_sluice_libdir=$with_sluice_libdir])
        AS_IF([test -n "$mpiext_sluice_libdir"], [
            MPIEXT_SLUICE_CPPFLAGS="$MPIEXT_SLUICE_CPPFLAGS -DMPIEXT_SLUICE_LIBDIR=\\\"$mpiext_sluice_libdir\\\""
            # Open MPI adds the matching rpath unless --disable-wrapper-rpath.
            mpiext_sluice_WRAPPER_EXTRA_LDFLAGS="-L$mpiext_sluice_libdir"
        ])
        AC_MSG_CHECKING([where MPI_Init of mpiext sluice looks for libsluice-mpi])
        AC_MSG_RESULT([beside libsluice${mpiext_sluice_libdir:+, then $mpiext_sluice_libdir}, then ld.so's search])
    ])
    AC_SUBST([MPIEXT_SLUICE_CPPFLAGS])
    AC_SUBST([MPIEXT_SLUICE_LIBS])

    AS_IF([test "$mpiext_sluice_happy" = "yes"], [$1], [$2])
])
