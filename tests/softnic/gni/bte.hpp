// tests/softnic/gni/bte.hpp - the Block Transfer Engine: GNI_PostRdma's
// transfers, carried out by a thread of the poster's process after the post
// has returned, in posting order, as the BTE works through its queue.
#pragma once

#include "gni_pub.h"
#include "transfer.hpp"

#include <cstdint>

namespace softnic_gni {

// A posted transfer with what its completion needs, copied at post time.
struct Post {
    gni_post_descriptor_t descriptor;
    Target target;
    std::uint32_t local_event, remote_event;
    std::uint16_t token;  // 0: no local event
    std::int32_t cq_slot;
    std::uint32_t cq_generation;
};

// Carries out `p` and raises its local event (gni.cpp).
void post_complete(const Post &p);
// Queues `p` for the BTE thread (started on first use); false when the
// thread or the queue cannot be had.  SOFTNIC_GNI_BTE_DELAY_US delays each
// transfer, so a test can see a completion arrive after the post returned.
bool bte_queue(const Post &p);

} // namespace softnic_gni
