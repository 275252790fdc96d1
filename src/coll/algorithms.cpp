// src/coll/algorithms.cpp - the collective algorithms, as coroutines over
// a group of team ranks (the whole team, one host's members, or one rank
// per host).  Which runs when: docs/collectives.md.
//
// Every message of a collective is named by a tag: a phase, fixed per call
// site, and within it the sender's index in its group (fan-in) or the round
// (where each round has one sender per receiver).
#include "coll/coll.hpp"
#include "coll/engine.hpp"

#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <vector>

namespace sluice::coll {

void HostLayout::make(const Team &t, const std::vector<std::uint32_t> &host_of) {
    std::vector<std::uint32_t> host_seen;  // job host ids, in order of first member
    host_index.resize(t.size());
    for (Rank i = 0; i < t.size(); ++i) {
        const std::uint32_t h = host_of[t.to_job(i)];
        auto it = std::find(host_seen.begin(), host_seen.end(), h);
        if (it == host_seen.end()) {
            host_seen.push_back(h);
            leaders.push_back(i);
            it = host_seen.end() - 1;
        }
        host_index[i] = static_cast<std::uint32_t>(it - host_seen.begin());
    }
    for (Rank i = 0; i < t.size(); ++i)
        if (host_index[i] == host_index[t.rank()]) {
            if (i == t.rank()) me_in_host = static_cast<Rank>(host.size());
            host.push_back(i);
        }
}

namespace {

// A group: `n` team ranks, list[i] (or i itself when list is null); I am
// index `me` in it.
struct Group {
    const std::vector<Rank> *list = nullptr;
    Rank n = 0, me = 0;
    Rank at(Rank i) const { return list ? (*list)[i] : i; }
};
Group whole(const Op &op) { return Group{nullptr, op.size(), op.me()}; }
Group of(const std::vector<Rank> &list, Rank me_team) {
    Group g{&list, static_cast<Rank>(list.size()), 0};
    for (Rank i = 0; i < g.n; ++i)
        if (list[i] == me_team) g.me = i;
    return g;
}

std::size_t single_copy_threshold = 65536;  // SLUICE_COLL_SINGLE_COPY, 0: never
enum class Family { automatic, flat, hier } family = Family::automatic;
Family family_of(const std::string &s) {
    if (s == "flat") return Family::flat;
    if (s == "hier") return Family::hier;
    return Family::automatic;
}

void copy_in(void *dst, const void *src, std::size_t n) {
    if (n && dst != src) std::memmove(dst, src, n);
}

// Dissemination barrier: in round k, signal member me+2^k and wait for
// me-2^k.
Task barrier_group(Op &op, Group g, unsigned phase) {
    for (std::uint32_t k = 0; (Rank{1} << k) < g.n; ++k) {
        send(op, g.at(static_cast<Rank>((g.me + (std::uint64_t{1} << k)) % g.n)), tag(phase, k), nullptr, 0);
        (void)co_await recv(op, tag(phase, k));
    }
}

// Single-copy broadcast among members of one host: each member reads the
// root's buffer with process_vm_readv and acknowledges; a member the kernel
// refuses asks for the bytes in AM pieces instead.  Phases phase..phase+2.
struct PullDescriptor {
    std::uint64_t pid, addr, size;
};
Task bcast_pull(Op &op, Group g, Rank root, const void *from, void *to, std::size_t n, unsigned phase) {
    if (g.me == root) {
        const PullDescriptor d{static_cast<std::uint64_t>(::getpid()), reinterpret_cast<std::uint64_t>(from), n};
        for (Rank i = 0; i < g.n; ++i)
            if (i != root) send(op, g.at(i), tag(phase, 0), &d, sizeof d);
        copy_in(to, from, n);
        for (Rank i = 0; i < g.n; ++i) {
            if (i == root) continue;
            Message ack = co_await recv(op, tag(phase + 1, i));
            if (ack.size == 1 && ack.bytes()[0] == 0) send(op, g.at(i), tag(phase + 2, 0), from, n);
        }
        co_return;
    }
    Message dm = co_await recv(op, tag(phase, 0));
    PullDescriptor d{};
    std::memcpy(&d, dm.bytes(), std::min(sizeof d, dm.size));
    Message as_size;
    as_size.size = d.size;
    as_size.source = dm.source;
    const std::size_t m = size_check(op, as_size, n) ? n : std::min<std::size_t>(n, d.size);
    std::size_t done = 0;
    while (done < m) {
        iovec local{static_cast<char *>(to) + done, m - done};
        iovec remote{reinterpret_cast<void *>(d.addr + done), m - done};
        const ssize_t got = ::process_vm_readv(static_cast<pid_t>(d.pid), &local, 1, &remote, 1, 0);
        if (got <= 0) break;
        done += static_cast<std::size_t>(got);
    }
    const char ok = done == m ? 1 : 0;
    send(op, g.at(root), tag(phase + 1, g.me), &ok, 1);
    if (!ok) {
        Message data = co_await recv(op, tag(phase + 2, 0));
        std::memcpy(to, data.bytes(), std::min(m, data.size));
    }
}

// Binomial-tree broadcast over the group (relative to the root), or the
// single-copy pull for large messages when the group is on one host.
// Phases phase..phase+2.
Task bcast_group(Op &op, Group g, Rank root, const void *from, void *to, std::size_t n, unsigned phase) {
    if (g.n == 1) {
        copy_in(to, from, n);
        co_return;
    }
    if (single_copy_threshold && n >= single_copy_threshold) {
        const auto &host_of = env().host_of;
        bool one_host = true;
        for (Rank i = 1; i < g.n && one_host; ++i) one_host = host_of[op.job(g.at(i))] == host_of[op.job(g.at(0))];
        if (one_host) {
            co_await bcast_pull(op, g, root, from, to, n, phase);
            co_return;
        }
    }
    const Rank vr = (g.me + g.n - root) % g.n;
    Rank mask = 1;
    if (vr == 0) {
        copy_in(to, from, n);
        while (mask < g.n) mask <<= 1;
    } else {
        while (mask < g.n && !(vr & mask)) mask <<= 1;
        Message m = co_await recv(op, tag(phase, 0));
        if (size_check(op, m, n)) std::memcpy(to, m.bytes(), n);
        else std::memcpy(to, m.bytes(), std::min(n, m.size));
    }
    for (mask >>= 1; mask > 0; mask >>= 1)
        if (vr + mask < g.n) send(op, g.at((vr + mask + root) % g.n), tag(phase, 0), to, n);
}

// Combines a partner's contribution into `acc` (`count` elements).
void combine(Op &op, const Reduction &r, char *acc, const Message &m, std::size_t count) {
    const std::size_t bytes = count * r.elem;
    const std::size_t c = size_check(op, m, bytes) ? count : std::min(bytes, m.size) / r.elem;
    r.apply(acc, m.bytes(), c);
}

// Binomial-tree reduction to group member `root`; acc holds my part and,
// on the root, the result.
Task reduce_group(Op &op, Group g, Rank root, char *acc, const Reduction &r, std::size_t count, unsigned phase) {
    const Rank vr = (g.me + g.n - root) % g.n;
    for (std::uint32_t k = 0; (Rank{1} << k) < g.n; ++k) {
        const Rank mask = Rank{1} << k;
        if (vr & mask) {
            send(op, g.at(((vr & ~mask) + root) % g.n), tag(phase, k), acc, count * r.elem);
            co_return;
        }
        if ((vr | mask) < g.n) combine(op, r, acc, co_await recv(op, tag(phase, k)), count);
    }
}

// Recursive doubling: every member ends with the result in acc.  With a
// member count that is not a power of two, the first 2*rem members fold
// in pairs before and unfold after.
Task allreduce_group(Op &op, Group g, char *acc, const Reduction &r, std::size_t count, unsigned phase) {
    const std::size_t bytes = count * r.elem;
    Rank pof2 = 1;
    while (pof2 * 2 <= g.n) pof2 *= 2;
    const Rank rem = g.n - pof2;
    const std::uint32_t unfold = 0xfffff;
    Rank vr;
    if (g.me < 2 * rem) {
        if (g.me % 2 == 0) {
            send(op, g.at(g.me + 1), tag(phase, 0), acc, bytes);
            Message m = co_await recv(op, tag(phase, unfold));
            std::memcpy(acc, m.bytes(), std::min(bytes, m.size));
            co_return;
        }
        combine(op, r, acc, co_await recv(op, tag(phase, 0)), count);
        vr = g.me / 2;
    } else {
        vr = g.me - rem;
    }
    std::uint32_t round = 1;
    for (Rank mask = 1; mask < pof2; mask <<= 1, ++round) {
        const Rank pv = vr ^ mask;
        const Rank partner = pv < rem ? pv * 2 + 1 : pv + rem;
        send(op, g.at(partner), tag(phase, round), acc, bytes);
        combine(op, r, acc, co_await recv(op, tag(phase, round)), count);
    }
    if (g.me < 2 * rem) send(op, g.at(g.me - 1), tag(phase, unfold), acc, bytes);
}

// Host-first: the host's members combine at their leader, leaders run the
// group algorithm among themselves, leaders hand the result back down.
bool hier_for(const Team &t) {
    const HostLayout &l = t.handle()->layout;
    if (family == Family::flat) return false;
    if (family == Family::hier) return true;
    return l.leaders.size() > 1 && l.leaders.size() < t.size();
}

// The members that stand for each host when `root` must be one of them:
// the leaders, with root in its host's place.
std::vector<Rank> reps_with(const Team &t, Rank root) {
    const HostLayout &l = t.handle()->layout;
    std::vector<Rank> reps = l.leaders;
    reps[l.host_index[root]] = root;
    return reps;
}
// The index of team rank `r` in a group list (it is there).
Rank index_in(const std::vector<Rank> &list, Rank r) {
    return static_cast<Rank>(std::find(list.begin(), list.end(), r) - list.begin());
}

Task barrier_task(Op &op) {
    const Team &t = op.team->team;
    if (!hier_for(t)) {
        co_await barrier_group(op, whole(op), 1);
        co_return;
    }
    const HostLayout &l = op.team->layout;
    const Group host = of(l.host, op.me());
    Reduction none;
    none.elem = 1;
    none.builtin = [](void *, const void *, std::size_t) {};
    char byte = 0;
    co_await reduce_group(op, host, 0, &byte, none, 0, 1);
    if (host.me == 0) co_await barrier_group(op, of(l.leaders, op.me()), 2);
    co_await bcast_group(op, host, 0, &byte, &byte, 0, 3);
}

Task broadcast_task(Op &op, Rank root, void *dst, const void *src, std::size_t n) {
    const Team &t = op.team->team;
    if (!hier_for(t)) {
        co_await bcast_group(op, whole(op), root, src, dst, n, 1);
        co_return;
    }
    const HostLayout &l = op.team->layout;
    const std::vector<Rank> reps = reps_with(t, root);
    const Rank my_rep = reps[l.host_index[op.me()]];
    if (my_rep == op.me()) co_await bcast_group(op, of(reps, op.me()), index_in(reps, root), src, dst, n, 1);
    const Group host = of(l.host, op.me());
    co_await bcast_group(op, host, index_in(l.host, my_rep), dst, dst, n, 4);
}

Task reduce_task(Op &op, Rank root, void *dst, const void *src, Reduction r, std::size_t count) {
    const Team &t = op.team->team;
    const std::size_t bytes = count * r.elem;
    op.scratch.assign(static_cast<const char *>(src), static_cast<const char *>(src) + bytes);
    char *acc = op.scratch.data();
    const bool all = root == SLUICE_RANK_INVALID;
    if (!hier_for(t)) {
        if (all) co_await allreduce_group(op, whole(op), acc, r, count, 1);
        else co_await reduce_group(op, whole(op), root, acc, r, count, 1);
    } else {
        const HostLayout &l = op.team->layout;
        const std::vector<Rank> reps = all ? l.leaders : reps_with(t, root);
        const Rank my_rep = reps[l.host_index[op.me()]];
        const Group host = of(l.host, op.me());
        co_await reduce_group(op, host, index_in(l.host, my_rep), acc, r, count, 1);
        if (my_rep == op.me()) {
            if (all) co_await allreduce_group(op, of(reps, op.me()), acc, r, count, 2);
            else co_await reduce_group(op, of(reps, op.me()), index_in(reps, root), acc, r, count, 2);
        }
        if (all) co_await bcast_group(op, host, index_in(l.host, my_rep), acc, acc, bytes, 3);
    }
    if (all || op.me() == root) copy_in(dst, acc, bytes);
}

// Up to `direct_allgather_max` members, every member sends its block to
// every other one, starting with its successor so that no member is
// everyone's first target: one round of p - 1 messages.  Above, Bruck's
// algorithm: in round k each member sends what it has gathered (its own
// block and its 2^k - 1 successors') to the member 2^k before it and
// receives as much from the member 2^k after it: ceil(log2 p) rounds,
// each member talking to 2 ceil(log2 p) others (a network conduit that
// connects on demand, ibv, then makes that many connections, not p - 1).
constexpr Rank direct_allgather_max = 16;

Task allgather_task(Op &op, void *dst, const void *src, std::size_t n) {
    const Rank p = op.size(), me = op.me();
    if (p <= direct_allgather_max) {
        for (Rank k = 1; k < p; ++k) send(op, (me + k) % p, tag(1, me), src, n);
        copy_in(static_cast<char *>(dst) + std::size_t{me} * n, src, n);
        for (Rank k = 1; k < p; ++k) {
            const Rank from = (me + p - k) % p;
            Message m = co_await recv(op, tag(1, from));
            size_check(op, m, n);
            std::memcpy(static_cast<char *>(dst) + std::size_t{from} * n, m.bytes(), std::min(n, m.size));
        }
        co_return;
    }
    // Block i of `gathered` is member (me + i) % p's and sizes[i] the size
    // it passed.  Each message carries its blocks' sizes before them, so
    // every member learns every member's size, and sizes that differ fail
    // the call on every member, as the direct exchange does.
    std::vector<char> gathered(std::size_t{p} * n), out;
    std::vector<std::uint64_t> sizes(p);
    copy_in(gathered.data(), src, n);
    sizes[0] = n;
    std::uint32_t round = 0;
    for (Rank have = 1; have < p; ++round) {
        const Rank count = std::min(have, p - have);
        const std::size_t head = std::size_t{count} * sizeof sizes[0], bytes = std::size_t{count} * n;
        out.resize(head + bytes);
        std::memcpy(out.data(), sizes.data(), head);
        if (bytes) std::memcpy(out.data() + head, gathered.data(), bytes);
        send(op, (me + p - have) % p, tag(2, round), out.data(), out.size());
        const Message m = co_await recv(op, tag(2, round));
        if (m.size >= head) {
            std::memcpy(sizes.data() + have, m.bytes(), head);
            if (bytes) std::memcpy(gathered.data() + std::size_t{have} * n, m.bytes() + head, std::min(bytes, m.size - head));
        } else {
            std::fill_n(sizes.begin() + have, count, ~std::uint64_t{0});
        }
        have += count;
    }
    for (Rank i = 1; i < p && op.status == Status::ok; ++i)
        if (sizes[i] != n)
            op.fail(base::report(Status::argument, op.name, "pass the same sizes on every member of the team",
                                 "rank %u passed %llu bytes, this rank %zu", op.job((me + i) % p),
                                 static_cast<unsigned long long>(sizes[i]), n));
    for (Rank i = 0; i < p && n; ++i)
        std::memcpy(static_cast<char *>(dst) + std::size_t{(me + i) % p} * n, gathered.data() + std::size_t{i} * n, n);
}

Task alltoall_task(Op &op, void *dst, const void *src, std::size_t n) {
    const Rank p = op.size(), me = op.me();
    for (Rank k = 1; k < p; ++k) {
        const Rank to = (me + k) % p;
        send(op, to, tag(1, me), static_cast<const char *>(src) + std::size_t{to} * n, n);
    }
    copy_in(static_cast<char *>(dst) + std::size_t{me} * n, static_cast<const char *>(src) + std::size_t{me} * n, n);
    for (Rank k = 1; k < p; ++k) {
        const Rank from = (me + p - k) % p;
        Message m = co_await recv(op, tag(1, from));
        size_check(op, m, n);
        std::memcpy(static_cast<char *>(dst) + std::size_t{from} * n, m.bytes(), std::min(n, m.size));
    }
}

} // namespace

void algorithms_configure(const std::string &algorithm, std::size_t single_copy) {
    family = family_of(algorithm);
    single_copy_threshold = single_copy;
}

bool hierarchical(const Team &team) { return hier_for(team); }
bool algorithm_automatic() { return family == Family::automatic; }

Task task_barrier(Op &op) { return barrier_task(op); }
Task task_broadcast(Op &op, Rank root, void *dst, const void *src, std::size_t n) {
    return broadcast_task(op, root, dst, src, n);
}
Task task_reduce(Op &op, Rank root, void *dst, const void *src, const Reduction &r, std::size_t count) {
    return reduce_task(op, root, dst, src, r, count);
}
Task task_allgather(Op &op, void *dst, const void *src, std::size_t n) { return allgather_task(op, dst, src, n); }
Task task_alltoall(Op &op, void *dst, const void *src, std::size_t n) { return alltoall_task(op, dst, src, n); }

} // namespace sluice::coll
