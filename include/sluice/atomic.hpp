// sluice/atomic.hpp - C++ API of atomic domains (the sluice_ad_* calls of
// <sluice.h>; the rules are documented there and in docs/atomics.md).
// Included by <sluice/sluice.hpp>.  No call throws; every status is
// [[nodiscard]].
#pragma once
#include <sluice.h>

#include <cstdint>
#include <string_view>
#include <type_traits>
#include <utility>

namespace sluice {

enum class AtomicOp : int {
    set = SLUICE_OP_SET, get = SLUICE_OP_GET, swap = SLUICE_OP_SWAP,
    cas = SLUICE_OP_CAS, fcas = SLUICE_OP_FCAS,
    add = SLUICE_OP_ADD, fadd = SLUICE_OP_FADD, sub = SLUICE_OP_SUB, fsub = SLUICE_OP_FSUB,
    inc = SLUICE_OP_INC, finc = SLUICE_OP_FINC, dec = SLUICE_OP_DEC, fdec = SLUICE_OP_FDEC,
    mult = SLUICE_OP_MULT, fmult = SLUICE_OP_FMULT, min = SLUICE_OP_MIN, fmin = SLUICE_OP_FMIN,
    max = SLUICE_OP_MAX, fmax = SLUICE_OP_FMAX, and_ = SLUICE_OP_AND, fand = SLUICE_OP_FAND,
    or_ = SLUICE_OP_OR, for_ = SLUICE_OP_FOR, xor_ = SLUICE_OP_XOR, fxor = SLUICE_OP_FXOR,
};
constexpr std::uint64_t op_bit(AtomicOp op) { return SLUICE_AOP_BIT(static_cast<int>(op)); }
template <class... Op>
constexpr std::uint64_t op_bits(Op... ops) {
    return (op_bit(ops) | ... | 0);
}

// Ordering of one operation (relaxed by default).
enum class Order : unsigned {
    relaxed = 0,
    acquire = SLUICE_AD_ACQUIRE,
    release = SLUICE_AD_RELEASE,
    acq_rel = SLUICE_AD_ACQUIRE | SLUICE_AD_RELEASE,
};

namespace detail {
template <class T>
struct AtomicCalls;
#define SLUICE_AD_CALLS_(suffix, type, dt)                                          \
    template <>                                                                     \
    struct AtomicCalls<type> {                                                      \
        static constexpr sluice_dt_t dt_value = dt;                                 \
        static sluice_status_t op(sluice_ad_t ad, type *r, sluice_rank_t rank, void *a, sluice_aop_t o, \
                                  type x, type y, unsigned f) {                     \
            return sluice_ad_op_##suffix(ad, r, rank, a, o, x, y, f);               \
        }                                                                           \
        static sluice_status_t nb(sluice_ad_t ad, type *r, sluice_rank_t rank, void *a, sluice_aop_t o, \
                                  type x, type y, unsigned f, sluice_event_t *e) {  \
            return sluice_ad_op_nb_##suffix(ad, r, rank, a, o, x, y, f, e);         \
        }                                                                           \
        static sluice_status_t nbi(sluice_ad_t ad, type *r, sluice_rank_t rank, void *a, sluice_aop_t o, \
                                   type x, type y, unsigned f) {                    \
            return sluice_ad_op_nbi_##suffix(ad, r, rank, a, o, x, y, f);           \
        }                                                                           \
    };
SLUICE_AD_CALLS_(i32, int32_t, SLUICE_DT_I32)
SLUICE_AD_CALLS_(u32, uint32_t, SLUICE_DT_U32)
SLUICE_AD_CALLS_(i64, int64_t, SLUICE_DT_I64)
SLUICE_AD_CALLS_(u64, uint64_t, SLUICE_DT_U64)
SLUICE_AD_CALLS_(flt, float, SLUICE_DT_FLT)
SLUICE_AD_CALLS_(dbl, double, SLUICE_DT_DBL)
#undef SLUICE_AD_CALLS_
} // namespace detail

// An atomic domain over a team for T (int32_t, uint32_t, int64_t, uint64_t,
// float, double).  create() and destroy() are collective over the team, so
// the destructor does not destroy: call destroy() on every member.  Ranks
// are team ranks.
template <class T>
class AtomicDomain {
    using Calls = detail::AtomicCalls<T>;

public:
    AtomicDomain() = default;
    AtomicDomain(const AtomicDomain &) = delete;
    AtomicDomain &operator=(const AtomicDomain &) = delete;
    AtomicDomain(AtomicDomain &&o) noexcept : ad_(std::exchange(o.ad_, nullptr)) {}
    AtomicDomain &operator=(AtomicDomain &&o) noexcept {
        ad_ = std::exchange(o.ad_, nullptr);
        return *this;
    }

    [[nodiscard]] Status create(sluice_team_t team, std::uint64_t ops) {
        return detail::wrap(sluice_ad_create(team, Calls::dt_value, ops, 0, &ad_));
    }
    [[nodiscard]] Status destroy() {
        Status s = detail::wrap(sluice_ad_destroy(ad_));
        if (s == Status::ok) ad_ = nullptr;
        return s;
    }
    sluice_ad_t handle() const { return ad_; }
    // The implementation ("cpu", "am", "cpu+am") and why.
    [[nodiscard]] Status path(std::string_view &name, std::string_view &why) const {
        const char *p = nullptr, *w = nullptr;
        Status s = detail::wrap(sluice_ad_path(ad_, &p, &w));
        if (s == Status::ok) {
            name = p;
            why = w;
        }
        return s;
    }

    // The general forms: `result` for fetching operations only.
    [[nodiscard]] Status op(AtomicOp o, Rank rank, T *addr, T op1 = T{}, T op2 = T{},
                            Order order = Order::relaxed) {
        return call(nullptr, o, rank, addr, op1, op2, order);
    }
    [[nodiscard]] Status fetch(AtomicOp o, T &result, Rank rank, T *addr, T op1 = T{}, T op2 = T{},
                               Order order = Order::relaxed) {
        return call(&result, o, rank, addr, op1, op2, order);
    }
    // Non-blocking: `result` (if any) is written when `ev` completes.
    [[nodiscard]] Status op_nb(Event &ev, AtomicOp o, T *result, Rank rank, T *addr, T op1 = T{}, T op2 = T{},
                               Order order = Order::relaxed) {
        return detail::wrap(Calls::nb(ad_, result, rank, addr, static_cast<sluice_aop_t>(o), op1, op2,
                                      static_cast<unsigned>(order), &ev));
    }
    // Implicit: complete at sluice_nbi_sync_cat(SLUICE_NBI_ATOMICS).
    [[nodiscard]] Status op_nbi(AtomicOp o, T *result, Rank rank, T *addr, T op1 = T{}, T op2 = T{},
                                Order order = Order::relaxed) {
        return detail::wrap(Calls::nbi(ad_, result, rank, addr, static_cast<sluice_aop_t>(o), op1, op2,
                                       static_cast<unsigned>(order)));
    }

    // Shorthands for the common operations.
    [[nodiscard]] Status load(T &value, Rank rank, T *addr, Order order = Order::relaxed) {
        return fetch(AtomicOp::get, value, rank, addr, T{}, T{}, order);
    }
    [[nodiscard]] Status store(Rank rank, T *addr, T value, Order order = Order::relaxed) {
        return op(AtomicOp::set, rank, addr, value, T{}, order);
    }
    [[nodiscard]] Status exchange(T &old, Rank rank, T *addr, T value, Order order = Order::relaxed) {
        return fetch(AtomicOp::swap, old, rank, addr, value, T{}, order);
    }
    [[nodiscard]] Status fetch_add(T &old, Rank rank, T *addr, T value, Order order = Order::relaxed) {
        return fetch(AtomicOp::fadd, old, rank, addr, value, T{}, order);
    }
    [[nodiscard]] Status add(Rank rank, T *addr, T value, Order order = Order::relaxed) {
        return op(AtomicOp::add, rank, addr, value, T{}, order);
    }
    // std::atomic style: true in `swapped` when *addr was `expected` (now
    // `desired`); else `expected` receives what *addr held.
    [[nodiscard]] Status compare_exchange(bool &swapped, Rank rank, T *addr, T &expected, T desired,
                                          Order order = Order::relaxed) {
        T old{};
        Status s = fetch(AtomicOp::fcas, old, rank, addr, expected, desired, order);
        if (s != Status::ok) return s;
        swapped = std::is_floating_point_v<T> ? __builtin_memcmp(&old, &expected, sizeof(T)) == 0 : old == expected;
        expected = old;
        return s;
    }

private:
    Status call(T *result, AtomicOp o, Rank rank, T *addr, T op1, T op2, Order order) {
        return detail::wrap(
            Calls::op(ad_, result, rank, addr, static_cast<sluice_aop_t>(o), op1, op2, static_cast<unsigned>(order)));
    }
    sluice_ad_t ad_ = nullptr;
};

} // namespace sluice
