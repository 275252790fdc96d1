// src/shmem/teams.cpp - teams and contexts: an OpenSHMEM team is a Sluice
// team; a context names the team its PE numbers belong to.
#include "sluice_config.h"

#include "shmem/shmem_impl.hpp"

#include <vector>

namespace {
sluice_shmem_team_ world_team, shared_team;
sluice_shmem_ctx_ default_ctx;
} // namespace

extern "C" {
shmem_ctx_t SHMEM_CTX_DEFAULT = &default_ctx;
shmem_team_t SHMEM_TEAM_WORLD = &world_team;
shmem_team_t SHMEM_TEAM_SHARED = &shared_team;
}

namespace sluice::shmem {

void teams_init() {
    world_team.team = sluice_team_job();
    world_team.predefined = true;
    default_ctx.team = SHMEM_TEAM_WORLD;
    default_ctx.predefined = true;
    {
        std::lock_guard<std::mutex> lock(state.contexts_mutex);
        state.contexts.assign(1, &default_ctx);
    }
    // The shared team: the PEs whose heaps this PE maps (shmem_ptr gives a
    // pointer), named by the lowest of them.
    int color = state.me;
    char probe = 0;
    for (int pe = 0; pe < state.npes; ++pe)
        if (pe == state.me || sluice_mapped_view_(static_cast<sluice_rank_t>(pe), state.heap_base[pe], &probe, 1)) {
            color = pe;
            break;
        }
    check_status(sluice_team_split(sluice_team_job(), color, state.me, &shared_team.team), "shmem_init");
    shared_team.predefined = true;
}

void teams_fini() {
    if (shared_team.team) (void)sluice_team_destroy(shared_team.team);
    shared_team.team = SLUICE_TEAM_NULL;
}

sluice_team_t team_of(shmem_team_t t, const char *call) {
    need_init(call);
    if (t == SHMEM_TEAM_INVALID || !t->team)
        fail(call, "pass a team that exists on this PE (not SHMEM_TEAM_INVALID, not destroyed)", "invalid team");
    return t->team;
}

} // namespace sluice::shmem

using namespace sluice::shmem;

namespace {

// The fields of `config` that `mask` names; the others keep their defaults.
void set_config(sluice_shmem_team_ &t, const shmem_team_config_t *config, long mask) {
    t.config_mask = mask;
    if (config && (mask & SHMEM_TEAM_NUM_CONTEXTS)) t.config.num_contexts = config->num_contexts;
}

int make_team(shmem_team_t parent, const std::vector<sluice_rank_t> &members, const shmem_team_config_t *config,
              long mask, shmem_team_t *out, const char *call) {
    sluice_team_t t = SLUICE_TEAM_NULL;
    if (sluice_team_create(team_of(parent, call), members.data(), members.size(), &t) != SLUICE_OK) {
        *out = SHMEM_TEAM_INVALID;
        return 1;
    }
    if (!t) {
        *out = SHMEM_TEAM_INVALID;
        return 0;
    }
    auto *nt = new sluice_shmem_team_;
    nt->team = t;
    set_config(*nt, config, mask);
    *out = nt;
    return 0;
}

} // namespace

extern "C" {

int shmem_team_my_pe(shmem_team_t team) {
    need_init("shmem_team_my_pe");
    if (team == SHMEM_TEAM_INVALID || !team->team) return -1;
    return static_cast<int>(sluice_team_rank(team->team));
}

int shmem_team_n_pes(shmem_team_t team) {
    need_init("shmem_team_n_pes");
    if (team == SHMEM_TEAM_INVALID || !team->team) return -1;
    return static_cast<int>(sluice_team_size(team->team));
}

int shmem_team_get_config(shmem_team_t team, long mask, shmem_team_config_t *config) {
    need_init("shmem_team_get_config");
    if (team == SHMEM_TEAM_INVALID || !config) return -1;
    if (mask & SHMEM_TEAM_NUM_CONTEXTS) config->num_contexts = team->config.num_contexts;
    return 0;
}

int shmem_team_translate_pe(shmem_team_t src, int pe, shmem_team_t dest) {
    need_init("shmem_team_translate_pe");
    if (src == SHMEM_TEAM_INVALID || dest == SHMEM_TEAM_INVALID || !src->team || !dest->team) return -1;
    sluice_rank_t job = 0, out = 0;
    if (pe < 0 || pe >= static_cast<int>(sluice_team_size(src->team))) return -1;
    if (sluice_team_to_job(src->team, static_cast<sluice_rank_t>(pe), &job) != SLUICE_OK) return -1;
    // A PE that is not in `dest` is an answer (-1), not an error: ask quietly.
    sluice_rank_t n = sluice_team_size(dest->team);
    for (sluice_rank_t r = 0; r < n; ++r) {
        if (sluice_team_to_job(dest->team, r, &out) == SLUICE_OK && out == job) return static_cast<int>(r);
    }
    return -1;
}

int shmem_team_split_strided(shmem_team_t parent, int start, int stride, int size, const shmem_team_config_t *config,
                             long mask, shmem_team_t *new_team) {
    const char *call = "shmem_team_split_strided";
    if (!new_team) fail(call, "pass where to store the new team", "null output pointer");
    need_init(call);
    if (parent == SHMEM_TEAM_INVALID) {  // not a member of the parent: nothing to join
        *new_team = SHMEM_TEAM_INVALID;
        return 1;
    }
    const sluice_team_t p = team_of(parent, call);
    const int n = static_cast<int>(sluice_team_size(p));
    const long last = static_cast<long>(start) + static_cast<long>(stride) * (size - 1);
    if (size < 1 || start < 0 || start >= n || last < 0 || last >= n || (stride == 0 && size > 1)) {
        *new_team = SHMEM_TEAM_INVALID;
        return 1;
    }
    std::vector<sluice_rank_t> members;
    for (int i = 0; i < size; ++i) {
        sluice_rank_t job = 0;
        check_status(sluice_team_to_job(p, static_cast<sluice_rank_t>(start + i * stride), &job), call);
        members.push_back(job);
    }
    return make_team(parent, members, config, mask, new_team, call);
}

int shmem_team_split_2d(shmem_team_t parent, int xrange, const shmem_team_config_t *xconfig, long xmask,
                        shmem_team_t *xteam, const shmem_team_config_t *yconfig, long ymask, shmem_team_t *yteam) {
    const char *call = "shmem_team_split_2d";
    if (!xteam || !yteam) fail(call, "pass where to store both teams", "null output pointer");
    need_init(call);
    if (parent == SHMEM_TEAM_INVALID) {
        *xteam = *yteam = SHMEM_TEAM_INVALID;
        return 1;
    }
    const sluice_team_t p = team_of(parent, call);
    const int n = static_cast<int>(sluice_team_size(p)), me = static_cast<int>(sluice_team_rank(p));
    if (xrange < 1) {
        *xteam = *yteam = SHMEM_TEAM_INVALID;
        return 1;
    }
    if (xrange > n) xrange = n;
    // Rows (x) and columns (y) of the parent's PEs laid out xrange wide.
    sluice_team_t x = SLUICE_TEAM_NULL, y = SLUICE_TEAM_NULL;
    if (sluice_team_split(p, me / xrange, me, &x) != SLUICE_OK || sluice_team_split(p, me % xrange, me, &y) != SLUICE_OK) {
        *xteam = *yteam = SHMEM_TEAM_INVALID;
        return 1;
    }
    auto *tx = new sluice_shmem_team_;
    tx->team = x;
    set_config(*tx, xconfig, xmask);
    auto *ty = new sluice_shmem_team_;
    ty->team = y;
    set_config(*ty, yconfig, ymask);
    *xteam = tx;
    *yteam = ty;
    return 0;
}

void shmem_team_destroy(shmem_team_t team) {
    const char *call = "shmem_team_destroy";
    need_init(call);
    if (team == SHMEM_TEAM_INVALID) return;
    if (team->predefined) fail(call, "destroy only teams made by a split", "a predefined team");
    quiet();
    check_status(sluice_team_destroy(team->team), call);
    team->team = SLUICE_TEAM_NULL;  // contexts made from it now fail with a clear line
}

int shmem_team_sync(shmem_team_t team) {
    const sluice_team_t t = team_of(team, "shmem_team_sync");
    check_status(sluice_coll_barrier(t), "shmem_team_sync");
    return 0;
}

void *shmem_team_ptr(shmem_team_t team, const void *dest, int pe) {
    const sluice_team_t t = team_of(team, "shmem_team_ptr");
    sluice_rank_t job = 0;
    if (pe < 0 || sluice_team_to_job(t, static_cast<sluice_rank_t>(pe), &job) != SLUICE_OK) return nullptr;
    return shmem_ptr(dest, static_cast<int>(job));
}

int shmem_team_create_ctx(shmem_team_t team, long options, shmem_ctx_t *ctx) {
    (void)team_of(team, "shmem_team_create_ctx");
    if (!ctx) fail("shmem_team_create_ctx", "pass where to store the context", "null output pointer");
    auto *c = new sluice_shmem_ctx_;
    c->options = options;
    c->team = team;
    ++team->contexts;
    {
        std::lock_guard<std::mutex> lock(state.contexts_mutex);
        state.contexts.push_back(c);
    }
    *ctx = c;
    return 0;
}

int shmem_ctx_create(long options, shmem_ctx_t *ctx) { return shmem_team_create_ctx(SHMEM_TEAM_WORLD, options, ctx); }

void shmem_ctx_destroy(shmem_ctx_t ctx) {
    need_init("shmem_ctx_destroy");
    if (ctx == SHMEM_CTX_INVALID) return;
    if (ctx->predefined) fail("shmem_ctx_destroy", "destroy only contexts shmem_ctx_create made", "SHMEM_CTX_DEFAULT");
    if (ctx->destroyed) fail("shmem_ctx_destroy", "destroy a context once", "a destroyed context");
    quiet_ctx(ctx, "shmem_ctx_destroy");
    if (ctx->team) --ctx->team->contexts;
    ctx->destroyed = true;
    std::lock_guard<std::mutex> lock(state.contexts_mutex);
    std::erase(state.contexts, ctx);
}

int shmem_ctx_get_team(shmem_ctx_t ctx, shmem_team_t *team) {
    need_init("shmem_ctx_get_team");
    if (!team) return -1;
    if (ctx == SHMEM_CTX_INVALID) {
        *team = SHMEM_TEAM_INVALID;
        return -1;
    }
    *team = ctx->team;
    return 0;
}

} // extern "C"
