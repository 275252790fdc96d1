// src/conduits/common/private_segment.hpp - the segment a network conduit
// creates when no same-host conduit owns it (a build or job without smp):
// private anonymous memory, which only this process maps.  It publishes no
// key for peers to map.
#pragma once

#include "base/status.hpp"

#include <sys/mman.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <string>

namespace sluice::conduit::common {

class PrivateSegment {
public:
    PrivateSegment() = default;
    PrivateSegment(const PrivateSegment &) = delete;
    PrivateSegment &operator=(const PrivateSegment &) = delete;
    ~PrivateSegment() { release(); }

    // Transport::segment_create_impl for `conduit` ("segment_attach (udp)").
    base::Status create(const char *operation, std::size_t size, void **base, std::string &key) {
        key.clear();
        *base = nullptr;
        if (size == 0) return base::Status::ok;
        void *p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            return base::report(base::Status::resource, operation, "ask for a smaller segment",
                                "cannot map %zu bytes: %s", size, std::strerror(errno));
        release();
        base_ = p;
        bytes_ = size;
        *base = p;
        return base::Status::ok;
    }
    void release() {
        if (base_) ::munmap(base_, bytes_);
        base_ = nullptr;
        bytes_ = 0;
    }

private:
    void *base_ = nullptr;
    std::size_t bytes_ = 0;
};

} // namespace sluice::conduit::common
