// spawners/ssh/tree.hpp - one process of the ssh spawner's tree: sluicerun
// at the root, or the control process of a host.  It starts the hosts below
// it over ssh, serves their control connections, merges their allgather
// parts with its own ranks' part, passes codes up and orders down.  It is
// the JobRelay of its host's local launcher (spawners/local/launcher.hpp),
// which forks and serves the host's ranks.
#pragma once

#include "spawners/local/launcher.hpp"
#include "spawners/ssh/hosts.hpp"
#include "spawners/ssh/wire.hpp"

#include <chrono>
#include <deque>
#include <optional>
#include <string>
#include <vector>

namespace sluice::spawner::ssh {

struct TreeSettings {
    // At the root: the whole job (host 0, every name).  On a host: what its
    // parent sent.  Each child gets a copy narrowed to its subtree.
    NodeJob job;
    bool root = false;
    unsigned degree = 1;
    unsigned local_first = 0, local_count = 0;  // this host's ranks (none at the root)
};

class TreeRelay final : public local::JobRelay {
public:
    explicit TreeRelay(TreeSettings settings);
    ~TreeRelay() override;
    TreeRelay(const TreeRelay &) = delete;
    TreeRelay &operator=(const TreeRelay &) = delete;

    // Before launch(): listens when there are hosts below; on a host, also
    // connects to the parent and says hello.  False with a message.
    bool prepare(std::string &error);
    // The hosts this process starts.
    const std::vector<Subtree> &subtrees() const { return subtrees_; }
    // What this process would start, for -t: one ssh command line per host
    // below it (with its NodeJob), without starting anything.
    NodeJob child_job(const Subtree &subtree, const std::string &parent_address) const;
    std::string name() const;
    bool parent_lost() const { return parent_lost_; }

    // JobRelay
    void start(local::RankControl &control) override;
    void poll_fill(std::vector<pollfd> &fds) override;
    void poll_handle(const pollfd *fds, std::size_t count) override;
    int poll_timeout() const override;
    void child_ended(pid_t pid, int wstatus) override;
    void allgather_block(std::string block) override;
    void ranks_quiet() override;
    void event(local::JobEvent event, int code) override { event_handle(event, code); }
    void signal_received(int sig, bool second) override;
    void ranks_ended() override {
        ranks_ended_ = true;
        done_check();
    }
    bool finished() const override;

private:
    using Clock = std::chrono::steady_clock;
    enum class State { starting, connected, done, lost };
    struct Child {
        Subtree subtree;
        unsigned first_rank = 0, rank_count = 0;
        State state = State::starting;
        pid_t ssh_pid = -1;
        bool ssh_reaped = false;
        local::MessageStream stdin_pipe;  // the job frame, then held open until ssh ends
        local::MessageStream link;        // the control connection, after hello
        std::deque<std::string> blocks;   // allgather parts not yet merged
        bool quiet = false;
        Clock::time_point spawned;
        std::optional<Clock::time_point> kill_at;  // its ssh gets SIGKILL then
    };
    struct Pending {  // accepted, no valid hello yet
        local::MessageStream stream;
        std::string peer;
        Clock::time_point until;
    };
    enum class Watch { listener, pending, child_stdin, child_link, parent, ssh_session };

    std::string host_label(unsigned host) const;
    std::string child_label(const Child &c) const { return host_label(c.subtree.first); }
    void child_spawn(Child &c);
    void child_read(Child &c, bool drain);
    void child_message(Child &c, std::uint32_t type, std::string &&payload);
    void child_fail(Child &c, const std::string &reason, int code);
    void ssh_kill(Child &c);
    void children_send(TreeMessage type, std::string_view payload, bool skip_quiet = false);
    void accept_all();
    void pending_read(Pending &p);
    void refuse(Pending &p, const std::string &why);
    void parent_read();
    void parent_message(std::uint32_t type, std::string &&payload);
    void parent_lost_now(const std::string &reason);
    void session_read();
    void event_handle(local::JobEvent event, int code);
    void stop_all();
    void combine();
    void done_check();
    void timers_run();
    void say_verbose(const char *format, ...) const __attribute__((format(printf, 2, 3)));

    TreeSettings settings_;
    std::string self_name_;
    std::vector<Subtree> subtrees_;
    std::vector<Child> children_;
    local::RankControl *control_ = nullptr;
    local::UniqueFd listener_;
    unsigned port_ = 0;
    std::vector<Pending> pending_;
    std::vector<std::pair<Watch, std::size_t>> watched_;  // what each polled entry is

    // Parent side (hosts only).
    local::MessageStream parent_;
    pid_t parent_pid_ = -1;
    bool session_open_ = true;  // stdin, the ssh session, has not ended
    bool parent_lost_ = false;
    bool done_sent_ = false;
    bool parent_closed_ = false;  // after done: the parent hung up (or was given time to)
    Clock::time_point done_at_;
    bool quiet_sent_ = false;

    std::deque<std::string> local_blocks_;
    bool local_quiet_ = false;
    bool ranks_ended_ = false;
    unsigned round_ = 0;
    bool stopping_ = false;    // every rank below is being killed
    bool signalled_ = false;   // a signal is on its way to every rank
    bool deadline_sent_ = false;
    std::optional<Clock::time_point> stop_kill_at_;  // every ssh still running gets SIGKILL then
};

} // namespace sluice::spawner::ssh
