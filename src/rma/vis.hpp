// src/rma/vis.hpp - VIS: vector, indexed and strided Put and Get.
//
// Both sides of a transfer are described as they came in (no list of
// pieces is built): a cursor walks each side's pieces in order, and the
// two walks are cut at each other's boundaries into matched runs of
// (remote, local, length).  To a peer whose segment is mapped here the
// runs are copies; to any other, small runs are packed into Medium AMs
// (sys_vis_put carries the bytes and their remote runs, the target
// scatters and acknowledges; sys_vis_get carries the runs, the target
// gathers and answers in one Medium reply) and runs of SLUICE_VIS_RMA_MIN
// bytes or more are ordinary RMA (native RDMA where the conduit has it).
// Every batch is sent within the call, so a VIS operation keeps no state
// but its completion counter: no progress hook is needed.
#pragma once

#include "rma/rma.hpp"

#include <cstddef>

namespace sluice::rma {

// One side of a VIS transfer, as the public call passed it.
struct VisSide {
    enum class Kind { vector, indexed, strided };
    Kind kind = Kind::vector;
    std::size_t count = 0;                    // vector, indexed: pieces
    const sluice_memvec_t *vec = nullptr;     // vector
    void *const *list = nullptr;              // indexed
    std::size_t len = 0;                      // indexed: every piece's length
    char *base = nullptr;                     // strided: the first element
    const std::ptrdiff_t *strides = nullptr;  // strided: this side's strides
    const std::size_t *counts = nullptr;      // strided: shared by both sides
    std::size_t levels = 0;
    std::size_t elem = 0;
};

enum class VisCompletion { blocking, nb, nbi };

// Called by src/core at init, after the RMA engine is configured.
void vis_init(am::AmEngine &am, RmaEngine &rma);

// `remote` lies in rank r's segment, `local` is the caller's memory; a Put
// moves local to remote, a Get remote to local.  Every argument and every
// remote piece is checked before anything moves.  `ev` (nb only) is
// written on success.
Status vis_transfer(bool put, Rank r, const VisSide &remote, const VisSide &local, VisCompletion how,
                    sluice_event **ev, const char *op);

} // namespace sluice::rma
