// src/conduits/udp/tests/fuzz_wire.cpp - fuzz target for the udp conduit's datagram
// decoder (src/conduits/udp/wire.cpp), the first code every received byte
// reaches.
//
// Properties checked on every input: decode() never reads outside the input
// (AddressSanitizer watches); whatever it accepts re-encodes to exactly
// the input bytes, so an accepted datagram is one the encoder could have
// sent and no field was misread; and its fast path for whole Shorts agrees
// with decode_full(), the decoder of every rule, on the verdict and on every
// field.  Each input is judged twice: by a job without MACs (the tag must
// be zero) and by a job with one (mac.hpp), whose accepted datagrams must
// re-encode and re-sign to exactly the input; half the seeds are signed.
// Built two ways (src/conduits/udp/tests/README.md):
// with clang's libFuzzer (-DSLUICE_LIBFUZZER, coverage-guided), and with
// g++ as a self-contained mutation driver, so make check fuzzes on any
// machine.  Both start from the same seeds, which the driver writes.
#include "conduits/udp/wire.hpp"

#include "conduits/udp/mac.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace wire = sluice::conduit::udp::wire;

namespace {

constexpr std::uint64_t secret = 0x5eed5eed0badcafeull;
constexpr wire::Expect expect{secret, 1, 4, 1u << 16, 1};
constexpr std::uint8_t key[wire::mac_key_bytes] = {0x5e, 0xed, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14};
wire::Mac &job_mac() {
    static wire::Mac mac(key);
    return mac;
}
wire::Expect signed_expect() {
    wire::Expect e = expect;
    e.mac = &job_mac();
    return e;
}

[[noreturn]] void fail(const char *what, std::size_t n) {
    std::fprintf(stderr, "fuzz_udp_wire: %s (input of %zu bytes)\n", what, n);
    std::abort();
}

// The fields an accepted datagram decodes to, all of them.
bool same(const wire::Datagram &a, const wire::Datagram &b) {
    const wire::Header &x = a.header, &y = b.header;
    if (x.kind != y.kind || x.secret != y.secret || x.source != y.source || x.dest != y.dest || x.seq != y.seq ||
        x.number != y.number ||
        x.ack != y.ack || x.sack != y.sack || x.message_length != y.message_length ||
        x.fragment_offset != y.fragment_offset || a.has_am != b.has_am || a.payload != b.payload ||
        a.payload_length != b.payload_length)
        return false;
    if (!a.has_am) return true;
    const wire::Am &p = a.am, &q = b.am;
    return p.handler == q.handler && p.category == q.category && p.nargs == q.nargs && p.flags == q.flags &&
           p.credit == q.credit && p.dest_addr == q.dest_addr &&
           std::equal(p.args, p.args + p.nargs, q.args);
}

void check_under(const std::uint8_t *data, std::size_t n, const wire::Expect &expect) {
    wire::Datagram d, full;
    const wire::Drop drop = wire::decode(data, n, expect, d);
    // decode()'s fast path must agree with the decoder of every rule: the
    // same verdict, and for an accepted datagram the same fields.
    const wire::Drop full_drop = wire::decode_full(data, n, expect, full);
    if (drop != full_drop) fail("decode and decode_full disagree on the verdict", n);
    if (drop == wire::Drop::none && !same(d, full)) fail("decode and decode_full decode different fields", n);
    if (drop == wire::Drop::none) {
        if (d.payload < data || d.payload + d.payload_length != data + n) fail("payload outside the datagram", n);
        std::vector<std::uint8_t> again(n + 1);
        const std::size_t m = wire::encode(d.header, d.has_am ? &d.am : nullptr, d.payload, d.payload_length,
                                           again.data(), again.size(), expect.max_message);
        if (expect.mac && m == n) expect.mac->sign(again.data(), m, nullptr, 0);
        if (m != n || std::memcmp(again.data(), data, n) != 0) fail("accepted datagram does not re-encode to itself", n);
    } else if (static_cast<std::size_t>(drop) >= wire::drop_reasons) {
        fail("unknown drop reason", n);
    }
}

int check_one(const std::uint8_t *data, std::size_t n) {
    check_under(data, n, expect);
    check_under(data, n, signed_expect());
    return 0;
}

// Valid datagrams of every kind and category: the starting points.
std::vector<std::vector<std::uint8_t>> seeds() {
    std::vector<std::vector<std::uint8_t>> out;
    const std::uint8_t bytes[64] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    auto add = [&](const wire::Header &h, const wire::Am *am, std::size_t len) {
        std::vector<std::uint8_t> buf(wire::max_datagram);
        const std::size_t n = wire::encode(h, am, bytes, len, buf.data(), buf.size(), expect.max_message);
        if (n == 0) fail("a seed does not encode", 0);
        buf.resize(n);
        out.push_back(buf);
        job_mac().sign(buf.data(), n, nullptr, 0);
        out.push_back(std::move(buf));
    };
    wire::Header h;
    h.secret = secret;
    h.source = 2;
    h.dest = 1;
    h.seq = 7;
    h.ack = 3;
    h.sack = 0x5;
    wire::Am am;
    am.handler = 200;
    for (unsigned nargs : {0u, 3u, 16u}) {
        am.nargs = static_cast<std::uint8_t>(nargs);
        for (unsigned i = 0; i < nargs; ++i) am.args[i] = 0x01010101u * i;
        am.category = 0;
        h.message_length = 0;
        add(h, &am, 0);
        am.flags = 1 | 4;  // a reply with a credit byte: the fast path's other shape
        am.credit = 0x35;
        add(h, &am, 0);
        am.flags = 0;
        am.credit = 0;
        am.category = 1;
        h.message_length = 40;
        add(h, &am, 40);
        am.category = 2;
        am.dest_addr = 0x7f0000001000ull;
        am.flags = 4;
        am.credit = 9;
        h.message_length = 100;
        add(h, &am, 60);
        am.dest_addr = 0;
        am.flags = 0;
        am.credit = 0;
    }
    h.fragment_offset = 60;  // the rest of the Long above
    add(h, nullptr, 40);
    wire::Header ack;
    ack.kind = wire::Kind::ack;
    ack.secret = secret;
    ack.source = 0;
    ack.dest = 1;
    ack.ack = 99;
    ack.sack = 0xff00ff00u;
    add(ack, nullptr, 0);
    ack.kind = wire::Kind::probe;
    add(ack, nullptr, 0);
    return out;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t n) { return check_one(data, n); }

#ifndef SLUICE_LIBFUZZER
// The g++ driver: random edits of the seeds (bit flips, byte sets, 32-bit
// field sets, truncation, extension, splices), each input copied into a
// buffer of exactly its size.
//   fuzz_udp_wire SECONDS [SEED]   fuzz for SECONDS
//   fuzz_udp_wire --seeds DIR      write the seeds as files (libFuzzer's corpus)
int main(int argc, char **argv) {
    const auto start = seeds();
    if (argc == 3 && std::string(argv[1]) == "--seeds") {
        for (std::size_t i = 0; i < start.size(); ++i) {
            const std::string path = std::string(argv[2]) + "/seed" + std::to_string(i);
            std::FILE *f = std::fopen(path.c_str(), "wb");
            if (!f || std::fwrite(start[i].data(), 1, start[i].size(), f) != start[i].size()) {
                std::fprintf(stderr, "fuzz_udp_wire: cannot write %s\n", path.c_str());
                return 2;
            }
            std::fclose(f);
        }
        return 0;
    }
    const double seconds = argc > 1 ? std::atof(argv[1]) : 10;
    std::mt19937_64 rng(argc > 2 ? std::strtoull(argv[2], nullptr, 0) : 1);
    for (std::size_t i = 0; i < start.size(); ++i) {  // unsigned and signed in turn
        wire::Datagram d;
        const wire::Expect e = i % 2 ? signed_expect() : expect;
        if (wire::decode(start[i].data(), start[i].size(), e, d) != wire::Drop::none)
            fail("a seed does not decode", start[i].size());
    }
    std::size_t runs = 0, accepted = 0, shorts = 0;
    std::size_t by_reason[wire::drop_reasons] = {};
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < until) {
        for (int batch = 0; batch < 4096; ++batch) {
            std::vector<std::uint8_t> in = start[rng() % start.size()];
            const int edits = 1 + static_cast<int>(rng() % 4);
            for (int e = 0; e < edits; ++e) {
                const std::size_t at = in.empty() ? 0 : rng() % in.size();
                switch (rng() % 6) {
                case 0: if (!in.empty()) in[at] ^= static_cast<std::uint8_t>(1u << (rng() % 8)); break;
                case 1: if (!in.empty()) in[at] = static_cast<std::uint8_t>(rng()); break;
                case 2:
                    if (at + 4 <= in.size()) {
                        const std::uint32_t v = rng() % 2 ? static_cast<std::uint32_t>(rng() % 70) : static_cast<std::uint32_t>(rng());
                        std::memcpy(&in[at & ~std::size_t{3}], &v, 4);
                    }
                    break;
                case 3: in.resize(rng() % (in.size() + 1)); break;
                case 4: in.resize(in.size() + rng() % 80, static_cast<std::uint8_t>(rng())); break;
                case 5: {
                    const auto &other = start[rng() % start.size()];
                    const std::size_t cut = rng() % (std::min(in.size(), other.size()) + 1);
                    in.resize(cut);
                    in.insert(in.end(), other.begin() + static_cast<long>(cut), other.end());
                    break;
                }
                }
            }
            std::vector<std::uint8_t> exact(in.begin(), in.end());  // no slack for an overread to hide in
            check_one(exact.data(), exact.size());
            wire::Datagram d;
            const wire::Drop unsigned_drop = wire::decode(exact.data(), exact.size(), expect, d);
            const wire::Drop drop =
                unsigned_drop == wire::Drop::forged ? wire::decode(exact.data(), exact.size(), signed_expect(), d) : unsigned_drop;
            ++by_reason[static_cast<std::size_t>(drop)];
            accepted += drop == wire::Drop::none;
            shorts += drop == wire::Drop::none && d.has_am && d.am.category == 0;
            ++runs;
        }
    }
    std::printf("fuzz_udp_wire: %zu inputs in %.0f s, %zu accepted (%zu whole Shorts, the fast path's shape); dropped as",
                runs, seconds, accepted, shorts);
    for (std::size_t r = 1; r < wire::drop_reasons; ++r)
        std::printf(" %s %zu%s", wire::drop_name(static_cast<wire::Drop>(r)), by_reason[r], r + 1 < wire::drop_reasons ? "," : "\n");
    return 0;
}
#endif
