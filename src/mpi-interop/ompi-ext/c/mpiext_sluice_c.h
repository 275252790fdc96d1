/* mpiext_sluice_c.h - the C API of Open MPI's "sluice" extension, included
 * by <mpi-ext.h> (include <mpi.h> first) when Open MPI was configured with
 * --enable-mpi-ext=sluice; <mpi-ext.h> then defines OMPI_HAVE_MPI_EXT_SLUICE.
 * Source: src/mpi-interop/ompi-ext/ in Sluice; see its README.md.
 *
 * It brings in Sluice's MPIX_ API (<mpix_sluice.h>, which includes
 * <sluice.h>) when that header is on the include path: MPIX_SLUICE_H is then
 * defined.  Link with -lsluice-mpi -lsluice to call it. */

/* What MPI_Init did, as bits: */
#define MPIX_SLUICE_EXT_STARTED 1  /* it started Sluice over MPI_COMM_WORLD */
#define MPIX_SLUICE_EXT_PROGRESS 2 /* Sluice's poll runs inside MPI's progress */
/* Those bits (0 before MPI_Init or when the extension did nothing).  Local. */
OMPI_DECLSPEC int MPIX_Query_sluice_support(void);

#if defined(__has_include)
#if __has_include(<mpix_sluice.h>)
#include <mpix_sluice.h>
#endif
#elif !defined(MPIX_SLUICE_EXT_NO_API)
#include <mpix_sluice.h>
#endif
