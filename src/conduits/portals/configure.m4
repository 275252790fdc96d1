# portals conduit: AMs and RDMA over the Portals 4 API (README.md).  Built
# when --with-portals4=DIR names an installed Portals 4 (DIR/include/
# portals4.h, DIR/lib/libportals): a BXI or Sandia system, or the Sandia
# reference implementation tests/portals/with-portals4 builds.  Without it
# the conduit is left out; --enable-portals without it is an error.
AC_ARG_WITH([portals4],
  [AS_HELP_STRING([--with-portals4=DIR], [Portals 4 installed under DIR (the portals conduit)])],
  [], [with_portals4=no])
sluice_have_portals4=no
PORTALS4_CPPFLAGS=
PORTALS4_LIBS=
PORTALS4_LINK=
AS_IF([test "x$with_portals4" != xno && test "x$with_portals4" != xyes], [
  sluice_portals4_save_CPPFLAGS=$CPPFLAGS
  sluice_portals4_save_LIBS=$LIBS
  CPPFLAGS="$CPPFLAGS -I$with_portals4/include"
  LIBS="-L$with_portals4/lib -lportals $LIBS"
  AC_MSG_CHECKING([for Portals 4 in $with_portals4])
  # Linked once here to know it is a Portals 4; libsluice itself opens
  # the library at run time (portals_api.hpp says why) and links only
  # what dlopen needs.
  AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <portals4.h>]],
                                  [[ptl_handle_ni_t ni; (void)ni; return PtlInit();]])],
    [sluice_have_portals4=yes
     PORTALS4_CPPFLAGS="-I$with_portals4/include"
     # For the test programs that call Portals themselves (the bare
     # reference of sluice-bench), with the run-time path.
     PORTALS4_LINK="-L$with_portals4/lib -Wl,-rpath,$with_portals4/lib -lportals"])
  AC_MSG_RESULT([$sluice_have_portals4])
  CPPFLAGS=$sluice_portals4_save_CPPFLAGS
  LIBS=$sluice_portals4_save_LIBS
  AS_IF([test "x$sluice_have_portals4" = xyes], [
    sluice_portals4_library=
    for sluice_portals4_f in libportals.so.4 libportals.so; do
      AS_IF([test -z "$sluice_portals4_library" && test -e "$with_portals4/lib/$sluice_portals4_f"],
            [sluice_portals4_library="$with_portals4/lib/$sluice_portals4_f"])
    done
    AS_IF([test -n "$sluice_portals4_library"],
      [AC_DEFINE_UNQUOTED([SLUICE_PORTALS4_LIBRARY], ["$sluice_portals4_library"],
                          [The Portals 4 library the portals conduit opens when SLUICE_PORTALS_LIBRARY is not set])])
    sluice_portals4_save_LIBS=$LIBS
    AC_SEARCH_LIBS([dlopen], [dl], [], [AC_MSG_ERROR([the portals conduit needs dlopen])])
    AS_IF([test "$ac_cv_search_dlopen" != "none required"], [PORTALS4_LIBS=$ac_cv_search_dlopen])
    LIBS=$sluice_portals4_save_LIBS
  ])
], [test "x$with_portals4" = xyes], [
  AC_MSG_ERROR([--with-portals4 needs the folder Portals 4 is installed in (--with-portals4=DIR)])
])
AC_SUBST([PORTALS4_CPPFLAGS])
AC_SUBST([PORTALS4_LIBS])
AC_SUBST([PORTALS4_LINK])
AS_IF([test "x$sluice_have_portals4" = xno && test "x${enable_portals+set}" != xset], [enable_portals=no])
SLUICE_CONDUIT([portals], [yes])
AS_IF([test "x$enable_portals" != xno && test "x$sluice_have_portals4" = xno],
  [AC_MSG_ERROR([the portals conduit needs Portals 4: --with-portals4=DIR (tests/portals/with-portals4 --prefix builds the reference implementation); or use --disable-portals])])
AS_IF([test "x$enable_portals" = xyes], [SLUICE_CONDUIT_LIBS="$SLUICE_CONDUIT_LIBS $PORTALS4_LIBS"])
