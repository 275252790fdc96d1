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

/* The calls below need Sluice running over MPI (the mpi bootstrap:
 * MPIX_Sluice_init, or sluice_init under mpirun); otherwise they return
 * SLUICE_ERR_STATE.  None of them is on Sluice's data path. */

/* Rank translation.  `comm_rank` of `comm` is Sluice rank `*rank`;
 * SLUICE_ERR_RANK if that process is not in the Sluice job (or the rank is
 * out of range).  Local, not collective. */
sluice_status_t MPIX_Sluice_rank_from_comm(MPI_Comm comm, int comm_rank, sluice_rank_t *rank);
/* Sluice rank `rank` is `*comm_rank` in `comm`; SLUICE_ERR_RANK if it is not
 * a member of `comm`.  Local. */
sluice_status_t MPIX_Sluice_rank_to_comm(MPI_Comm comm, sluice_rank_t rank, int *comm_rank);

/* A communicator of the Sluice ranks `ranks[0..count-1]`, in that order
 * (rank i of *newcomm is ranks[i]).  Collective over the whole Sluice job,
 * every rank passing the same list; ranks not in the list get
 * MPI_COMM_NULL.  Free it with MPI_Comm_free. */
sluice_status_t MPIX_Sluice_comm_create(const sluice_rank_t *ranks, int count, MPI_Comm *newcomm);

/* An MPI window on every rank's Sluice segment (displacement unit 1,
 * displacement = offset in the segment), over a communicator of all Sluice
 * ranks in Sluice rank order: MPI one-sided calls on it and sluice_put /
 * sluice_get address the same bytes.  Collective over the Sluice job, after
 * sluice_segment_attach.  Free it with MPI_Win_free before sluice_finalize.
 * Mixing MPI RMA and Sluice RMA on the same bytes needs the usual
 * separation: complete one (MPI_Win_flush / sluice_nbi_sync, then a barrier
 * of either library) before the other touches them. */
sluice_status_t MPIX_Sluice_win_create(MPI_Win *win);

#ifdef __cplusplus
}
#endif

#endif /* MPIX_SLUICE_H */
