// src/coll/reduce.cpp - the built-in reduction operations over every
// sluice_dt_t type, and the checks of a (type, op) pair.
#include "coll/coll.hpp"

#include <algorithm>
#include <type_traits>

namespace sluice::coll {
namespace {

// Integer sums and products wrap (as unsigned arithmetic), the same bits as
// two's complement, never undefined.
template <class T, bool = std::is_integral_v<T>>
struct ArithOf {
    using type = T;
};
template <class T>
struct ArithOf<T, true> {
    using type = std::make_unsigned_t<T>;
};
template <class T>
using Arith = typename ArithOf<T>::type;

struct Sum {
    template <class T> static T f(T a, T b) { return static_cast<T>(static_cast<Arith<T>>(a) + static_cast<Arith<T>>(b)); }
};
struct Prod {
    template <class T> static T f(T a, T b) { return static_cast<T>(static_cast<Arith<T>>(a) * static_cast<Arith<T>>(b)); }
};
struct Min {
    template <class T> static T f(T a, T b) { return std::min(a, b); }
};
struct Max {
    template <class T> static T f(T a, T b) { return std::max(a, b); }
};
struct And {
    template <class T> static T f(T a, T b) { return a & b; }
};
struct Or {
    template <class T> static T f(T a, T b) { return a | b; }
};
struct Xor {
    template <class T> static T f(T a, T b) { return a ^ b; }
};

template <class T, class F>
void apply(void *inout, const void *in, std::size_t count) {
    T *a = static_cast<T *>(inout);
    const T *b = static_cast<const T *>(in);
    for (std::size_t i = 0; i < count; ++i) a[i] = F::f(a[i], b[i]);
}

template <class T>
using Fn = void (*)(void *, const void *, std::size_t);

template <class T>
Fn<T> pick(sluice_reduce_op_t op) {
    switch (op) {
    case SLUICE_REDUCE_SUM: return apply<T, Sum>;
    case SLUICE_REDUCE_PROD: return apply<T, Prod>;
    case SLUICE_REDUCE_MIN: return apply<T, Min>;
    case SLUICE_REDUCE_MAX: return apply<T, Max>;
    default: break;
    }
    if constexpr (std::is_integral_v<T>) {
        switch (op) {
        case SLUICE_REDUCE_AND: return apply<T, And>;
        case SLUICE_REDUCE_OR: return apply<T, Or>;
        case SLUICE_REDUCE_XOR: return apply<T, Xor>;
        default: break;
        }
    }
    return nullptr;
}

const char *type_name(sluice_dt_t t) {
    switch (t) {
    case SLUICE_DT_I32: return "SLUICE_DT_I32";
    case SLUICE_DT_U32: return "SLUICE_DT_U32";
    case SLUICE_DT_I64: return "SLUICE_DT_I64";
    case SLUICE_DT_U64: return "SLUICE_DT_U64";
    case SLUICE_DT_FLT: return "SLUICE_DT_FLT";
    case SLUICE_DT_DBL: return "SLUICE_DT_DBL";
    case SLUICE_DT_USER: return "SLUICE_DT_USER";
    }
    return "?";
}

} // namespace

Status reduction_make(sluice_dt_t type, std::size_t elem_size, sluice_reduce_op_t op, sluice_reduce_fn fn,
                      void *context, Reduction &out, const char *op_name) {
    Reduction r;
    r.context = context;
    if (type == SLUICE_DT_USER || op == SLUICE_REDUCE_USER) {
        if (type != SLUICE_DT_USER || op != SLUICE_REDUCE_USER)
            return base::report(Status::argument, op_name, "pair SLUICE_DT_USER with SLUICE_REDUCE_USER (and a function)",
                                "type %s with operation %d", type_name(type), static_cast<int>(op));
        if (!fn)
            return base::report(Status::argument, op_name, "pass the reduction function of SLUICE_REDUCE_USER",
                                "SLUICE_REDUCE_USER without a function");
        if (elem_size == 0)
            return base::report(Status::argument, op_name, "pass the element size of SLUICE_DT_USER",
                                "SLUICE_DT_USER with element size 0");
        r.elem = elem_size;
        r.user = fn;
        out = r;
        return Status::ok;
    }
    if (op < SLUICE_REDUCE_SUM || op > SLUICE_REDUCE_XOR)
        return base::report(Status::argument, op_name, "pass a sluice_reduce_op_t", "unknown operation %d",
                            static_cast<int>(op));
    switch (type) {
    case SLUICE_DT_I32: r.elem = 4; r.builtin = pick<std::int32_t>(op); break;
    case SLUICE_DT_U32: r.elem = 4; r.builtin = pick<std::uint32_t>(op); break;
    case SLUICE_DT_I64: r.elem = 8; r.builtin = pick<std::int64_t>(op); break;
    case SLUICE_DT_U64: r.elem = 8; r.builtin = pick<std::uint64_t>(op); break;
    case SLUICE_DT_FLT: r.elem = 4; r.builtin = pick<float>(op); break;
    case SLUICE_DT_DBL: r.elem = 8; r.builtin = pick<double>(op); break;
    default:
        return base::report(Status::argument, op_name, "pass a sluice_dt_t", "unknown type %d", static_cast<int>(type));
    }
    if (!r.builtin)
        return base::report(Status::argument, op_name, "use AND, OR and XOR on integer types only",
                            "operation %d is not defined on %s", static_cast<int>(op), type_name(type));
    if (elem_size && elem_size != r.elem)
        return base::report(Status::argument, op_name, "pass element size 0 or the type's size",
                            "element size %zu for %s (%zu bytes)", elem_size, type_name(type), r.elem);
    out = r;
    return Status::ok;
}

} // namespace sluice::coll
