// src/atomic/cpu.hpp - every operation of sluice_aop_t as CPU atomics on one
// word: the cpu path on a mapped segment, and the target side of the AM path.
// Both agents being CPU atomics on the same memory is what lets a domain mix
// them (README.md, "coherence").
//
// Integer add, sub, inc, dec, swap, compare-and-swap and the bitwise
// operations are single GCC __atomic builtins; mult, min, max and every
// floating-point update are compare-and-swap loops on the word's bits, and
// float compare-and-swap compares bits (so -0.0 is not 0.0, and a NaN equals
// itself).
#pragma once

#include <sluice.h>

#include <bit>
#include <cstdint>
#include <type_traits>

namespace sluice::atomic::cpu {

template <class T>
using Word = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;

template <class T>
Word<T> bits(T v) {
    return std::bit_cast<Word<T>>(v);
}
template <class T>
T value(Word<T> w) {
    return std::bit_cast<T>(w);
}

// The part of an ordering a failed compare-and-swap may keep.
constexpr int fail_order(int order) {
    return order == __ATOMIC_ACQ_REL ? __ATOMIC_ACQUIRE : order == __ATOMIC_RELEASE ? __ATOMIC_RELAXED : order;
}
constexpr bool has_acquire(int order) { return order == __ATOMIC_ACQUIRE || order == __ATOMIC_ACQ_REL; }
constexpr bool has_release(int order) { return order == __ATOMIC_RELEASE || order == __ATOMIC_ACQ_REL; }

// The value an arithmetic operation makes of `cur`; signed integers wrap as
// the unsigned ones do (no undefined overflow).
template <class T>
T combine(unsigned op, T cur, T operand) {
    if constexpr (std::is_integral_v<T>) {
        using U = std::make_unsigned_t<T>;
        const U c = static_cast<U>(cur), a = static_cast<U>(operand);
        switch (op) {
        case SLUICE_OP_ADD: case SLUICE_OP_FADD: return static_cast<T>(static_cast<U>(c + a));
        case SLUICE_OP_SUB: case SLUICE_OP_FSUB: return static_cast<T>(static_cast<U>(c - a));
        case SLUICE_OP_INC: case SLUICE_OP_FINC: return static_cast<T>(static_cast<U>(c + 1u));
        case SLUICE_OP_DEC: case SLUICE_OP_FDEC: return static_cast<T>(static_cast<U>(c - 1u));
        case SLUICE_OP_MULT: case SLUICE_OP_FMULT: return static_cast<T>(static_cast<U>(c * a));
        case SLUICE_OP_AND: case SLUICE_OP_FAND: return static_cast<T>(c & a);
        case SLUICE_OP_OR: case SLUICE_OP_FOR: return static_cast<T>(c | a);
        case SLUICE_OP_XOR: case SLUICE_OP_FXOR: return static_cast<T>(c ^ a);
        default: break;
        }
    } else {
        switch (op) {
        case SLUICE_OP_ADD: case SLUICE_OP_FADD: return cur + operand;
        case SLUICE_OP_SUB: case SLUICE_OP_FSUB: return cur - operand;
        case SLUICE_OP_INC: case SLUICE_OP_FINC: return cur + T(1);
        case SLUICE_OP_DEC: case SLUICE_OP_FDEC: return cur - T(1);
        case SLUICE_OP_MULT: case SLUICE_OP_FMULT: return cur * operand;
        default: break;
        }
    }
    switch (op) {
    case SLUICE_OP_MIN: case SLUICE_OP_FMIN: return operand < cur ? operand : cur;
    case SLUICE_OP_MAX: case SLUICE_OP_FMAX: return cur < operand ? operand : cur;
    default: return cur;
    }
}

// Applies `op` to *p with memory order `Order`; returns the old value (what
// a fetching form reports).  The caller checked op against the type.
template <class T, int Order>
T apply(T *p, unsigned op, T a, T b) {
    using W = Word<T>;
    W *w = reinterpret_cast<W *>(p);
    switch (op) {
    case SLUICE_OP_SET:
        // A store cannot acquire: an exchange can.
        if constexpr (has_acquire(Order)) {
            return value<T>(__atomic_exchange_n(w, bits(a), Order));
        } else {
            __atomic_store_n(w, bits(a), Order);
            return T{};
        }
    case SLUICE_OP_GET:
        // A load cannot release: an RMW that adds nothing can.
        if constexpr (has_release(Order)) return value<T>(__atomic_fetch_or(w, W{0}, Order));
        else return value<T>(__atomic_load_n(w, Order));
    case SLUICE_OP_SWAP:
        return value<T>(__atomic_exchange_n(w, bits(a), Order));
    case SLUICE_OP_CAS:
    case SLUICE_OP_FCAS: {
        W expected = bits(a);
        __atomic_compare_exchange_n(w, &expected, bits(b), false, Order, fail_order(Order));
        return value<T>(expected);  // the old value either way
    }
    default:
        break;
    }
    if constexpr (std::is_integral_v<T>) {
        switch (op) {
        case SLUICE_OP_ADD: case SLUICE_OP_FADD: return __atomic_fetch_add(p, a, Order);
        case SLUICE_OP_SUB: case SLUICE_OP_FSUB: return __atomic_fetch_sub(p, a, Order);
        case SLUICE_OP_INC: case SLUICE_OP_FINC: return __atomic_fetch_add(p, T(1), Order);
        case SLUICE_OP_DEC: case SLUICE_OP_FDEC: return __atomic_fetch_sub(p, T(1), Order);
        case SLUICE_OP_AND: case SLUICE_OP_FAND: return __atomic_fetch_and(p, a, Order);
        case SLUICE_OP_OR: case SLUICE_OP_FOR: return __atomic_fetch_or(p, a, Order);
        case SLUICE_OP_XOR: case SLUICE_OP_FXOR: return __atomic_fetch_xor(p, a, Order);
        default: break;
        }
    }
    // Mult, min, max, and floating-point arithmetic: a compare-and-swap loop.
    W cur = __atomic_load_n(w, __ATOMIC_RELAXED);
    for (;;) {
        const T old = value<T>(cur);
        const T next = combine<T>(op, old, a);
        if (bits(next) == cur && (op == SLUICE_OP_MIN || op == SLUICE_OP_FMIN || op == SLUICE_OP_MAX ||
                                  op == SLUICE_OP_FMAX)) {
            // Nothing to write: the operation was a read of `old`.
            if constexpr (Order != __ATOMIC_RELAXED) __atomic_thread_fence(Order);
            return old;
        }
        if (__atomic_compare_exchange_n(w, &cur, bits(next), true, Order, __ATOMIC_RELAXED)) return old;
    }
}

// The ordering flags (SLUICE_AD_ACQUIRE, SLUICE_AD_RELEASE) as a memory order.
template <class T>
T apply(T *p, unsigned op, T a, T b, unsigned flags) {
    switch (flags & (SLUICE_AD_ACQUIRE | SLUICE_AD_RELEASE)) {
    case 0: return apply<T, __ATOMIC_RELAXED>(p, op, a, b);
    case SLUICE_AD_ACQUIRE: return apply<T, __ATOMIC_ACQUIRE>(p, op, a, b);
    case SLUICE_AD_RELEASE: return apply<T, __ATOMIC_RELEASE>(p, op, a, b);
    default: return apply<T, __ATOMIC_ACQ_REL>(p, op, a, b);
    }
}

} // namespace sluice::atomic::cpu
