// src/conduits/common/pin_limit.cpp - the pinnable-memory limit
// (pin_limit.hpp).
#include "conduits/common/pin_limit.hpp"

#include "base/knobs.hpp"

#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>

namespace sluice::conduit::common {
namespace {

// Whether this process may lock any amount of memory (CAP_IPC_LOCK, bit
// 14 of its effective capabilities), so that RLIMIT_MEMLOCK does not bind.
bool may_lock_any() {
    std::FILE *f = std::fopen("/proc/self/status", "r");
    if (!f) return false;
    char line[256];
    unsigned long long caps = 0;
    while (std::fgets(line, sizeof line, f))
        if (std::sscanf(line, "CapEff: %llx", &caps) == 1) break;
    std::fclose(f);
    return (caps >> 14) & 1;
}

std::string mib(std::uint64_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

bool real(const std::string &s, double &out) {
    if (s.empty() || !(std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '.')) return false;
    char *end = nullptr;
    out = std::strtod(s.c_str(), &end);
    return *end == '\0';
}

} // namespace

bool physmem_parse(const std::string &text, std::uint64_t physical, std::uint64_t &bytes, std::string &why) {
    why = "'" + text + "' is neither a fraction of physical memory (0.5, 2/3) nor a size (12G)";
    double fraction = -1;
    if (const auto slash = text.find('/'); slash != std::string::npos) {
        double a = 0, b = 0;
        if (!real(text.substr(0, slash), a) || !real(text.substr(slash + 1), b) || b <= 0) return false;
        fraction = a / b;
    } else if (double v = 0; real(text, v) && v < 1) {
        fraction = v;
    }
    if (fraction >= 0) {
        if (fraction <= 0 || fraction > 1) {
            why = "'" + text + "' is not a fraction between 0 and 1 of physical memory";
            return false;
        }
        bytes = static_cast<std::uint64_t>(fraction * static_cast<double>(physical));
        return true;
    }
    std::string s = text;
    unsigned tera = 0;
    if (const auto n = s.size(); n > 1 && (s[n - 1] == 'T' || s[n - 1] == 't')) {
        s.back() = 'G';
        tera = 10;
    }
    std::size_t size = 0;
    if (!base::parse_size(s, size) || size == 0 || (tera && size > (~std::size_t{0} >> tera))) return false;
    bytes = std::uint64_t{size} << tera;
    return true;
}

bool pinnable_ratio_parse(const std::string &text, double conduit_default, double &ratio, std::string &why) {
    if (text.empty() || text == "auto") {
        ratio = conduit_default;
        return true;
    }
    double v = 0;
    if (!real(text, v) || !(v > 0) || v > 1) {
        why = "'" + text + "' is not a fraction of physical memory above 0 and at most 1";
        return false;
    }
    ratio = v;
    return true;
}

base::Status PinLimit::init(const char *name, std::size_t local_ranks,
                            const std::function<bool(void *, std::size_t)> &probe, const PinPolicy &policy) {
    const std::string op = std::string(name) + " conduit init";
    const std::uint64_t physical =
        static_cast<std::uint64_t>(::sysconf(_SC_PHYS_PAGES)) * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
    const std::string &text = base::knob_string(base::Knob::PHYSMEM_MAX);
    const bool max_set = base::knob_is_set(base::Knob::PHYSMEM_MAX);
    std::uint64_t host = 0;
    std::string why;
    if ((max_set || !policy.ratio) && !physmem_parse(text, physical, host, why))
        return base::report(base::Status::argument, op.c_str(),
                            "set SLUICE_PHYSMEM_MAX to a fraction (2/3) or a size (12G)", "SLUICE_PHYSMEM_MAX: %s",
                            why.c_str());
    std::string how = "SLUICE_PHYSMEM_MAX=" + text + " of " + mib(physical);
    const char *raise = "SLUICE_PHYSMEM_MAX";
    if (policy.ratio) {
        // GASNet's Portals and gemini/aries conduits: a share of physical
        // memory sets the maximum, which SLUICE_PHYSMEM_MAX may only lower.
        const std::string &ratio_text = base::knob_string(base::Knob::PHYSMEM_PINNABLE_RATIO);
        double ratio = 0;
        if (!pinnable_ratio_parse(ratio_text, policy.ratio, ratio, why))
            return base::report(base::Status::argument, op.c_str(),
                                "set SLUICE_PHYSMEM_PINNABLE_RATIO to a fraction above 0 and at most 1 (0.5), or auto",
                                "SLUICE_PHYSMEM_PINNABLE_RATIO: %s", why.c_str());
        char shown[32];
        std::snprintf(shown, sizeof shown, "%.2f", ratio);
        const std::string ratio_how =
            "SLUICE_PHYSMEM_PINNABLE_RATIO=" + (ratio_text.empty() || ratio_text == "auto" ? shown : ratio_text);
        const auto by_ratio = static_cast<std::uint64_t>(ratio * static_cast<double>(physical));
        if (max_set && host < by_ratio) {
            how += ", below " + ratio_how;
        } else {
            host = by_ratio;
            how = ratio_how + " of " + mib(physical);
            raise = "SLUICE_PHYSMEM_PINNABLE_RATIO";
        }
    }
    std::uint64_t limit = host / std::max<std::size_t>(1, local_ranks);
    how += ", " + std::to_string(local_ranks) + " rank(s) on this host";
    fix_ = std::string("attach a smaller segment, run fewer ranks per host, or raise ") + raise +
           (policy.memlock ? " (and the locked-memory limit, ulimit -l)" : "");
    rlimit rl{};
    if (policy.memlock && ::getrlimit(RLIMIT_MEMLOCK, &rl) == 0) {
        if (rl.rlim_cur != rl.rlim_max) {
            const rlimit up{rl.rlim_max, rl.rlim_max};
            if (::setrlimit(RLIMIT_MEMLOCK, &up) == 0) {
                base::say("%s: RLIMIT_MEMLOCK raised from %s to its hard limit %s", name,
                          rl.rlim_cur == RLIM_INFINITY ? "unlimited" : mib(rl.rlim_cur).c_str(),
                          up.rlim_cur == RLIM_INFINITY ? "unlimited" : mib(up.rlim_cur).c_str());
                rl = up;
            }
        }
        if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < limit && !may_lock_any()) {
            limit = rl.rlim_cur;
            how += ", capped by RLIMIT_MEMLOCK";
        }
    }
    if (probe && !max_set && !base::knob_bool(base::Knob::PHYSMEM_NOPROBE) && limit) {
        // Halved until a registration works (down to 1 MiB), then up
        // between that and the last that failed, in 1 MiB steps, at most
        // six more tries.
        constexpr std::uint64_t mib_1 = std::uint64_t{1} << 20;
        auto works = [&](std::uint64_t n) {
            void *p = ::mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
            const bool ok = p != MAP_FAILED && probe(p, n);
            if (p != MAP_FAILED) ::munmap(p, n);
            return ok;
        };
        std::uint64_t good = 0, bad = limit + 1;
        for (std::uint64_t next = limit; next >= mib_1; next = next / 2 & ~(mib_1 - 1)) {
            if (works(next)) {
                good = next;
                break;
            }
            bad = next;
        }
        for (int step = 0; step < 6 && good && bad - good > mib_1; ++step) {
            const std::uint64_t next = (good + bad) / 2 & ~(mib_1 - 1);
            if (next <= good) break;
            (works(next) ? good : bad) = next;
        }
        how += good == limit ? ", probe passed" : good ? ", probed: the NIC registered no more"
                                                       : ", probed: the NIC registered not even 1 MiB";
        // GASNet's GASNET_PHYSMEM_WARN: say what the probe found, and how
        // to spare the next job the probe.
        if (base::knob_bool(base::Knob::PHYSMEM_WARN) && base::log_rank() <= 0)
            std::fprintf(stderr,
                         "sluice[rank 0] warning: %s: pinnable memory probed at %s per rank (%s); set "
                         "SLUICE_PHYSMEM_MAX to skip the probe\n",
                         name, mib(good).c_str(), how.c_str() + 2);
        limit = good;
    }
    limit_ = limit;
    how_ = how;
    base::say("%s: pinnable memory %s per rank (%s)", name, mib(limit).c_str(), how.c_str());
    return base::Status::ok;
}

base::Status PinLimit::take(const char *name, const void *base, std::size_t size) {
    if (pinned_.fetch_add(size) + size <= limit_) return base::Status::ok;
    const std::uint64_t before = pinned_.fetch_sub(size) - size;
    const std::string op = std::string("register memory (") + name + ")";
    return base::report(base::Status::resource, op.c_str(), fix_.c_str(),
                        "%s: registering %zu bytes at %p would pin %llu bytes, more than the %llu this rank may "
                        "(%s)",
                        name, size, base, static_cast<unsigned long long>(before + size),
                        static_cast<unsigned long long>(limit_), how_.c_str());
}

} // namespace sluice::conduit::common
