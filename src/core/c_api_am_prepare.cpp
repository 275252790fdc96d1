// src/core/c_api_am_prepare.cpp - the C API of negotiated-payload AMs
// (src/am/prepare.cpp).
#include "core/c_api_common.hpp"

#include <sluice.h>

using sluice::base::Status;
using sluice::core::code;
using sluice::core::runtime;
namespace am = sluice::am;

namespace {


// Flags of a prepare: SLUICE_FLAG_IMMEDIATE or nothing.
bool flags_valid(unsigned flags, const char *op) {
    if ((flags & ~SLUICE_FLAG_IMMEDIATE) == 0) return true;
    (void)sluice::base::report(Status::argument, op, "pass 0 or SLUICE_FLAG_IMMEDIATE", "unknown flags 0x%x",
                               flags & ~SLUICE_FLAG_IMMEDIATE);
    return false;
}

} // namespace

extern "C" {

sluice_status_t sluice_am_prepare_request(sluice_am_category_t category, sluice_rank_t dest, size_t least,
                                          size_t most, unsigned nargs, unsigned flags, void **buffer, size_t *size) {
    SLUICE_REQUIRE_RUNNING("am_prepare_request");
    if (!flags_valid(flags, "am_prepare_request")) return SLUICE_ERR_ARGUMENT;
    return code(runtime().am.prepare_request(static_cast<am::AmCategory>(category), dest, least, most, nargs,
                                             flags & SLUICE_FLAG_IMMEDIATE, buffer, size, "am_prepare_request"));
}
sluice_status_t sluice_am_prepare_reply(sluice_am_category_t category, sluice_token_t token, size_t least,
                                        size_t most, unsigned nargs, unsigned flags, void **buffer, size_t *size) {
    SLUICE_REQUIRE_RUNNING("am_prepare_reply");
    if (!flags_valid(flags, "am_prepare_reply")) return SLUICE_ERR_ARGUMENT;
    return code(runtime().am.prepare_reply(static_cast<am::AmCategory>(category), token, least, most, nargs,
                                           flags & SLUICE_FLAG_IMMEDIATE, buffer, size, "am_prepare_reply"));
}
sluice_status_t sluice_am_commit(sluice_handler_t handler, size_t length, void *dest_addr, const uint32_t *args,
                                 unsigned nargs) {
    SLUICE_REQUIRE_RUNNING("am_commit");
    return code(runtime().am.commit(handler, length, dest_addr, args, nargs, "am_commit"));
}
sluice_status_t sluice_am_cancel(void) {
    SLUICE_REQUIRE_RUNNING("am_cancel");
    return code(runtime().am.cancel("am_cancel"));
}
size_t sluice_am_max_medium_for(sluice_rank_t dest, unsigned nargs) {
    return runtime().running() ? runtime().am.max_medium_for(dest, nargs) : 0;
}
size_t sluice_am_max_long_for(sluice_rank_t dest, unsigned nargs) {
    return runtime().running() ? runtime().am.max_long_for(dest, nargs) : 0;
}

} // extern "C"
