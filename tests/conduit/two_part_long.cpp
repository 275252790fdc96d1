// tests/conduit/two_part_long.cpp - the Long path of src/am on every
// conduit: a packed Long and, on RDMA conduits, the two-part Long (payload
// by Put with remote completion, header by AM, reassembled by Long ID),
// requested and replied from a handler.  The template delivers the header
// before the payload's notification (its RDMA completes from poll), smp the
// payload first: both orders of the LID cache run.
#include "am/am.hpp"
#include "conduit_test.hpp"

#include <gtest/gtest.h>

#include <cstring>

namespace conduit_test {
namespace {

using namespace sluice;

std::string fill(std::size_t n, unsigned seed) {
    std::string s(n, '\0');
    for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 7 + seed * 13) & 0xff);
    return s;
}

// Handler state (handlers are plain functions).
am::AmEngine *engine = nullptr;
std::uint64_t reply_to = 0;
int requests_run = 0, replies_run = 0;
bool bytes_ok = true;

am::Send long_send(std::uint8_t handler, const std::uint32_t *args, const std::string &payload, std::uint64_t dest) {
    am::Send m;
    m.category = conduit::AmCategory::long_;
    m.handler = handler;
    m.args = args;
    m.nargs = 2;
    m.payload = payload.data();
    m.length = payload.size();
    m.dest_addr = reinterpret_cast<void *>(dest);
    return m;
}

void on_request(sluice_token_t token, void *payload, std::size_t n, const std::uint32_t *args, unsigned nargs) {
    ++requests_run;
    bytes_ok &= nargs == 2 && std::memcmp(payload, fill(n, args[0]).data(), n) == 0;
    const std::string back = fill(n, args[0] + 1);
    EXPECT_EQ(engine->reply(token, long_send(2, args, back, reply_to), "test reply"), Status::ok);
}

void on_reply(sluice_token_t, void *payload, std::size_t n, const std::uint32_t *args, unsigned) {
    ++replies_run;
    bytes_ok &= std::memcmp(payload, fill(n, args[0] + 1).data(), n) == 0;
}

class TwoPartLong : public ConduitTest {};

TEST_P(TwoPartLong, RequestAndReplyReassembleByLongId) {
    run([](World &w) {
        Transport &t = *w.t;
        am::AmEngine am;
        am::SegmentTable segments;
        segments.entries.resize(w.size);
        segments.entries[w.rank] = {reinterpret_cast<std::uint64_t>(w.segment), w.segment_size, nullptr};
        segments.entries[w.peer] = {w.peer_segment, w.segment_size, nullptr};
        segments.attached = true;
        std::vector<std::string> notes;
        am.configure(w.rank, w.size, std::vector<Transport *>(w.size, &t), &segments, notes);
        ASSERT_EQ(am.handler_register(1, on_request, conduit::AmCategory::long_, 2), Status::ok);
        ASSERT_EQ(am.handler_register(2, on_reply, conduit::AmCategory::long_, 2), Status::ok);
        engine = &am;
        // Requests land in the first half of a segment, replies in the second.
        reply_to = w.peer_segment + w.segment_size / 2;
        w.on_deliver = [&am](World &, const Delivered &d) {
            void *payload = d.header.category == conduit::AmCategory::long_
                                ? reinterpret_cast<void *>(d.header.dest_addr)
                                : const_cast<char *>(d.payload.data());
            am::AmEngine::deliver(&am, d.header, d.args.data(), payload);
        };
        const std::size_t packed = std::min(t.capabilities().max_long, t.capabilities().max_packed_long);
        const bool two_part = t.capabilities().native_rma && packed < t.capabilities().max_long;
        std::vector<std::size_t> sizes{1, std::min<std::size_t>(packed, w.segment_size / 2)};
        if (two_part) sizes.push_back(std::min<std::size_t>(t.capabilities().max_long, w.segment_size / 2));
        else std::printf("[ conduit  ] %s: every Long is packed (no RDMA or no packed limit)\n", t.name());
        if (w.rank == 0) {
            std::uint32_t seed = 3;
            for (std::size_t n : sizes) {
                const std::string p = fill(n, seed);
                const std::uint32_t args[2] = {seed, 0};
                const am::Send m = long_send(1, args, p, w.peer_segment);
                const int want = replies_run + 1;  // in loopback the reply may run inside request
                ASSERT_EQ(am.request(w.peer, m, "test request"), Status::ok) << n;
                while (replies_run < want) am.poll();
                ++seed;
            }
            EXPECT_TRUE(bytes_ok);
        } else {
            while (requests_run < static_cast<int>(sizes.size())) am.poll();
            EXPECT_TRUE(bytes_ok);
        }
        ASSERT_TRUE(w.barrier());
        for (int i = 0; i < 100; ++i) am.poll();
        EXPECT_EQ(am.lid_cache_size(), 0u) << "a part without its partner";
        if (w.size == 1) {
            EXPECT_EQ(requests_run, static_cast<int>(sizes.size()));
        }
    });
}

CONDUIT_TEST_SUITE(TwoPartLong);

} // namespace
} // namespace conduit_test
