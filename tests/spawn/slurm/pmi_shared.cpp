// tests/spawn/slurm/pmi_shared.cpp - a program that uses PMIx or PMI2 itself,
// as an MPI does, next to Sluice (tests/spawn/slurm.sh runs it under srun).
// Sluice must share the PMI the program initialized and leave it working
// after sluice_finalize; the program finalizes it last.
//
//   sluice-pmi-shared-test pmix-first    PMIx_Init, sluice_init, sluice_finalize,
//                                        then a PMIx fence, PMIx_Finalize
//   sluice-pmi-shared-test pmix-after    sluice_init, PMIx_Init (an MPI started
//                                        after Sluice), sluice_finalize, fence,
//                                        PMIx_Finalize
//   sluice-pmi-shared-test pmi2-first    PMI2_Init, sluice_init, sluice_finalize,
//                                        then a PMI2 fence, PMI2_Finalize
// Prints "rank R of N MODE ok" per rank; exit code 0 when every step worked.
#include "sluice_config.h"

#include <sluice.h>

#if SLUICE_SPAWNER_PMIX
#include <pmix.h>
#endif
#if SLUICE_SPAWNER_PMI2
#include SLUICE_PMI2_HEADER
#endif

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

#if SLUICE_SPAWNER_PMIX || SLUICE_SPAWNER_PMI2
[[noreturn]] void fail(const std::string &mode, const char *what) {
    std::fprintf(stderr, "sluice-pmi-shared-test %s: FAILED: %s\n", mode.c_str(), what);
    std::exit(1);
}

// Sluice works: every rank's number arrives in order.
void sluice_run(const std::string &mode, int &argc, char **&argv) {
    if (sluice_init(&argc, &argv) != SLUICE_OK) fail(mode, "sluice_init");
    const uint32_t me = sluice_rank();
    std::vector<uint32_t> all(sluice_size());
    if (sluice_allgather(&me, all.data(), sizeof me) != SLUICE_OK) fail(mode, "sluice_allgather");
    for (uint32_t r = 0; r < all.size(); ++r)
        if (all[r] != r) fail(mode, "the allgather lost a rank");
}

void report(const std::string &mode, unsigned rank, unsigned size) {
    std::printf("rank %u of %u %s ok\n", rank, size, mode.c_str());
    std::fflush(stdout);
}
#endif

#if SLUICE_SPAWNER_PMIX
int pmix_mode(const std::string &mode, int &argc, char **&argv) {
    pmix_proc_t self{};
    if (mode == "pmix-first" && PMIx_Init(&self, nullptr, 0) != PMIX_SUCCESS) fail(mode, "PMIx_Init");
    sluice_run(mode, argc, argv);
    const unsigned size = sluice_size();
    if (mode == "pmix-after" && PMIx_Init(&self, nullptr, 0) != PMIX_SUCCESS) fail(mode, "PMIx_Init after sluice_init");
    if (sluice_finalize() != SLUICE_OK) fail(mode, "sluice_finalize");
    if (!PMIx_Initialized()) fail(mode, "sluice_finalize finalized the program's PMIx");
    if (PMIx_Fence(nullptr, 0, nullptr, 0) != PMIX_SUCCESS) fail(mode, "PMIx_Fence after sluice_finalize");
    report(mode, self.rank, size);
    if (PMIx_Finalize(nullptr, 0) != PMIX_SUCCESS) fail(mode, "PMIx_Finalize");
    return 0;
}
#endif

#if SLUICE_SPAWNER_PMI2
int pmi2_mode(const std::string &mode, int &argc, char **&argv) {
    int spawned = 0, size = 0, rank = 0, appnum = 0;
    if (PMI2_Init(&spawned, &size, &rank, &appnum) != PMI2_SUCCESS) fail(mode, "PMI2_Init");
    sluice_run(mode, argc, argv);
    if (static_cast<int>(sluice_size()) != size || static_cast<int>(sluice_rank()) != rank)
        fail(mode, "Sluice and PMI2 disagree on rank or size");
    if (sluice_finalize() != SLUICE_OK) fail(mode, "sluice_finalize");
    if (!PMI2_Initialized()) fail(mode, "sluice_finalize finalized the program's PMI2");
    if (PMI2_KVS_Fence() != PMI2_SUCCESS) fail(mode, "PMI2_KVS_Fence after sluice_finalize");
    report(mode, static_cast<unsigned>(rank), static_cast<unsigned>(size));
    if (PMI2_Finalize() != PMI2_SUCCESS) fail(mode, "PMI2_Finalize");
    return 0;
}
#endif

} // namespace

int main(int argc, char **argv) {
    const std::string mode = argc > 1 ? argv[1] : "";
#if SLUICE_SPAWNER_PMIX
    if (mode == "pmix-first" || mode == "pmix-after") return pmix_mode(mode, argc, argv);
#endif
#if SLUICE_SPAWNER_PMI2
    if (mode == "pmi2-first") return pmi2_mode(mode, argc, argv);
#endif
    std::fprintf(stderr, "usage: sluice-pmi-shared-test pmix-first|pmix-after|pmi2-first (those built in)\n");
    return 2;
}
