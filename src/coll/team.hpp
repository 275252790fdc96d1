// src/coll/team.hpp - teams: ordered sets of job ranks, and what the other
// client layers (atomic domains, collectives) need of them.
#pragma once

#include "coll/env.hpp"

#include <sluice.h>

#include <cstdint>
#include <utility>
#include <vector>

// The object behind sluice_team_t.
struct sluice_team;

namespace sluice::coll {

class Team {
public:
    Rank rank() const { return rank_; }              // my team rank
    Rank size() const { return static_cast<Rank>(members_.size()); }
    Rank to_job(Rank team_rank) const { return members_[team_rank]; }  // unchecked
    bool from_job(Rank job_rank, Rank &team_rank) const;
    const std::vector<Rank> &members() const { return members_; }  // job ranks, in team order
    // Unique among the live teams of every member, the same on each.
    std::uint64_t id() const { return id_; }
    // Every member is on one host (the host team, or a team made of its ranks).
    bool one_host() const { return one_host_; }

    Team(std::uint64_t id, std::vector<Rank> members, Rank my_job_rank, const std::vector<std::uint32_t> &host_of);

    // The public handle this team lives in (src/coll/engine.hpp).
    sluice_team *handle() const { return handle_; }

private:
    friend struct ::sluice_team;
    std::uint64_t id_;
    std::vector<Rank> members_;
    Rank rank_ = 0;
    bool one_host_ = false;
    std::vector<std::pair<Rank, Rank>> by_job_;  // (job rank, team rank), sorted: from_job
    sluice_team *handle_ = nullptr;
};

// The team behind a public handle, or null after reporting (as `op`) a
// null, destroyed or foreign handle.
Team *team_of(sluice_team_t handle, const char *op);
sluice_team_t team_handle(Team *team);
Team &team_job();

// Blocking, collective over `team`: every member's `n` bytes of `in` into
// `out` (size() * n, in team order).  For set-up agreements (atomic
// domains, splits); polls while it waits.
Status team_allgather(Team &team, const void *in, void *out, std::size_t n, const char *op);

// The three built-in teams (sluice.h, "teams").
Team &team_host();
Team &team_across_hosts();
// Collective over `parent` (sluice_team_split / _create / _destroy): the
// new team, or null where this rank is not in it.
Status team_split(Team &parent, int color, int key, Team *&out, const char *op);
Status team_create(Team &parent, const Rank *job_ranks, std::size_t count, Team *&out, const char *op);
Status team_destroy(Team &team, const char *op);

} // namespace sluice::coll
