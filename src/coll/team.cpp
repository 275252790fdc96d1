// src/coll/team.cpp - teams: the built-in three, split, create, destroy,
// and the handle checks every team call starts with.
#include "coll/coll.hpp"
#include "coll/engine.hpp"

#include <algorithm>
#include <tuple>

namespace sluice::coll {

Team::Team(std::uint64_t id, std::vector<Rank> members, Rank my_job_rank, const std::vector<std::uint32_t> &host_of)
    : id_(id), members_(std::move(members)) {
    one_host_ = true;
    by_job_.reserve(members_.size());
    for (Rank i = 0; i < members_.size(); ++i) {
        if (members_[i] == my_job_rank) rank_ = i;
        if (host_of[members_[i]] != host_of[members_[0]]) one_host_ = false;
        by_job_.emplace_back(members_[i], i);
    }
    std::sort(by_job_.begin(), by_job_.end());
}

bool Team::from_job(Rank job_rank, Rank &team_rank) const {
    auto it = std::lower_bound(by_job_.begin(), by_job_.end(), std::make_pair(job_rank, Rank{0}));
    if (it == by_job_.end() || it->first != job_rank) return false;
    team_rank = it->second;
    return true;
}

namespace {
Team *job_team = nullptr, *host_team = nullptr, *across_team = nullptr;
} // namespace

void teams_builtin_make(const ClientEnv &e) {
    std::vector<Rank> job(e.size), host, across;
    std::vector<Rank> index_on_host(e.size);  // a rank's index among its host's ranks
    std::vector<Rank> seen(e.host_count, 0);
    for (Rank r = 0; r < e.size; ++r) {
        job[r] = r;
        index_on_host[r] = seen[e.host_of[r]]++;
        if (e.host_of[r] == e.host_of[e.rank]) host.push_back(r);
    }
    // One rank per host, in host order (hosts are numbered by their lowest rank).
    for (std::uint32_t h = 0; h < e.host_count; ++h)
        for (Rank r = 0; r < e.size; ++r)
            if (e.host_of[r] == h && index_on_host[r] == index_on_host[e.rank]) across.push_back(r);
    job_team = &team_register(1, std::move(job), true)->team;
    host_team = &team_register(2, std::move(host), true)->team;
    across_team = &team_register(3, std::move(across), true)->team;
}

Team *team_of(sluice_team_t handle, const char *op) {
    if (!handle) {
        (void)base::report(Status::argument, op, "pass a team this rank is a member of (not SLUICE_TEAM_NULL)",
                           "null team");
        return nullptr;
    }
    if (handle->magic != sluice_team::live) {
        (void)base::report(Status::argument, op, "pass a live team (not one destroyed, or another rank's)",
                           "team %p is not a live team of this rank", static_cast<void *>(handle));
        return nullptr;
    }
    return &handle->team;
}

sluice_team_t team_handle(Team *team) { return team ? team->handle() : nullptr; }
Team &team_job() { return *job_team; }
Team &team_host() { return *host_team; }
Team &team_across_hosts() { return *across_team; }

Status team_allgather(Team &team, const void *in, void *out, std::size_t n, const char *op) {
    return allgather(team, out, in, n, nullptr, op);
}

namespace {
// What each member of the parent says when a team is made.
struct Proposal {
    std::int32_t color = 0, key = 0;
    std::uint64_t next_id = 0;
    std::uint64_t list_hash = 0;  // create: the list every member passed
    std::uint32_t valid = 1;      // create: this member's list passed its checks
    std::uint32_t pad = 0;
};

// The id of the new team: above every id any member of the parent used.
std::uint64_t id_agree(const std::vector<Proposal> &all) {
    std::uint64_t id = 0;
    for (const Proposal &p : all) id = std::max(id, p.next_id);
    next_team_id() = std::max(next_team_id(), id + 1);
    return id;
}

Status make_check(Team &parent, const char *op) {
    if (am::AmEngine::in_handler())
        return base::report(Status::context, op, "make teams outside handlers", "called from a handler");
    (void)parent;
    return Status::ok;
}
} // namespace

Status team_split(Team &parent, int color, int key, Team *&out, const char *op) {
    if (Status s = make_check(parent, op); s != Status::ok) return s;
    if (color < 0 && color != SLUICE_TEAM_NO_COLOR)
        return base::report(Status::argument, op, "pass a colour >= 0 or SLUICE_TEAM_NO_COLOR", "colour %d", color);
    Proposal mine;
    mine.color = color;
    mine.key = key;
    mine.next_id = next_team_id();
    std::vector<Proposal> all(parent.size());
    if (Status s = team_allgather(parent, &mine, all.data(), sizeof mine, op); s != Status::ok) return s;
    const std::uint64_t id = id_agree(all);
    out = nullptr;
    if (color == SLUICE_TEAM_NO_COLOR) return Status::ok;
    std::vector<std::tuple<int, Rank>> order;  // (key, parent rank) of my colour
    for (Rank i = 0; i < parent.size(); ++i)
        if (all[i].color == color) order.emplace_back(all[i].key, i);
    std::sort(order.begin(), order.end());
    std::vector<Rank> members;
    for (auto &[k, i] : order) members.push_back(parent.to_job(i));
    out = &team_register(id, std::move(members), false)->team;
    return Status::ok;
}

Status team_create(Team &parent, const Rank *job_ranks, std::size_t count, Team *&out, const char *op) {
    if (Status s = make_check(parent, op); s != Status::ok) return s;
    Proposal mine;
    mine.next_id = next_team_id();
    // Check the list here, but join the agreement anyway: the other members
    // must not wait for a rank that gave up.
    Status local = Status::ok;
    if (count && !job_ranks) {
        local = base::report(Status::argument, op, "pass the list of job ranks", "null list of %zu ranks", count);
    } else {
        std::vector<Rank> sorted(job_ranks, job_ranks + count);
        std::sort(sorted.begin(), sorted.end());
        Rank unused;
        for (std::size_t i = 0; i < count && local == Status::ok; ++i) {
            if (!parent.from_job(sorted[i], unused))
                local = base::report(Status::rank, op, "list only members of the parent team",
                                     "job rank %u is not a member of the parent team", sorted[i]);
            else if (i && sorted[i] == sorted[i - 1])
                local = base::report(Status::argument, op, "list each rank once", "job rank %u is listed twice",
                                     sorted[i]);
        }
    }
    mine.valid = local == Status::ok;
    std::uint64_t h = 1469598103934665603ull ^ count;  // FNV-1a over the list
    for (std::size_t i = 0; mine.valid && i < count; ++i) h = (h ^ job_ranks[i]) * 1099511628211ull;
    mine.list_hash = h;
    std::vector<Proposal> all(parent.size());
    if (Status s = team_allgather(parent, &mine, all.data(), sizeof mine, op); s != Status::ok) return s;
    const std::uint64_t id = id_agree(all);
    if (local != Status::ok) return local;
    for (Rank i = 0; i < parent.size(); ++i) {
        if (!all[i].valid)
            return base::report(Status::argument, op, "pass a valid list on every member",
                                "member %u of the parent (job rank %u) passed an invalid list", i, parent.to_job(i));
        if (all[i].list_hash != mine.list_hash)
            return base::report(Status::argument, op, "pass the same list on every member",
                                "member %u of the parent (job rank %u) passed a different list", i, parent.to_job(i));
    }
    out = nullptr;
    const Rank me = parent.to_job(parent.rank());
    if (std::find(job_ranks, job_ranks + count, me) == job_ranks + count) return Status::ok;
    out = &team_register(id, std::vector<Rank>(job_ranks, job_ranks + count), false)->team;
    return Status::ok;
}

Status team_destroy(Team &team, const char *op) {
    if (am::AmEngine::in_handler())
        return base::report(Status::context, op, "destroy teams outside handlers", "called from a handler");
    if (team.handle()->builtin)
        return base::report(Status::argument, op, "destroy only teams made by split or create",
                            "team %llu is built in", static_cast<unsigned long long>(team.id()));
    // Every member has finished its collectives on the team: nothing for it
    // is still on its way.
    if (Status s = barrier(team, nullptr, op); s != Status::ok) return s;
    fast_forget(team.id());
    team_unregister(team.handle());
    return Status::ok;
}

} // namespace sluice::coll
