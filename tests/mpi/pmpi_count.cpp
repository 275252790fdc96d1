// tests/mpi/pmpi_count.cpp - counts the MPI calls of the process through the
// PMPI profiling interface, for the "no MPI on the data path" check
// (hybrid_test.cpp, mode data-path).  Every MPI function libsluice-mpi
// imports is wrapped here; tests/mpi/hybrid.sh compares this list with the
// library's undefined symbols, so a new MPI call in the library cannot slip
// past uncounted.
#include <mpi.h>

#include <atomic>
#include <cstdio>

namespace {
std::atomic<long> calls{0};
long count() { return calls.fetch_add(1) + 1; }
} // namespace

long pmpi_calls() { return calls.load(); }

extern const char *const pmpi_wrapped[] = {
    "MPI_Abort", "MPI_Allgather", "MPI_Allgatherv", "MPI_Barrier", "MPI_Comm_create_keyval",
    "MPI_Comm_dup", "MPI_Comm_free", "MPI_Comm_rank", "MPI_Comm_set_attr", "MPI_Comm_size",
    "MPI_Finalize", "MPI_Finalized", "MPI_Init_thread", "MPI_Initialized", "MPI_Query_thread",
    "MPI_Comm_group", "MPI_Group_translate_ranks", "MPI_Group_free", "MPI_Group_incl", "MPI_Comm_create",
    "MPI_Win_create",
    // The mpi conduit's (src/conduits/mpi): on the data path only when the
    // job chose it (SLUICE_NETWORK=mpi).
    "MPI_Allreduce", "MPI_Cancel", "MPI_Comm_set_errhandler", "MPI_Error_string", "MPI_Get_count",
    "MPI_Get_library_version", "MPI_Ibarrier", "MPI_Irecv", "MPI_Isend", "MPI_Recv_init", "MPI_Request_free", "MPI_Rget",
    "MPI_Rput", "MPI_Send", "MPI_Start", "MPI_Test", "MPI_Testsome", "MPI_Wait", "MPI_Win_flush", "MPI_Win_free",
    "MPI_Win_lock_all", "MPI_Win_set_errhandler", "MPI_Win_unlock_all", nullptr,
};

extern "C" {
int MPI_Abort(MPI_Comm comm, int code) { count(); return PMPI_Abort(comm, code); }
int MPI_Allgather(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, MPI_Comm comm) {
    count();
    return PMPI_Allgather(sb, sc, st, rb, rc, rt, comm);
}
int MPI_Allgatherv(const void *sb, int sc, MPI_Datatype st, void *rb, const int rcs[], const int displs[],
                   MPI_Datatype rt, MPI_Comm comm) {
    count();
    return PMPI_Allgatherv(sb, sc, st, rb, rcs, displs, rt, comm);
}
int MPI_Barrier(MPI_Comm comm) { count(); return PMPI_Barrier(comm); }
int MPI_Comm_create_keyval(MPI_Comm_copy_attr_function *copy, MPI_Comm_delete_attr_function *del, int *key,
                           void *extra) {
    count();
    return PMPI_Comm_create_keyval(copy, del, key, extra);
}
int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *out) { count(); return PMPI_Comm_dup(comm, out); }
int MPI_Comm_free(MPI_Comm *comm) { count(); return PMPI_Comm_free(comm); }
int MPI_Comm_rank(MPI_Comm comm, int *r) { count(); return PMPI_Comm_rank(comm, r); }
int MPI_Comm_set_attr(MPI_Comm comm, int key, void *value) { count(); return PMPI_Comm_set_attr(comm, key, value); }
int MPI_Comm_size(MPI_Comm comm, int *n) { count(); return PMPI_Comm_size(comm, n); }
int MPI_Finalize(void) { count(); return PMPI_Finalize(); }
int MPI_Finalized(int *flag) { count(); return PMPI_Finalized(flag); }
int MPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
    count();
    return PMPI_Init_thread(argc, argv, required, provided);
}
int MPI_Initialized(int *flag) { count(); return PMPI_Initialized(flag); }
int MPI_Query_thread(int *provided) { count(); return PMPI_Query_thread(provided); }
int MPI_Comm_group(MPI_Comm comm, MPI_Group *group) { count(); return PMPI_Comm_group(comm, group); }
int MPI_Group_translate_ranks(MPI_Group a, int n, const int ranks_a[], MPI_Group b, int ranks_b[]) {
    count();
    return PMPI_Group_translate_ranks(a, n, ranks_a, b, ranks_b);
}
int MPI_Group_free(MPI_Group *group) { count(); return PMPI_Group_free(group); }
int MPI_Group_incl(MPI_Group group, int n, const int ranks[], MPI_Group *out) {
    count();
    return PMPI_Group_incl(group, n, ranks, out);
}
int MPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm *out) { count(); return PMPI_Comm_create(comm, group, out); }
int MPI_Win_create(void *base, MPI_Aint size, int unit, MPI_Info info, MPI_Comm comm, MPI_Win *win) {
    count();
    return PMPI_Win_create(base, size, unit, info, comm, win);
}
int MPI_Allreduce(const void *sb, void *rb, int n, MPI_Datatype t, MPI_Op op, MPI_Comm comm) {
    count();
    return PMPI_Allreduce(sb, rb, n, t, op, comm);
}
int MPI_Cancel(MPI_Request *r) { count(); return PMPI_Cancel(r); }
int MPI_Comm_set_errhandler(MPI_Comm comm, MPI_Errhandler h) { count(); return PMPI_Comm_set_errhandler(comm, h); }
int MPI_Error_string(int code, char *text, int *n) { count(); return PMPI_Error_string(code, text, n); }
int MPI_Get_count(const MPI_Status *st, MPI_Datatype t, int *n) { count(); return PMPI_Get_count(st, t, n); }
int MPI_Get_library_version(char *text, int *n) { count(); return PMPI_Get_library_version(text, n); }
int MPI_Ibarrier(MPI_Comm comm, MPI_Request *r) { count(); return PMPI_Ibarrier(comm, r); }
int MPI_Irecv(void *b, int n, MPI_Datatype t, int from, int tag, MPI_Comm comm, MPI_Request *r) {
    count();
    return PMPI_Irecv(b, n, t, from, tag, comm, r);
}
int MPI_Isend(const void *b, int n, MPI_Datatype t, int to, int tag, MPI_Comm comm, MPI_Request *r) {
    count();
    return PMPI_Isend(b, n, t, to, tag, comm, r);
}
int MPI_Recv_init(void *b, int n, MPI_Datatype t, int from, int tag, MPI_Comm comm, MPI_Request *r) {
    count();
    return PMPI_Recv_init(b, n, t, from, tag, comm, r);
}
int MPI_Request_free(MPI_Request *r) { count(); return PMPI_Request_free(r); }
int MPI_Rget(void *b, int n, MPI_Datatype t, int target, MPI_Aint disp, int tn, MPI_Datatype tt, MPI_Win w,
             MPI_Request *r) {
    count();
    return PMPI_Rget(b, n, t, target, disp, tn, tt, w, r);
}
int MPI_Rput(const void *b, int n, MPI_Datatype t, int target, MPI_Aint disp, int tn, MPI_Datatype tt, MPI_Win w,
             MPI_Request *r) {
    count();
    return PMPI_Rput(b, n, t, target, disp, tn, tt, w, r);
}
int MPI_Send(const void *b, int n, MPI_Datatype t, int to, int tag, MPI_Comm comm) {
    count();
    return PMPI_Send(b, n, t, to, tag, comm);
}
int MPI_Start(MPI_Request *r) { count(); return PMPI_Start(r); }
int MPI_Test(MPI_Request *r, int *done, MPI_Status *st) { count(); return PMPI_Test(r, done, st); }
int MPI_Testsome(int n, MPI_Request rs[], int *out, int idx[], MPI_Status sts[]) {
    count();
    return PMPI_Testsome(n, rs, out, idx, sts);
}
int MPI_Wait(MPI_Request *r, MPI_Status *st) { count(); return PMPI_Wait(r, st); }
int MPI_Win_flush(int rank, MPI_Win w) { count(); return PMPI_Win_flush(rank, w); }
int MPI_Win_free(MPI_Win *w) { count(); return PMPI_Win_free(w); }
int MPI_Win_lock_all(int assert_, MPI_Win w) { count(); return PMPI_Win_lock_all(assert_, w); }
int MPI_Win_set_errhandler(MPI_Win w, MPI_Errhandler h) { count(); return PMPI_Win_set_errhandler(w, h); }
int MPI_Win_unlock_all(MPI_Win w) { count(); return PMPI_Win_unlock_all(w); }
}
