/* mpix_sluice.h - Sluice as an MPI extension (libsluice-mpi).
 *
 * Link with -lsluice-mpi -lsluice and your MPI.  Linked in, libsluice-mpi lets
 * sluice_init bootstrap over MPI when the program runs under mpirun (or MPI is
 * already initialized): Sluice calls MPI_Init_thread only if nobody has,
 * works on a private duplicate of the communicator, quiesces when the
 * application calls MPI_Finalize first, and calls MPI_Finalize only if it
 * initialized MPI.  MPI is used for start-up, finalize and exit only; every
 * AM and RMA goes over Sluice's conduits.  See docs/mpi-hybrid.md.
 *
 * Some linkers drop a library no symbol of the program refers to
 * (--as-needed, the Debian default): a program that calls no MPIX_ function
 * should link with -Wl,--no-as-needed -lsluice-mpi -Wl,--as-needed, or call
 * MPIX_Sluice_init. */
#ifndef MPIX_SLUICE_H
#define MPIX_SLUICE_H

#include <mpi.h>
#include <sluice.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Initializes Sluice over `comm` (MPI must be initialized): the Sluice job is
 * the ranks of `comm`, Sluice rank = rank in `comm`.  Collective over `comm`;
 * the other arguments are those of sluice_init.  Always bootstraps over MPI,
 * whatever SLUICE_SPAWNER says. */
sluice_status_t MPIX_Sluice_init(MPI_Comm comm, int *argc, char ***argv);

#ifdef __cplusplus
}
#endif

#endif /* MPIX_SLUICE_H */
