// src/mpi-interop/mpix.cpp - the MPIX_Sluice_* calls of include/mpix_sluice.h.
#include "mpi-interop/mpi_interop.hpp"

#include "base/status.hpp"

#include <mpix_sluice.h>

#include <cstdlib>
#include <vector>

using sluice::base::Status;

extern "C" sluice_status_t MPIX_Sluice_init(MPI_Comm comm, int *argc, char ***argv) {
    const char *op = "MPIX_Sluice_init";
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized)
        return static_cast<int>(sluice::base::report(Status::state, op, "call MPI_Init (or MPI_Init_thread) first",
                                                     "MPI is not initialized"));
    if (comm == MPI_COMM_NULL)
        return static_cast<int>(sluice::base::report(Status::argument, op, "pass a valid communicator",
                                                     "the communicator is MPI_COMM_NULL"));
    // Running already (a second call, or Open MPI's extension started it in
    // MPI_Init): sluice_init says so, and the running job is left as it is.
    if (sluice_initialized()) return sluice_init(argc, argv);
    sluice::mpi_interop::register_backend();
    sluice::mpi_interop::parent_set(comm);
    ::setenv("SLUICE_SPAWNER", "mpi", 1);
    return sluice_init(argc, argv);
}

namespace {

int status_code(Status s) { return static_cast<int>(s); }

// The running job's communicator, or the error every MPIX_ call gives
// without one.
bool job_comm_or_error(const char *op, MPI_Comm &job, int &error) {
    job = sluice::mpi_interop::job_comm();
    if (job != MPI_COMM_NULL && sluice_initialized()) return true;
    error = status_code(sluice::base::report(
        Status::state, op, "initialize Sluice over MPI first (MPIX_Sluice_init, or sluice_init under mpirun)",
        "Sluice is not running over the mpi bootstrap"));
    return false;
}

bool translation_arguments_ok(const char *op, MPI_Comm comm, const void *output, int &error) {
    if (comm != MPI_COMM_NULL && output) return true;
    error = status_code(sluice::base::report(Status::argument, op, "pass a communicator and an output rank",
                                             "null communicator or output"));
    return false;
}

// Rank `rank` of group `from` in group `to`, or MPI_UNDEFINED.
int translate(MPI_Comm from, int rank, MPI_Comm to) {
    MPI_Group a, b;
    MPI_Comm_group(from, &a);
    MPI_Comm_group(to, &b);
    int out = MPI_UNDEFINED;
    MPI_Group_translate_ranks(a, 1, &rank, b, &out);
    MPI_Group_free(&a);
    MPI_Group_free(&b);
    return out;
}

int comm_size(MPI_Comm comm) {
    int n = 0;
    MPI_Comm_size(comm, &n);
    return n;
}

} // namespace

extern "C" sluice_status_t MPIX_Sluice_rank_from_comm(MPI_Comm comm, int comm_rank, sluice_rank_t *rank) {
    const char *op = "MPIX_Sluice_rank_from_comm";
    MPI_Comm job;
    int error;
    if (!job_comm_or_error(op, job, error) || !translation_arguments_ok(op, comm, rank, error)) return error;
    if (comm_rank < 0 || comm_rank >= comm_size(comm))
        return status_code(sluice::base::report(Status::rank, op, "pass a rank of the communicator",
                                                "rank %d, but the communicator has %d", comm_rank, comm_size(comm)));
    const int r = translate(comm, comm_rank, job);
    if (r == MPI_UNDEFINED)
        return status_code(sluice::base::report(Status::rank, op, "translate only processes that are in the Sluice job",
                                                "rank %d of the communicator is not in the Sluice job", comm_rank));
    *rank = static_cast<sluice_rank_t>(r);
    return SLUICE_OK;
}

extern "C" sluice_status_t MPIX_Sluice_rank_to_comm(MPI_Comm comm, sluice_rank_t rank, int *comm_rank) {
    const char *op = "MPIX_Sluice_rank_to_comm";
    MPI_Comm job;
    int error;
    if (!job_comm_or_error(op, job, error) || !translation_arguments_ok(op, comm, comm_rank, error)) return error;
    if (rank >= sluice_size())
        return status_code(sluice::base::report(Status::rank, op, "use a rank below sluice_size()",
                                                "Sluice rank %u, but the job has %u", rank, sluice_size()));
    const int r = translate(job, static_cast<int>(rank), comm);
    if (r == MPI_UNDEFINED)
        return status_code(sluice::base::report(Status::rank, op, "translate into a communicator that holds the rank",
                                                "Sluice rank %u is not in the communicator", rank));
    *comm_rank = r;
    return SLUICE_OK;
}

extern "C" sluice_status_t MPIX_Sluice_comm_create(const sluice_rank_t *ranks, int count, MPI_Comm *newcomm) {
    const char *op = "MPIX_Sluice_comm_create";
    MPI_Comm job;
    int error;
    if (!job_comm_or_error(op, job, error)) return error;
    if (!newcomm || count < 0 || (count > 0 && !ranks))
        return status_code(sluice::base::report(Status::argument, op, "pass the rank list, its length and an output",
                                                "null list or output, or negative count %d", count));
    std::vector<int> members(static_cast<std::size_t>(count));
    for (int i = 0; i < count; ++i) {
        if (ranks[i] >= sluice_size())
            return status_code(sluice::base::report(Status::rank, op, "list ranks below sluice_size()",
                                                    "ranks[%d] = %u, but the job has %u", i, ranks[i], sluice_size()));
        members[static_cast<std::size_t>(i)] = static_cast<int>(ranks[i]);
    }
    MPI_Group all, some;
    MPI_Comm_group(job, &all);
    const int rc = MPI_Group_incl(all, count, members.data(), &some);
    MPI_Group_free(&all);
    if (rc != MPI_SUCCESS)
        return status_code(sluice::base::report(Status::argument, op, "list each rank once", "MPI_Group_incl refused the list"));
    // Collective over the job's communicator; MPI_COMM_NULL outside the list.
    const int created = MPI_Comm_create(job, some, newcomm);
    MPI_Group_free(&some);
    if (created != MPI_SUCCESS)
        return status_code(sluice::base::report(Status::bootstrap, op, "call it on every Sluice rank with the same list",
                                                "MPI_Comm_create failed"));
    return SLUICE_OK;
}

extern "C" sluice_status_t MPIX_Sluice_win_create(MPI_Win *win) {
    const char *op = "MPIX_Sluice_win_create";
    MPI_Comm job;
    int error;
    if (!job_comm_or_error(op, job, error)) return error;
    if (!win)
        return status_code(sluice::base::report(Status::argument, op, "pass an output window", "null output"));
    void *base = nullptr;
    size_t size = 0;
    if (sluice_segment_info(sluice_rank(), &base, &size) != SLUICE_OK)
        return status_code(sluice::base::report(Status::state, op, "call sluice_segment_attach first",
                                                "no segment is attached"));
    if (MPI_Win_create(base, static_cast<MPI_Aint>(size), 1, MPI_INFO_NULL, job, win) != MPI_SUCCESS)
        return status_code(sluice::base::report(Status::bootstrap, op, "call it on every Sluice rank",
                                                "MPI_Win_create failed"));
    return SLUICE_OK;
}
