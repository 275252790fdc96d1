// sluice/team.hpp - C++ API of teams and collectives (the sluice_team_* and
// sluice_coll_* calls of <sluice.h>; the rules are documented there and in
// docs/collectives.md).  Included by <sluice/sluice.hpp>.  No call throws;
// every status is [[nodiscard]].
#pragma once
#include <sluice/sluice.hpp>

#include <cstdint>
#include <span>
#include <type_traits>

namespace sluice {

enum class ReduceOp : int {
    sum = SLUICE_REDUCE_SUM,
    prod = SLUICE_REDUCE_PROD,
    min = SLUICE_REDUCE_MIN,
    max = SLUICE_REDUCE_MAX,
    and_ = SLUICE_REDUCE_AND,
    or_ = SLUICE_REDUCE_OR,
    xor_ = SLUICE_REDUCE_XOR,
};

namespace detail {
template <class T>
constexpr sluice_dt_t dt_of() {
    if constexpr (std::is_same_v<T, std::int32_t>) return SLUICE_DT_I32;
    else if constexpr (std::is_same_v<T, std::uint32_t>) return SLUICE_DT_U32;
    else if constexpr (std::is_same_v<T, std::int64_t>) return SLUICE_DT_I64;
    else if constexpr (std::is_same_v<T, std::uint64_t>) return SLUICE_DT_U64;
    else if constexpr (std::is_same_v<T, float>) return SLUICE_DT_FLT;
    else if constexpr (std::is_same_v<T, double>) return SLUICE_DT_DBL;
    else return SLUICE_DT_USER;
}
template <class T>
inline constexpr bool builtin_element = dt_of<T>() != SLUICE_DT_USER;
} // namespace detail

inline constexpr Rank rank_invalid = SLUICE_RANK_INVALID;
inline constexpr int team_no_color = SLUICE_TEAM_NO_COLOR;

// A team handle: a value, cheap to copy.  Teams made by split and create
// live until destroy() (collective); the built-in ones for the whole job.
class Team {
public:
    Team() = default;
    explicit Team(sluice_team_t handle) : h_(handle) {}
    static Team job() { return Team(sluice_team_job()); }
    static Team host() { return Team(sluice_team_host()); }
    static Team across_hosts() { return Team(sluice_team_across_hosts()); }

    sluice_team_t handle() const { return h_; }
    explicit operator bool() const { return h_ != SLUICE_TEAM_NULL; }
    // rank_invalid (and an error report) on a null or destroyed team.
    Rank rank() const { return sluice_team_rank(h_); }
    Rank size() const { return sluice_team_size(h_); }
    [[nodiscard]] Status to_job(Rank team_rank, Rank &job_rank) const {
        return detail::wrap(sluice_team_to_job(h_, team_rank, &job_rank));
    }
    [[nodiscard]] Status from_job(Rank job_rank, Rank &team_rank) const {
        return detail::wrap(sluice_team_from_job(h_, job_rank, &team_rank));
    }
    // Collective over this team; `out` is null where this rank joins none.
    [[nodiscard]] Status split(int color, int key, Team &out) const {
        sluice_team_t t = SLUICE_TEAM_NULL;
        Status s = detail::wrap(sluice_team_split(h_, color, key, &t));
        if (s == Status::ok) out = Team(t);
        return s;
    }
    [[nodiscard]] Status create(std::span<const Rank> job_ranks, Team &out) const {
        sluice_team_t t = SLUICE_TEAM_NULL;
        Status s = detail::wrap(sluice_team_create(h_, job_ranks.data(), job_ranks.size(), &t));
        if (s == Status::ok) out = Team(t);
        return s;
    }
    [[nodiscard]] Status destroy() {
        Status s = detail::wrap(sluice_team_destroy(h_));
        if (s == Status::ok) h_ = SLUICE_TEAM_NULL;
        return s;
    }

    // ---- collectives (blocking; the _nb forms complete `ev`) ----
    [[nodiscard]] Status barrier() const { return detail::wrap(sluice_coll_barrier(h_)); }
    [[nodiscard]] Status barrier_nb(Event &ev) const { return detail::wrap(sluice_coll_barrier_nb(h_, &ev)); }

    [[nodiscard]] Status broadcast(Rank root, void *dst, const void *src, std::size_t nbytes) const {
        return detail::wrap(sluice_coll_broadcast(h_, root, dst, src, nbytes));
    }
    [[nodiscard]] Status broadcast_nb(Rank root, void *dst, const void *src, std::size_t nbytes, Event &ev) const {
        return detail::wrap(sluice_coll_broadcast_nb(h_, root, dst, src, nbytes, &ev));
    }
    template <class T>
    [[nodiscard]] Status broadcast(Rank root, std::span<T> data) const {
        return broadcast(root, data.data(), data.data(), data.size_bytes());
    }

    // Built-in element types (int32/uint32/int64/uint64, float, double).
    template <class T>
        requires detail::builtin_element<T>
    [[nodiscard]] Status reduce(Rank root, T *dst, const T *src, std::size_t count, ReduceOp op) const {
        return detail::wrap(sluice_coll_reduce(h_, root, dst, src, detail::dt_of<T>(), 0, count,
                                               static_cast<sluice_reduce_op_t>(op), nullptr, nullptr));
    }
    template <class T>
        requires detail::builtin_element<T>
    [[nodiscard]] Status reduce_nb(Rank root, T *dst, const T *src, std::size_t count, ReduceOp op, Event &ev) const {
        return detail::wrap(sluice_coll_reduce_nb(h_, root, dst, src, detail::dt_of<T>(), 0, count,
                                                  static_cast<sluice_reduce_op_t>(op), nullptr, nullptr, &ev));
    }
    template <class T>
        requires detail::builtin_element<T>
    [[nodiscard]] Status reduce_all(T *dst, const T *src, std::size_t count, ReduceOp op) const {
        return detail::wrap(sluice_coll_reduce_all(h_, dst, src, detail::dt_of<T>(), 0, count,
                                                   static_cast<sluice_reduce_op_t>(op), nullptr, nullptr));
    }
    template <class T>
        requires detail::builtin_element<T>
    [[nodiscard]] Status reduce_all_nb(T *dst, const T *src, std::size_t count, ReduceOp op, Event &ev) const {
        return detail::wrap(sluice_coll_reduce_all_nb(h_, dst, src, detail::dt_of<T>(), 0, count,
                                                      static_cast<sluice_reduce_op_t>(op), nullptr, nullptr, &ev));
    }
    // A user operation over elements of `elem_size` bytes.
    [[nodiscard]] Status reduce_user(Rank root, void *dst, const void *src, std::size_t elem_size, std::size_t count,
                                     sluice_reduce_fn fn, void *context) const {
        return detail::wrap(sluice_coll_reduce(h_, root, dst, src, SLUICE_DT_USER, elem_size, count,
                                               SLUICE_REDUCE_USER, fn, context));
    }
    [[nodiscard]] Status reduce_all_user(void *dst, const void *src, std::size_t elem_size, std::size_t count,
                                         sluice_reduce_fn fn, void *context) const {
        return detail::wrap(sluice_coll_reduce_all(h_, dst, src, SLUICE_DT_USER, elem_size, count,
                                                   SLUICE_REDUCE_USER, fn, context));
    }

    [[nodiscard]] Status allgather(void *dst, const void *src, std::size_t nbytes) const {
        return detail::wrap(sluice_coll_allgather(h_, dst, src, nbytes));
    }
    [[nodiscard]] Status allgather_nb(void *dst, const void *src, std::size_t nbytes, Event &ev) const {
        return detail::wrap(sluice_coll_allgather_nb(h_, dst, src, nbytes, &ev));
    }
    [[nodiscard]] Status alltoall(void *dst, const void *src, std::size_t nbytes) const {
        return detail::wrap(sluice_coll_alltoall(h_, dst, src, nbytes));
    }
    [[nodiscard]] Status alltoall_nb(void *dst, const void *src, std::size_t nbytes, Event &ev) const {
        return detail::wrap(sluice_coll_alltoall_nb(h_, dst, src, nbytes, &ev));
    }

    friend bool operator==(const Team &a, const Team &b) { return a.h_ == b.h_; }

private:
    sluice_team_t h_ = SLUICE_TEAM_NULL;
};

} // namespace sluice
