// tests/perf/softnic-section.hpp - how the driver (driver.cpp) plans a
// section whose conduit the build may run on a software NIC of its own
// (gni: tests/softnic/gni, lapi: tests/softnic/lapi).  The conduit must be
// built in and probe where the driver runs, or the NIC's softnic-run must
// be at hand: the driver then builds the NIC once (softnic-run --lib-dir)
// and starts the section's jobs under softnic-run (which puts the NIC's
// library first on LD_LIBRARY_PATH and sets the job's variables), on a
// fabric file of their own unless the NIC's fabric variable names one.
#pragma once

#include "tests/perf/driver.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>
#include <vector>

namespace sluice::perf {

// What the software NIC of a section is.
struct SoftNic {
    const char *conduit;     // "gni"
    const char *name;        // "the software uGNI NIC"
    std::string run;         // its softnic-run, "" when the build has none
    const char *fabric_var;  // "SOFTNIC_GNI_FABRIC"
};

struct SoftnicSection {
    bool on = false;       // the section runs
    bool softnic = false;  // ... under softnic-run
    std::string note;      // why not (or a remark), for the report
    std::vector<std::string> prefix;  // softnic-run, before the job's command
    std::vector<std::string> env;     // the fabric file, when this run makes it
    std::string fabric;    // that file, removed once the section's jobs are over

    ~SoftnicSection() {
        if (fabric.empty())
            return;
        unlink(fabric.c_str());
        forget_at_signal(fabric);
    }
};

// `missing`: why the conduit does not run here as it is ("" when it
// probes); `built`: the build has it.  `tmp` holds the build's log.
inline void softnic_plan(SoftnicSection &p, const SoftNic &nic, std::string missing, bool built,
                         const std::string &tmp, double timeout) {
    if (!missing.empty() && built && !nic.run.empty() && access(nic.run.c_str(), X_OK) == 0) {
        const std::vector<std::string> build{nic.run, "--lib-dir"};
        const std::string log = tmp + "/softnic-" + nic.conduit + ".log";
        const std::string what = std::string("building ") + nic.name;
        if (const JobResult r = run_job(build, log, timeout); r.ok) {
            p.softnic = true;
            missing.clear();
        } else {
            show_failure(what.c_str(), build, r, log);
            missing += "; " + what + " failed";
        }
    }
    p.on = missing.empty();
    p.note = p.on ? "" : std::string(nic.conduit) + " section skipped: " + missing;
    if (!p.softnic)
        return;
    p.prefix.push_back(nic.run);
    if (!std::getenv(nic.fabric_var)) {
        p.fabric = "/dev/shm/sluice-bench-" + std::string(nic.conduit) + "-" + std::to_string(getpid());
        remove_at_signal(p.fabric, false);
        p.env.push_back(std::string(nic.fabric_var) + "=" + p.fabric);
    }
}

} // namespace sluice::perf
