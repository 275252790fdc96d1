// tests/unit/unit_env.hpp - fixtures shared by the unit tests: a clean
// SLUICE_* environment per test, and stderr capture.
#pragma once

#include "base/knobs.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <unistd.h>
#include <utility>
#include <vector>

extern char **environ;

namespace sluice_test {

// Removes every SLUICE_* variable for the test and puts them back after it;
// the knob table is reloaded both times.
class CleanEnvironment : public ::testing::Test {
protected:
    void SetUp() override {
        for (char **e = environ; e && *e; ++e) {
            if (std::strncmp(*e, "SLUICE", 6) != 0) continue;
            const char *eq = std::strchr(*e, '=');
            if (!eq) continue;
            saved_.emplace_back(std::string(*e, static_cast<std::size_t>(eq - *e)), std::string(eq + 1));
        }
        for (const auto &kv : saved_) ::unsetenv(kv.first.c_str());
        (void)sluice::base::knobs_load();
    }
    void TearDown() override {
        for (const auto &name : set_) ::unsetenv(name.c_str());
        for (const auto &kv : saved_) ::setenv(kv.first.c_str(), kv.second.c_str(), 1);
        (void)sluice::base::knobs_load();
    }
    // setenv that TearDown undoes.
    void set(const char *name, const char *value) {
        ::setenv(name, value, 1);
        set_.emplace_back(name);
    }

private:
    std::vector<std::pair<std::string, std::string>> saved_;
    std::vector<std::string> set_;
};

// Captures what is written to file descriptor 2 between start() and stop().
class StderrCapture {
public:
    void start() {
        std::fflush(stderr);
        ASSERT_EQ(::pipe(pipe_), 0);
        saved_ = ::dup(2);
        ::dup2(pipe_[1], 2);
    }
    std::string stop() {
        std::fflush(stderr);
        ::dup2(saved_, 2);
        ::close(saved_);
        ::close(pipe_[1]);
        std::string out;
        char buf[4096];
        ssize_t n;
        while ((n = ::read(pipe_[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
        ::close(pipe_[0]);
        return out;
    }

private:
    int pipe_[2] = {-1, -1};
    int saved_ = -1;
};

} // namespace sluice_test
