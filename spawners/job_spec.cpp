// spawners/job_spec.cpp - what the spawners of sluicerun share: quoting and
// handing the job to another launcher.
#include "spawners/job_spec.hpp"

#include "base/knobs.hpp"
#include "spawners/local/launcher.hpp"

#include <algorithm>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <unistd.h>

extern char **environ;

namespace sluice::spawner {

std::string shell_quote(const std::string &word) {
    if (!word.empty() && word.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                "0123456789_-+=/.,:@%") == std::string::npos)
        return word;
    std::string out = "'";
    for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

std::vector<std::string> words_split(const std::string &text) {
    std::vector<std::string> words;
    std::size_t at = 0;
    while ((at = text.find_first_not_of(" \t", at)) != std::string::npos) {
        const std::size_t end = text.find_first_of(" \t", at);
        words.push_back(text.substr(at, end == std::string::npos ? std::string::npos : end - at));
        at = end;
    }
    return words;
}

std::string command_line(const std::vector<std::string> &words) {
    std::string line;
    for (const auto &w : words) line += (line.empty() ? "" : " ") + shell_quote(w);
    return line;
}

std::vector<std::pair<std::string, std::string>> job_environment(const JobSpec &spec) {
    std::vector<std::pair<std::string, std::string>> out;
    auto internal = [](const std::string &name) {
        const auto &table = base::knob_table();
        return name == "SLUICE_JOB_ID" || std::any_of(table.begin(), table.end(), [&](const base::KnobInfo &k) {
                   return k.internal && name == k.name;
               });
    };
    for (char **e = environ; e && *e; ++e) {
        const std::string entry(*e);
        const std::size_t eq = entry.find('=');
        if (entry.rfind("SLUICE_", 0) != 0 || eq == std::string::npos || internal(entry.substr(0, eq))) continue;
        out.emplace_back(entry.substr(0, eq), entry.substr(eq + 1));
    }
    out.emplace_back("SLUICE_JOB_ID", spec.job_id);
    for (const std::string &name : spec.propagate) {
        const char *value = std::getenv(name.c_str());
        auto same = [&](const auto &kv) { return kv.first == name; };
        if (!value) {
            if (spec.verbose) local::say("-E %s: not set here, so not sent", name.c_str());
        } else if (std::none_of(out.begin(), out.end(), same)) {
            out.emplace_back(name, value);
        }
    }
    return out;
}

int launcher_exec(const JobSpec &job, const std::vector<std::string> &command, const char *knob) {
    const std::string line = command_line(command);
    if (job.dry_run) {
        std::printf("%s\n", line.c_str());
        std::fflush(stdout);
        return 0;
    }
    if (job.verbose) std::fprintf(stderr, "sluicerun: exec %s\n", line.c_str());
    std::fflush(nullptr);
    std::vector<char *> argv;
    for (const auto &w : command) argv.push_back(const_cast<char *>(w.c_str()));
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    const int err = errno;
    std::fprintf(stderr, "sluicerun: cannot run the %s spawner's launcher '%s': %s; fix: install it, or set %s to "
                 "its path\n", job.spawner.c_str(), command[0].c_str(), std::strerror(err), knob);
    return 127;
}

} // namespace sluice::spawner
