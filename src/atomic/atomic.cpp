// src/atomic/atomic.cpp - atomic domains: creation (the collective choice of
// one path), argument checks, the cpu path and the AM path.
#include "atomic/atomic.hpp"

#include "atomic/cpu.hpp"
#include "base/knobs.hpp"
#include "rma/rma.hpp"

#include <cinttypes>
#include <cstring>
#include <memory>
#include <mutex>

namespace sluice::atomic {
namespace {

coll::ClientEnv env;
bool native = true;  // SLUICE_NATIVE_RMA: mapped peers may be used directly

// Every domain ever created, freed at finalize: a destroyed one stays
// readable so a late use is reported (its `live` is false).
std::mutex domains_lock;
std::vector<std::unique_ptr<sluice_ad>> domains;

constexpr unsigned order_flags = SLUICE_AD_ACQUIRE | SLUICE_AD_RELEASE;

template <class T>
constexpr sluice_dt_t dt_of() {
    if constexpr (std::is_same_v<T, std::int32_t>) return SLUICE_DT_I32;
    else if constexpr (std::is_same_v<T, std::uint32_t>) return SLUICE_DT_U32;
    else if constexpr (std::is_same_v<T, std::int64_t>) return SLUICE_DT_I64;
    else if constexpr (std::is_same_v<T, std::uint64_t>) return SLUICE_DT_U64;
    else if constexpr (std::is_same_v<T, float>) return SLUICE_DT_FLT;
    else return SLUICE_DT_DBL;
}

const char *dt_name(sluice_dt_t t) {
    switch (t) {
    case SLUICE_DT_I32: return "i32";
    case SLUICE_DT_U32: return "u32";
    case SLUICE_DT_I64: return "i64";
    case SLUICE_DT_U64: return "u64";
    case SLUICE_DT_FLT: return "flt";
    case SLUICE_DT_DBL: return "dbl";
    default: return "?";
    }
}
bool dt_float(sluice_dt_t t) { return t == SLUICE_DT_FLT || t == SLUICE_DT_DBL; }
std::size_t dt_size(sluice_dt_t t) { return t == SLUICE_DT_I32 || t == SLUICE_DT_U32 || t == SLUICE_DT_FLT ? 4 : 8; }

bool op_has_operand(unsigned op) {
    return op != SLUICE_OP_GET && op != SLUICE_OP_INC && op != SLUICE_OP_FINC && op != SLUICE_OP_DEC &&
           op != SLUICE_OP_FDEC;
}
bool op_is_cas(unsigned op) { return op == SLUICE_OP_CAS || op == SLUICE_OP_FCAS; }

void split(std::uint64_t v, std::uint32_t *out) {
    out[0] = static_cast<std::uint32_t>(v);
    out[1] = static_cast<std::uint32_t>(v >> 32);
}
std::uint64_t join(const std::uint32_t *in) { return static_cast<std::uint64_t>(in[1]) << 32 | in[0]; }

// ---- the AM path ---------------------------------------------------------
//
// Request (Short, 7, 9 or 11 arguments): target address (2), operation word
// (op | type << 8 | ordering flags << 8, see opword), completion counter
// (2), result pointer (2, 0 for none), then op1 (2) and op2 (2) where the
// operation has them.  Reply: counter (2), operation word, then result
// pointer (2) and old value (2) for a fetching operation.

std::uint32_t opword(unsigned op, sluice_dt_t type, unsigned flags) {
    return op | static_cast<std::uint32_t>(type) << 8 | (flags & order_flags) << 8;
}

template <class T>
void target_apply(sluice_token_t token, const std::uint32_t *args, unsigned nargs) {
    const std::uint32_t word = args[2];
    const unsigned op = word & 0xff;
    const T a = nargs >= 9 ? cpu::value<T>(static_cast<cpu::Word<T>>(join(args + 7))) : T{};
    const T b = nargs >= 11 ? cpu::value<T>(static_cast<cpu::Word<T>>(join(args + 9))) : T{};
    const T old = cpu::apply(reinterpret_cast<T *>(join(args)), op, a, b, (word >> 8) & order_flags);
    std::uint32_t reply[7];
    reply[0] = args[3];
    reply[1] = args[4];
    reply[2] = word;
    unsigned n = 3;
    if (args[5] | args[6]) {
        reply[3] = args[5];
        reply[4] = args[6];
        split(cpu::bits(old), reply + 5);
        n = 7;
    }
    am::Send m;
    m.handler = am::sys_atomic_reply;
    m.args = reply;
    m.nargs = n;
    (void)env.am->system_reply(token, m);
}

void on_atomic(sluice_token_t token, void *, std::size_t, const std::uint32_t *args, unsigned nargs) {
    switch (static_cast<sluice_dt_t>((args[2] >> 8) & 0xff)) {
    case SLUICE_DT_I32: return target_apply<std::int32_t>(token, args, nargs);
    case SLUICE_DT_U32: return target_apply<std::uint32_t>(token, args, nargs);
    case SLUICE_DT_I64: return target_apply<std::int64_t>(token, args, nargs);
    case SLUICE_DT_U64: return target_apply<std::uint64_t>(token, args, nargs);
    case SLUICE_DT_FLT: return target_apply<float>(token, args, nargs);
    case SLUICE_DT_DBL: return target_apply<double>(token, args, nargs);
    default: base::fatal("atomic", "this is a Sluice bug", "atomic request of unknown type %u", (args[2] >> 8) & 0xff);
    }
}

void on_atomic_reply(sluice_token_t, void *, std::size_t, const std::uint32_t *args, unsigned nargs) {
    auto *counter = reinterpret_cast<std::atomic<std::uint64_t> *>(join(args));
    if (nargs >= 7) {
        void *result = reinterpret_cast<void *>(join(args + 3));
        const std::uint64_t old = join(args + 5);
        if (dt_size(static_cast<sluice_dt_t>((args[2] >> 8) & 0xff)) == 4) {
            const auto low = static_cast<std::uint32_t>(old);
            std::memcpy(result, &low, 4);
        } else {
            std::memcpy(result, &old, 8);
        }
    }
    // Release: the result is written before the waiter sees completion.
    counter->fetch_sub(1, std::memory_order_release);
}

template <class T>
Status am_send(Rank job, void *addr, unsigned op, unsigned flags, T *result, T op1, T op2,
               std::atomic<std::uint64_t> &counter, const char *name) {
    std::uint32_t args[11];
    split(reinterpret_cast<std::uint64_t>(addr), args);
    args[2] = opword(op, dt_of<T>(), flags);
    split(reinterpret_cast<std::uint64_t>(&counter), args + 3);
    split(reinterpret_cast<std::uint64_t>(result), args + 5);
    unsigned n = 7;
    if (op_has_operand(op)) {
        split(cpu::bits(op1), args + 7);
        n = 9;
        if (op_is_cas(op)) {
            split(cpu::bits(op2), args + 9);
            n = 11;
        }
    }
    if (flags & SLUICE_AD_RELEASE) std::atomic_thread_fence(std::memory_order_release);
    am::Send m;
    m.handler = am::sys_atomic;
    m.args = args;
    m.nargs = n;
    counter.fetch_add(1, std::memory_order_relaxed);
    if (Status s = env.am->system_request(job, m); s != Status::ok) {
        counter.fetch_sub(1, std::memory_order_relaxed);
        return base::report(s, name, "see the conduit's message above", "the transport failed sending to rank %u", job);
    }
    return Status::ok;
}

// ---- the NIC path --------------------------------------------------------

template <class T>
Status nic_post(conduit::NicAtomics &nic, Rank job, void *addr, unsigned op, unsigned flags, T *result, T op1, T op2,
                std::atomic<std::uint64_t> &counter, const char *name) {
    if (flags & SLUICE_AD_RELEASE) std::atomic_thread_fence(std::memory_order_release);
    for (;;) {
        const Status s = nic.nic_atomic(job, reinterpret_cast<std::uint64_t>(addr), static_cast<sluice_aop_t>(op),
                                        dt_of<T>(), cpu::bits(op1), cpu::bits(op2), result, counter);
        if (s == Status::ok) return s;
        if (s != Status::not_ready)
            return base::report(s, name, "see the conduit's message above", "the NIC atomic to rank %u failed", job);
        env.poll();  // no room: completions free some
    }
}

template <class T>
Status nic_start(conduit::NicAtomics &nic, Rank job, void *addr, unsigned op, unsigned flags, T *result, T op1, T op2,
                 Mode mode, sluice_event **ev, const char *name) {
    switch (mode) {
    case Mode::blocking: {
        std::atomic<std::uint64_t> counter{0};
        if (Status s = nic_post(nic, job, addr, op, flags, result, op1, op2, counter, name); s != Status::ok) return s;
        while (counter.load(std::memory_order_acquire) != 0) env.poll();
        return Status::ok;
    }
    case Mode::nb: {
        auto *e = new sluice_event;
        if (Status s = nic_post(nic, job, addr, op, flags, result, op1, op2, e->pending, name); s != Status::ok) {
            delete e;
            return s;
        }
        *ev = e;
        return Status::ok;
    }
    case Mode::nbi:
        return nic_post(nic, job, addr, op, flags, result, op1, op2, rma::nbi_counter(rma::NbiCategory::atomics), name);
    }
    return Status::ok;
}

// ---- checks --------------------------------------------------------------

// Every argument of one operation; reports the first problem.
Status check(const sluice_ad *ad, sluice_dt_t type, bool has_result, Rank rank, const void *addr, unsigned op,
             unsigned flags, Mode mode, sluice_event **ev, const char *name) {
    if (!ad)
        return base::report(Status::argument, name, "pass a domain from sluice_ad_create", "null atomic domain");
    if (!ad->live)
        return base::report(Status::argument, name, "create a new domain (sluice_ad_create)",
                            "the atomic domain was destroyed");
    if (ad->type != type)
        return base::report(Status::argument, name, "call the sluice_ad_op*_<type> function of the domain's type",
                            "a %s operation on a %s domain", dt_name(type), dt_name(ad->type));
    if (op >= SLUICE_OP_COUNT_ || !(ad->ops & SLUICE_AOP_BIT(op)))
        return base::report(Status::argument, name, "add the operation to the ops mask at sluice_ad_create",
                            "operation %u is not in the domain's set (ops 0x%" PRIx64 ")", op, ad->ops);
    const bool fetching = (fetching_ops & SLUICE_AOP_BIT(op)) != 0;
    if (fetching && !has_result)
        return base::report(Status::argument, name, "pass where the old value goes",
                            "fetching operation %u with a null result pointer", op);
    if (!fetching && has_result)
        return base::report(Status::argument, name, "pass a null result, or use the fetching form of the operation",
                            "operation %u fetches nothing but a result pointer was given", op);
    if (flags & ~order_flags)
        return base::report(Status::argument, name, "pass 0, SLUICE_AD_ACQUIRE and/or SLUICE_AD_RELEASE",
                            "unknown flags 0x%x", flags & ~order_flags);
    if (mode == Mode::nb && !ev)
        return base::report(Status::argument, name, "pass where to store the event", "null event pointer");
    if (rank >= ad->job.size())
        return base::report(Status::rank, name, "use a team rank below the domain's team size",
                            "rank %u, but the domain's team has %zu members", rank, ad->job.size());
    const Rank job = ad->job[rank];
    const std::size_t size = dt_size(type);
    const auto a = reinterpret_cast<std::uint64_t>(addr);
    if (!env.segments->attached)
        return base::report(Status::segment, name, "call sluice_segment_attach (collective) before atomics",
                            "no segment is attached yet (target %p of rank %u)", addr, job);
    if (!env.segments->contains(job, a, size))
        return base::report(Status::segment, name, "target a word inside the rank's segment (sluice_segment_info)",
                            "%zu bytes at %p are outside the segment of job rank %u", size, addr, job);
    if (a % size)
        return base::report(Status::argument, name, "align the target to the type's size",
                            "target %p of rank %u is not aligned to %zu bytes", addr, job, size);
    return Status::ok;
}

} // namespace

const char *path_name(Path p) {
    switch (p) {
    case Path::cpu: return "cpu";
    case Path::cpu_am: return "cpu+am";
    case Path::am: return "am";
    case Path::nic: return "nic";
    }
    return "?";
}

void conduit_path(bool load_store, bool nic, const char *&path, const char *&why) {
    if (load_store) {
        path = "cpu";
        why = "peers map each other's segments: CPU atomics on the mapped words (am with SLUICE_NATIVE_RMA=0)";
    } else if (nic) {
        path = "nic";
        why = "the network's atomics when every member is reached over this conduit and it applies every operation "
              "of the domain on its type; else am";
    } else {
        path = "am";
        why = "an AM to the target, whose handler applies CPU atomics there (no NIC atomics in this conduit)";
    }
}

Status init(const coll::ClientEnv &e) {
    env = e;
    native = base::knob_bool(base::Knob::NATIVE_RMA);
    env.am->system_register(am::sys_atomic, on_atomic);
    env.am->system_register(am::sys_atomic_reply, on_atomic_reply);
    return Status::ok;
}

void fini() {
    std::lock_guard<std::mutex> lock(domains_lock);
    domains.clear();
}

namespace {

// What one member offers at creation: its arguments (every member must pass
// the same) and which path it could take.
struct Offer {
    std::uint64_t ops;
    std::uint32_t type;
    std::uint32_t flags;
    std::uint8_t ok;           // its arguments passed its own checks
    std::uint8_t all_direct;   // every member's segment is mapped here
    std::uint8_t some_direct;  // some other member's segment is
    std::uint8_t nic;          // every other member is reached over one NIC that applies every op
    std::uint8_t pad[4];
};

Status create_check(sluice_dt_t type, std::uint64_t ops, unsigned flags, sluice_ad **out) {
    const char *op = "ad_create";
    if (!out) return base::report(Status::argument, op, "pass where to store the domain", "null output pointer");
    if (type < SLUICE_DT_I32 || type > SLUICE_DT_DBL)
        return base::report(Status::argument, op, "use SLUICE_DT_I32, _U32, _I64, _U64, _FLT or _DBL",
                            "type %d has no atomics", static_cast<int>(type));
    if (ops == 0 || (ops & ~all_ops))
        return base::report(Status::argument, op, "pass a nonzero mask of SLUICE_AOP_BIT(SLUICE_OP_*)",
                            "ops mask 0x%" PRIx64, ops);
    if (dt_float(type) && (ops & bitwise_ops))
        return base::report(Status::argument, op, "drop AND, OR and XOR from the mask of a floating-point domain",
                            "bitwise operations on %s", dt_name(type));
    if (flags)
        return base::report(Status::argument, op, "pass 0 (ordering is chosen per operation)", "unknown flags 0x%x",
                            flags);
    return Status::ok;
}

// Why the domain got `path`, in one line (sluice_ad_path).
std::string path_why(Path path, const coll::Team &team, const std::string &no_nic) {
    switch (path) {
    case Path::cpu:
        return team.size() == 1 ? "one member: CPU atomics on its own segment"
                                : "every member maps every member's segment (one host, SLUICE_NATIVE_RMA=1): CPU "
                                  "atomics on the mapped words";
    case Path::cpu_am:
        return "some members map each other's segments, others do not: mapped targets by CPU atomics, the rest by an "
               "AM whose handler applies CPU atomics at the target (coherent: every update is a CPU atomic on the "
               "target's memory)";
    case Path::nic:
        return std::string("every member reaches every other over ") + env.am->route(team.to_job(team.rank() == 0 ? 1 : 0))->name() +
               ", whose network applies every operation of the domain: NIC atomics for every update, the owner's "
               "own included";
    case Path::am:
        break;
    }
    std::string why = "no member maps another's segment (";
    if (!native) why += "SLUICE_NATIVE_RMA=0";
    else if (!team.one_host()) why += "members on several hosts";
    else why += "peers routed over the network conduit, SLUICE_ROUTE=network";
    why += "): an AM to the target, whose handler applies CPU atomics";
    const conduit::Transport *peer = env.am->route(team.to_job(team.rank() == 0 ? 1 : 0));
    if (!peer->capabilities().load_store) {
        why += "; no NIC atomics: ";
        why += no_nic.empty() ? "not every member offered them" : no_nic;
    }
    return why;
}

} // namespace

Status domain_create(sluice_team_t handle, sluice_dt_t type, std::uint64_t ops, unsigned flags, sluice_ad **out) {
    const char *op = "ad_create";
    if (am::AmEngine::in_handler())
        return base::report(Status::context, op, "create domains outside handlers", "called from a handler");
    coll::Team *team = coll::team_of(handle, op);
    if (!team) return Status::argument;
    const Status mine = create_check(type, ops, flags, out);

    const Rank n = team->size(), me = team->rank();
    auto ad = std::make_unique<sluice_ad>();
    ad->job.resize(n);
    ad->direct.assign(n, 0);
    Offer offer{};
    offer.ops = ops;
    offer.type = static_cast<std::uint32_t>(type);
    offer.flags = flags;
    offer.ok = mine == Status::ok;
    offer.all_direct = 1;
    for (Rank r = 0; r < n; ++r) {
        const Rank j = team->to_job(r);
        ad->job[r] = j;
        const bool mapped = r == me || (native && env.am->route(j)->capabilities().load_store);
        ad->direct[r] = mapped;
        if (!mapped) offer.all_direct = 0;
        if (mapped && r != me) offer.some_direct = 1;
    }
    // The NIC path: every other member over one network transport whose
    // NIC applies every operation of the domain.
    conduit::NicAtomics *nic = nullptr;
    std::string no_nic;
    if (mine == Status::ok && n > 1 && native) {
        conduit::Transport *t = nullptr;
        for (Rank r = 0; r < n; ++r) {
            if (r == me) continue;
            conduit::Transport *rt = env.am->route(ad->job[r]);
            if (t && rt != t) {
                t = nullptr;
                no_nic = "members are reached over different conduits";
                break;
            }
            t = rt;
        }
        if (t && !t->capabilities().load_store) {
            nic = dynamic_cast<conduit::NicAtomics *>(t);
            if (!nic) no_nic = std::string(t->name()) + " has no NIC atomics";
            else if (no_nic = nic->nic_atomics_support(type, ops); !no_nic.empty()) nic = nullptr;
        }
    }
    offer.nic = nic != nullptr;
    std::vector<Offer> offers(n);
    if (Status s = coll::team_allgather(*team, &offer, offers.data(), sizeof offer, op); s != Status::ok) return s;
    if (mine != Status::ok) return mine;

    bool all_direct = true, some_direct = false, all_nic = true;
    for (Rank r = 0; r < n; ++r) {
        const Offer &o = offers[r];
        if (!o.ok)
            return base::report(Status::argument, op, "pass the same valid arguments on every member",
                                "team rank %u refused its arguments (see its message)", r);
        if (o.ops != ops || o.type != offer.type || o.flags != flags)
            return base::report(Status::argument, op, "pass the same type, ops and flags on every member",
                                "team rank %u passed type %u, ops 0x%" PRIx64 ", flags 0x%x; this rank type %u, "
                                "ops 0x%" PRIx64 ", flags 0x%x",
                                r, o.type, o.ops, o.flags, offer.type, ops, flags);
        all_nic = all_nic && o.nic;
        all_direct = all_direct && o.all_direct;
        some_direct = some_direct || o.some_direct;
    }
    ad->path = all_direct ? Path::cpu : all_nic ? Path::nic : some_direct ? Path::cpu_am : Path::am;
    if (ad->path == Path::nic) {
        ad->nic = nic;
        ad->direct.assign(n, 0);  // the owner's own updates go through the NIC as well
    }
    ad->type = type;
    ad->ops = ops;
    ad->team = team;
    ad->why = path_why(ad->path, *team, no_nic);
    ad->pub = {ad->job.data(), ad->direct.data(), ops, n, static_cast<int>(type)};
    if (static_cast<void *>(ad.get()) != static_cast<void *>(&ad->pub))
        base::fatal(op, "this is a Sluice bug", "the domain's inline part is not at the start of its handle");
    *out = ad.get();
    std::lock_guard<std::mutex> lock(domains_lock);
    domains.push_back(std::move(ad));
    return Status::ok;
}

Status domain_destroy(sluice_ad *ad) {
    const char *op = "ad_destroy";
    if (!ad) return base::report(Status::argument, op, "pass a domain from sluice_ad_create", "null atomic domain");
    if (!ad->live)
        return base::report(Status::argument, op, "destroy each domain once", "the atomic domain was destroyed already");
    if (am::AmEngine::in_handler())
        return base::report(Status::context, op, "destroy domains outside handlers", "called from a handler");
    // Collective: no member leaves while another may still create or use
    // the domain with it.
    std::uint8_t in = 1;
    std::vector<std::uint8_t> out(ad->team->size());
    if (Status s = coll::team_allgather(*ad->team, &in, out.data(), 1, op); s != Status::ok) return s;
    ad->live = false;
    ad->pub.ops = 0;  // the inline calls go to the library, which reports
    return Status::ok;
}

Status domain_path(sluice_ad *ad, const char **path, const char **why) {
    const char *op = "ad_path";
    if (!ad) return base::report(Status::argument, op, "pass a domain from sluice_ad_create", "null atomic domain");
    if (!ad->live)
        return base::report(Status::argument, op, "ask while the domain lives", "the atomic domain was destroyed");
    if (!path || !why) return base::report(Status::argument, op, "pass both output pointers", "null output pointer");
    *path = ad->nic ? ad->nic->nic_atomics_name() : path_name(ad->path);
    *why = ad->why.c_str();
    return Status::ok;
}

template <class T>
Status operate(sluice_ad *ad, T *result, Rank rank, void *addr, sluice_aop_t op, T op1, T op2, unsigned flags,
               Mode mode, sluice_event **ev, const char *name) {
    if (Status s = check(ad, dt_of<T>(), result != nullptr, rank, addr, op, flags, mode, ev, name); s != Status::ok)
        return s;
    const Rank job = ad->job[rank];
    if (ad->direct[rank]) {
        const am::SegmentTable::Entry &e = env.segments->entries[job];
        char *view = job == env.rank ? static_cast<char *>(addr)
                     : e.view       ? e.view + (reinterpret_cast<std::uint64_t>(addr) - e.base)
                                    : nullptr;
        if (__builtin_expect(view != nullptr, 1)) {
            const T old = cpu::apply(reinterpret_cast<T *>(view), op, op1, op2, flags);
            if (result) *result = old;
            if (mode == Mode::nb) *ev = SLUICE_EVENT_DONE;
            return Status::ok;
        }
    }
    if (am::AmEngine::in_handler())
        return base::report(Status::context, name, "operate on this target after the handler returns",
                            "an atomic on rank %u needs an AM, which a handler may not send", job);
    if (ad->nic) return nic_start(*ad->nic, job, addr, op, flags, result, op1, op2, mode, ev, name);
    switch (mode) {
    case Mode::blocking: {
        std::atomic<std::uint64_t> counter{0};
        if (Status s = am_send(job, addr, op, flags, result, op1, op2, counter, name); s != Status::ok) return s;
        while (counter.load(std::memory_order_acquire) != 0) env.poll();
        return Status::ok;
    }
    case Mode::nb: {
        auto *e = new sluice_event;
        if (Status s = am_send(job, addr, op, flags, result, op1, op2, e->pending, name); s != Status::ok) {
            delete e;
            return s;
        }
        *ev = e;
        return Status::ok;
    }
    case Mode::nbi:
        return am_send(job, addr, op, flags, result, op1, op2, rma::nbi_counter(rma::NbiCategory::atomics), name);
    }
    return Status::ok;
}

template Status operate<std::int32_t>(sluice_ad *, std::int32_t *, Rank, void *, sluice_aop_t, std::int32_t,
                                      std::int32_t, unsigned, Mode, sluice_event **, const char *);
template Status operate<std::uint32_t>(sluice_ad *, std::uint32_t *, Rank, void *, sluice_aop_t, std::uint32_t,
                                       std::uint32_t, unsigned, Mode, sluice_event **, const char *);
template Status operate<std::int64_t>(sluice_ad *, std::int64_t *, Rank, void *, sluice_aop_t, std::int64_t,
                                      std::int64_t, unsigned, Mode, sluice_event **, const char *);
template Status operate<std::uint64_t>(sluice_ad *, std::uint64_t *, Rank, void *, sluice_aop_t, std::uint64_t,
                                       std::uint64_t, unsigned, Mode, sluice_event **, const char *);
template Status operate<float>(sluice_ad *, float *, Rank, void *, sluice_aop_t, float, float, unsigned, Mode,
                               sluice_event **, const char *);
template Status operate<double>(sluice_ad *, double *, Rank, void *, sluice_aop_t, double, double, unsigned, Mode,
                                sluice_event **, const char *);

} // namespace sluice::atomic
