// spawners/ssh/tree.cpp - one process of the ssh spawner's tree (tree.hpp).
//
// Allgather: every host's launcher hands its ranks' part of a round to the
// relay; a relay sends its subtree's part (its own, then its children's, in
// rank order, since subtrees hold contiguous ranks) up once all are there;
// the root sends the whole round down, and each host delivers it to its
// ranks.  A part that will never come again (all its ranks finalized or
// ended) is announced once as `quiet` and counts as empty from then on.
#include "spawners/ssh/tree.hpp"

#include "base/knobs.hpp"
#include "spawners/job_spec.hpp"
#include "spawners/ssh/remote.hpp"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <csignal>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

namespace sluice::spawner::ssh {
namespace {

using local::JobEvent;
using local::MessageHeader;
using local::MessageStream;

constexpr auto hello_timeout = std::chrono::seconds(10);
// After `done`, how long a host's ssh may take to end, and how long a host
// waits for its parent to hang up.
constexpr auto leave_timeout = std::chrono::seconds(10);
constexpr std::size_t pending_limit = 64;
constexpr std::size_t read_slice = std::size_t{1} << 20;

std::string payload_u32(std::uint32_t value) {
    std::string out;
    put_u32(out, value);
    return out;
}

// A part of a round: `count` u32 lengths, each followed by its bytes.
bool part_valid(std::string_view part, unsigned count) {
    WireReader in(part);
    std::string bytes;
    for (unsigned i = 0; i < count; ++i)
        if (!in.string(bytes)) return false;
    return in.at_end();
}

// The front part of a source, or empty parts for its ranks once it is quiet.
void part_take(std::deque<std::string> &blocks, unsigned count, std::string &out) {
    if (blocks.empty()) {
        out.append(std::size_t{count} * sizeof(std::uint32_t), '\0');
        return;
    }
    out += blocks.front();
    blocks.pop_front();
}

std::string status_text(int wstatus) {
    if (WIFSIGNALED(wstatus)) return "was killed by signal " + std::to_string(WTERMSIG(wstatus));
    return "exited with status " + std::to_string(WEXITSTATUS(wstatus));
}

int status_code(int wstatus) {
    if (WIFSIGNALED(wstatus)) return 128 + WTERMSIG(wstatus);
    return WEXITSTATUS(wstatus) ? WEXITSTATUS(wstatus) : 1;
}

int milliseconds_until(std::chrono::steady_clock::time_point when) {
    const double ms = std::chrono::duration<double, std::milli>(when - std::chrono::steady_clock::now()).count();
    return static_cast<int>(std::clamp(std::ceil(ms), 0.0, static_cast<double>(INT_MAX)));
}

std::string ranks_text(unsigned first, unsigned count) {
    return count == 1 ? "rank " + std::to_string(first)
                      : "ranks " + std::to_string(first) + "-" + std::to_string(first + count - 1);
}

} // namespace

TreeRelay::TreeRelay(TreeSettings settings) : settings_(std::move(settings)) {
    const NodeJob &job = settings_.job;
    const Placement placement{job.ranks, job.hosts};
    subtrees_ = settings_.root ? subtrees_split(job.host, static_cast<unsigned>(job.names.size()), settings_.degree)
                               : subtrees_split(job.host + 1, static_cast<unsigned>(job.names.size()) - 1,
                                                settings_.degree);
    children_.resize(subtrees_.size());
    for (std::size_t i = 0; i < subtrees_.size(); ++i) {
        Child &c = children_[i];
        c.subtree = subtrees_[i];
        const unsigned last = c.subtree.first + c.subtree.count - 1;
        c.first_rank = placement.first(c.subtree.first);
        c.rank_count = placement.first(last) + placement.count(last) - c.first_rank;
    }
    self_name_ = settings_.root ? "sluicerun" : host_label(job.host);
}

TreeRelay::~TreeRelay() {
    // launch() returns only when every ssh was reaped; this is for early exits.
    for (Child &c : children_) ssh_kill(c);
}

std::string TreeRelay::host_label(unsigned host) const {
    return "host " + std::to_string(host) + " (" + settings_.job.names[host - settings_.job.host] + ")";
}

std::string TreeRelay::name() const { return self_name_; }

void TreeRelay::say_verbose(const char *format, ...) const {
    if (!settings_.job.verbose) return;
    char text[900];
    va_list ap;
    va_start(ap, format);
    std::vsnprintf(text, sizeof text, format, ap);
    va_end(ap);
    local::say("%s", text);
}

bool TreeRelay::prepare(std::string &error) {
    if (!children_.empty()) {
        listener_ = listener_open(port_, error);
        if (!listener_) return false;
        say_verbose("listening for the control connections of %zu host(s) on port %u", children_.size(), port_);
    }
    if (settings_.root) return true;
    parent_pid_ = ::getppid();
    const NodeJob &job = settings_.job;
    std::vector<std::string> addresses = job.parent_addresses;
    // The address this ssh session came from reaches the parent's host too.
    if (const char *connection = std::getenv("SSH_CONNECTION")) {
        const std::string from(connection, std::strcspn(connection, " "));
        if (!from.empty() && std::find(addresses.begin(), addresses.end(), from) == addresses.end())
            addresses.push_back(from);
    }
    local::UniqueFd socket;
    std::string connected;
    const std::string failed = connect_first(addresses, job.parent_port, 10.0, socket, connected);
    if (!failed.empty()) {
        error = "cannot connect back to " + job.parent_name + " (" + failed +
                "); fix: let this host open TCP connections to the host it was started from";
        return false;
    }
    parent_ = MessageStream(std::move(socket));
    parent_.send(static_cast<std::uint32_t>(TreeMessage::hello), hello_encode(job.secret, job.host));
    (void)parent_.write_some();
    say_verbose("connected to %s at %s", job.parent_name.c_str(), connected.c_str());
    return true;
}

NodeJob TreeRelay::child_job(const Subtree &subtree, const std::string &parent_address) const {
    NodeJob job = settings_.job;
    const auto from = job.names.begin() + (subtree.first - job.host);
    job.names.assign(from, from + subtree.count);
    job.host = subtree.first;
    job.parent_addresses.clear();
    if (!parent_address.empty()) job.parent_addresses.push_back(parent_address);
    job.parent_port = port_;
    job.parent_name = self_name_;
    return job;
}

void TreeRelay::start(local::RankControl &control) {
    control_ = &control;
    for (Child &c : children_) child_spawn(c);
}

void TreeRelay::child_spawn(Child &c) {
    const std::string &host = settings_.job.names[c.subtree.first - settings_.job.host];
    const NodeJob job = child_job(c.subtree, address_toward(host_address_part(host)));
    const std::vector<std::string> argv = ssh_command(host, remote_command(job.job_id, c.subtree.first));
    if (settings_.job.verbose) {
        std::string line;
        for (const auto &word : argv) line += (line.empty() ? "" : " ") + shell_quote(word);
        local::say("starting %s, which runs %s with the %u host(s) below it: %s", child_label(c).c_str(),
                   ranks_text(c.first_rank, c.rank_count).c_str(), c.subtree.count - 1, line.c_str());
    }
    c.spawned = Clock::now();
    local::UniqueFd pipe;
    std::string error;
    c.ssh_pid = ssh_spawn(argv, pipe, error);
    if (c.ssh_pid < 0) {
        c.ssh_reaped = true;
        child_fail(c, error, 1);
        return;
    }
    c.stdin_pipe = MessageStream(std::move(pipe));
    c.stdin_pipe.send(static_cast<std::uint32_t>(TreeMessage::job), node_job_encode(job));
    (void)c.stdin_pipe.write_some();
}

void TreeRelay::ssh_kill(Child &c) {
    if (c.ssh_pid > 0 && !c.ssh_reaped) ::kill(c.ssh_pid, SIGKILL);
}

void TreeRelay::child_fail(Child &c, const std::string &reason, int code) {
    if (c.state == State::done || c.state == State::lost) return;
    const bool expected = stopping_ || parent_lost_ || signalled_;
    c.state = State::lost;
    c.quiet = true;
    c.blocks.clear();
    c.link.close(true);
    ssh_kill(c);  // its side then sees the connection end and stops its ranks
    if (expected) {
        say_verbose("%s: %s", child_label(c).c_str(), reason.c_str());
        return;
    }
    local::say("%s: %s; stopping the job", child_label(c).c_str(), reason.c_str());
    event_handle(JobEvent::failure, code);
}

void TreeRelay::children_send(TreeMessage type, std::string_view payload, bool skip_quiet) {
    const local::Frames frames = local::frame_make(static_cast<std::uint32_t>(type), payload);
    for (Child &c : children_) {
        if (c.state != State::connected || (skip_quiet && c.quiet)) continue;
        c.link.send(frames);
        (void)c.link.write_some();
    }
}

void TreeRelay::poll_fill(std::vector<pollfd> &fds) {
    watched_.clear();
    auto watch = [&](Watch what, std::size_t index, int fd, bool write) {
        fds.push_back({fd, static_cast<short>(write ? POLLIN | POLLOUT : POLLIN), 0});
        watched_.emplace_back(what, index);
    };
    if (listener_) watch(Watch::listener, 0, listener_.get(), false);
    for (std::size_t i = 0; i < pending_.size(); ++i) watch(Watch::pending, i, pending_[i].stream.fd(), false);
    for (std::size_t i = 0; i < children_.size(); ++i) {
        const Child &c = children_[i];
        // Only its end matters on the pipe: POLLOUT while the job frame is unsent.
        if (c.stdin_pipe.is_open() && c.stdin_pipe.wants_write())
            watch(Watch::child_stdin, i, c.stdin_pipe.fd(), true);
        if (c.link.is_open()) watch(Watch::child_link, i, c.link.fd(), c.link.wants_write());
    }
    if (parent_.is_open()) watch(Watch::parent, 0, parent_.fd(), parent_.wants_write());
    if (!settings_.root && session_open_) watch(Watch::ssh_session, 0, 0, false);
}

void TreeRelay::poll_handle(const pollfd *fds, std::size_t count) {
    for (std::size_t i = 0; i < count && i < watched_.size(); ++i) {
        const short events = fds[i].revents;
        if (!events) continue;
        const auto [what, index] = watched_[i];
        switch (what) {
        case Watch::listener:
            accept_all();
            break;
        case Watch::pending:
            if (pending_[index].stream.is_open()) pending_read(pending_[index]);
            break;
        case Watch::child_stdin:
            (void)children_[index].stdin_pipe.write_some();
            break;
        case Watch::child_link: {
            Child &c = children_[index];
            if (events & POLLOUT) (void)c.link.write_some();
            if (events & (POLLIN | POLLHUP | POLLERR)) child_read(c, false);
            break;
        }
        case Watch::parent:
            if (events & POLLOUT) (void)parent_.write_some();
            if (events & (POLLIN | POLLHUP | POLLERR)) parent_read();
            break;
        case Watch::ssh_session:
            session_read();
            break;
        }
    }
    pending_.erase(std::remove_if(pending_.begin(), pending_.end(), [](const Pending &p) { return !p.stream.is_open(); }),
                   pending_.end());
    // A write that failed closed a child's link without a read seeing it.
    for (Child &c : children_)
        if (c.state == State::connected && !c.link.is_open())
            child_fail(c, "its control connection broke", 1);
    if (!settings_.root && !parent_lost_ && !done_sent_ && !parent_.is_open())
        parent_lost_now("the control connection to " + settings_.job.parent_name + " broke");
    timers_run();
    combine();
    done_check();
}

void TreeRelay::accept_all() {
    for (;;) {
        const int fd = ::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) return;  // EAGAIN, or a connection that vanished: nothing to do
        nodelay_set(fd);
        Pending p{MessageStream(local::UniqueFd(fd)), peer_name(fd), Clock::now() + hello_timeout};
        if (pending_.size() >= pending_limit) {
            refuse(p, "too many connections waiting for their hello");
            continue;
        }
        pending_.push_back(std::move(p));
    }
}

void TreeRelay::refuse(Pending &p, const std::string &why) {
    local::say("refused a control connection from %s: %s", p.peer.c_str(), why.c_str());
    p.stream.close(true);
}

void TreeRelay::pending_read(Pending &p) {
    const bool open = p.stream.read_some(4096);
    MessageHeader header;
    std::string payload, secret;
    unsigned host = 0;
    switch (p.stream.next(header, payload)) {
    case MessageStream::Parse::none:
        if (!open) refuse(p, "it closed before saying hello");
        return;
    case MessageStream::Parse::oversize:
        return refuse(p, "not a Sluice control connection");
    case MessageStream::Parse::message:
        break;
    }
    if (header.type != static_cast<std::uint32_t>(TreeMessage::hello)) return refuse(p, "not a Sluice control connection");
    if (!hello_decode(payload, secret, host)) return refuse(p, "a malformed hello (or a host of another byte order)");
    if (!secret_equal(secret, settings_.job.secret)) return refuse(p, "it does not know the job's secret");
    auto it = std::find_if(children_.begin(), children_.end(), [&](const Child &c) {
        return c.subtree.first == host && c.state == State::starting;
    });
    if (it == children_.end()) return refuse(p, "host " + std::to_string(host) + " is not a host waited for here");
    Child &c = *it;
    c.link = std::move(p.stream);
    c.state = State::connected;
    say_verbose("%s connected from %s, %.3f s after its ssh started", child_label(c).c_str(), p.peer.c_str(),
                std::chrono::duration<double>(Clock::now() - c.spawned).count());
    if (stopping_) {  // it missed the order
        c.link.send(static_cast<std::uint32_t>(TreeMessage::stop), {});
        (void)c.link.write_some();
    }
    child_read(c, false);  // what came right behind the hello
}

// `drain`: its ssh has ended, so take everything it left; the caller judges.
void TreeRelay::child_read(Child &c, bool drain) {
    const bool open = c.link.is_open() ? c.link.read_some(drain ? SIZE_MAX : read_slice) : false;
    MessageHeader header;
    std::string payload;
    for (;;) {
        const auto parsed = c.link.next(header, payload);
        if (parsed == MessageStream::Parse::none) break;
        if (parsed == MessageStream::Parse::oversize) return child_fail(c, "sent a malformed control message", 1);
        child_message(c, header.type, std::move(payload));
        if (c.state == State::lost) return;
    }
    if (!open && !drain && c.state == State::connected)
        child_fail(c, "its control connection closed before it finished (its control process or ssh ended)", 1);
}

void TreeRelay::child_message(Child &c, std::uint32_t type, std::string &&payload) {
    switch (static_cast<TreeMessage>(type)) {
    case TreeMessage::block:
        if (!part_valid(payload, c.rank_count)) return child_fail(c, "sent a malformed allgather part", 1);
        c.blocks.push_back(std::move(payload));
        return;
    case TreeMessage::quiet:
        c.quiet = true;
        return;
    case TreeMessage::event: {
        WireReader in(payload);
        std::uint32_t event, code;
        if (!in.u32(event) || !in.u32(code) || event > static_cast<std::uint32_t>(JobEvent::nonzero))
            return child_fail(c, "sent a malformed event", 1);
        return event_handle(static_cast<JobEvent>(event), static_cast<int>(code));
    }
    case TreeMessage::done:
        c.state = State::done;
        c.link.close();  // it waits for this before leaving
        c.kill_at = Clock::now() + leave_timeout;
        say_verbose("%s and the hosts below it are done", child_label(c).c_str());
        return;
    default:
        return child_fail(c, "sent an unknown control message (type " + std::to_string(type) + ")", 1);
    }
}

void TreeRelay::child_ended(pid_t pid, int wstatus) {
    auto it = std::find_if(children_.begin(), children_.end(), [&](const Child &c) { return c.ssh_pid == pid; });
    if (it == children_.end()) return;
    Child &c = *it;
    c.ssh_reaped = true;
    c.kill_at.reset();
    c.stdin_pipe.close();
    child_read(c, true);
    if (c.state == State::done || c.state == State::lost) {
        say_verbose("%s: ssh %s", child_label(c).c_str(), status_text(wstatus).c_str());
        return;
    }
    std::string reason = "ssh " + status_text(wstatus);
    if (c.state == State::starting)
        reason += " before the host's control process connected back; fix: check that `" +
                  base::knob_string(base::Knob::SSH_CMD) + " " + base::knob_string(base::Knob::SSH_OPTIONS) + " " +
                  settings_.job.names[c.subtree.first - settings_.job.host] +
                  " true` works (SLUICE_SSH_CMD, SLUICE_SSH_OPTIONS) and that sluicerun is there "
                  "(SLUICE_SSH_REMOTE_CMD)";
    child_fail(c, reason, status_code(wstatus));
}

void TreeRelay::parent_read() {
    const bool open = parent_.read_some(read_slice);
    MessageHeader header;
    std::string payload;
    for (;;) {
        const auto parsed = parent_.next(header, payload);
        if (parsed == MessageStream::Parse::none) break;
        if (parsed == MessageStream::Parse::oversize)
            return parent_lost_now("a malformed message from " + settings_.job.parent_name);
        parent_message(header.type, std::move(payload));
        if (parent_lost_) return;
    }
    if (open) return;
    if (done_sent_)
        parent_closed_ = true;
    else
        parent_lost_now("the control connection to " + settings_.job.parent_name + " closed");
}

void TreeRelay::parent_message(std::uint32_t type, std::string &&payload) {
    WireReader in(payload);
    std::uint32_t value = 0;
    switch (static_cast<TreeMessage>(type)) {
    case TreeMessage::result:
        if (!part_valid(payload, settings_.job.ranks))
            return parent_lost_now("a malformed allgather round from " + settings_.job.parent_name);
        control_->allgather_deliver(local::frame_make(static_cast<std::uint32_t>(local::MessageType::allgather_result),
                                                      payload));
        children_send(TreeMessage::result, payload, true);
        return;
    case TreeMessage::signal:
        if (!in.u32(value) || value == 0 || value >= 64) return parent_lost_now("a malformed signal order");
        signalled_ = true;
        say_verbose("forwarding signal %u from %s", value, settings_.job.parent_name.c_str());
        children_send(TreeMessage::signal, payload);
        control_->signal_forward(static_cast<int>(value));
        return;
    case TreeMessage::stop:
        say_verbose("%s ordered every rank killed", settings_.job.parent_name.c_str());
        stop_all();
        return;
    case TreeMessage::deadline: {
        std::string reason;
        if (!in.u32(value) || !in.string(reason)) return parent_lost_now("a malformed deadline order");
        children_send(TreeMessage::deadline, payload);
        control_->deadline(value / 1000.0, reason);
        return;
    }
    default:
        return parent_lost_now("an unknown message (type " + std::to_string(type) + ") from " +
                               settings_.job.parent_name);
    }
}

void TreeRelay::parent_lost_now(const std::string &reason) {
    if (parent_lost_ || done_sent_) return;
    parent_lost_ = true;
    stopping_ = true;
    local::say("%s; killing the ranks of this host and the hosts below it", reason.c_str());
    if (control_) control_->stop();
    parent_.close(true);
    for (Child &c : children_) {
        c.link.close(true);
        ssh_kill(c);
    }
}

// The ssh session's stdin: nothing more comes on it; its end means the
// parent or the connection is gone.
void TreeRelay::session_read() {
    char buffer[512];
    const ssize_t n = ::read(0, buffer, sizeof buffer);
    if (n > 0 || (n < 0 && (errno == EINTR || errno == EAGAIN))) return;
    session_open_ = false;
    parent_lost_now("the ssh session from " + settings_.job.parent_name + " ended");
}

void TreeRelay::signal_received(int sig, bool second) {
    if (!settings_.root) {
        // The parent-death signal: sshd, our parent, has gone.
        if (::getppid() != parent_pid_) return parent_lost_now("the ssh session's process ended");
        // Someone signalled this host's control process: the job loses a part.
        return event_handle(JobEvent::failure, 128 + sig);
    }
    if (second) {
        local::say("second SIGINT: killing every rank on every host now");
        return stop_all();
    }
    if (signalled_ || stopping_) return;
    signalled_ = true;
    say_verbose("passing signal %d to every host", sig);
    children_send(TreeMessage::signal, payload_u32(static_cast<std::uint32_t>(sig)));
    // Hosts still starting would miss it: end them.
    for (Child &c : children_)
        if (c.state == State::starting) ssh_kill(c);
    const double grace = std::max(0.0, base::knob_double(base::Knob::KILL_GRACE));
    stop_kill_at_ = Clock::now() + std::chrono::milliseconds(static_cast<long long>((grace + 10) * 1000));
}

void TreeRelay::event_handle(JobEvent event, int code) {
    if (!settings_.root) {
        if (parent_.is_open()) {
            std::string payload = payload_u32(static_cast<std::uint32_t>(event));
            put_u32(payload, static_cast<std::uint32_t>(code));
            parent_.send(static_cast<std::uint32_t>(TreeMessage::event), payload);
            (void)parent_.write_some();
        }
        return;
    }
    control_->event_merge(event, code);
    if (event == JobEvent::abort || event == JobEvent::failure) {
        stop_all();
    } else if (event == JobEvent::exiting && !deadline_sent_ && !stopping_) {
        // A rank left with its code: the others get the exit timeout of the
        // whole job, on every host.
        deadline_sent_ = true;
        const double seconds = base::exit_timeout_seconds(settings_.job.ranks) +
                               std::max(0.0, base::knob_double(base::Knob::KILL_GRACE));
        std::string payload = payload_u32(static_cast<std::uint32_t>(std::min(seconds * 1000, 4e9)));
        put_string(payload, "a rank exited");
        say_verbose("a rank exited: ranks still running in %.1f s will be killed", seconds);
        children_send(TreeMessage::deadline, payload);
    }
}

void TreeRelay::stop_all() {
    if (stopping_) return;
    stopping_ = true;
    if (control_) control_->stop();
    children_send(TreeMessage::stop, {});
    for (Child &c : children_)
        if (c.state == State::starting) ssh_kill(c);
    const double grace = std::max(0.0, base::knob_double(base::Knob::KILL_GRACE));
    stop_kill_at_ = Clock::now() + std::chrono::milliseconds(static_cast<long long>((grace + 5) * 1000));
}

void TreeRelay::allgather_block(std::string block) {
    local_blocks_.push_back(std::move(block));
    combine();
}

void TreeRelay::ranks_quiet() {
    local_quiet_ = true;
    combine();
}

void TreeRelay::combine() {
    while (!stopping_) {
        bool ready = !local_blocks_.empty() || local_quiet_;
        bool all_quiet = local_quiet_ && local_blocks_.empty();
        for (const Child &c : children_) {
            if (c.blocks.empty() && !c.quiet) ready = false;
            if (!c.quiet || !c.blocks.empty()) all_quiet = false;
        }
        if (all_quiet) {
            if (!settings_.root && !quiet_sent_ && parent_.is_open()) {
                quiet_sent_ = true;
                parent_.send(static_cast<std::uint32_t>(TreeMessage::quiet), {});
                (void)parent_.write_some();
            }
            return;
        }
        if (!ready) return;
        std::string part;
        part_take(local_blocks_, settings_.local_count, part);
        for (Child &c : children_) part_take(c.blocks, c.rank_count, part);
        if (part.size() > local::max_message) {
            local::say("allgather %u needs %zu bytes here, more than the control protocol's %u; stopping the job",
                       round_, part.size(), local::max_message);
            event_handle(JobEvent::failure, 1);
            return;
        }
        if (!settings_.root) {
            parent_.send(static_cast<std::uint32_t>(TreeMessage::block), part);
            (void)parent_.write_some();
        } else {
            say_verbose("allgather %u complete (%zu bytes)", round_, part.size());
            children_send(TreeMessage::result, part, true);
        }
        ++round_;
    }
}

void TreeRelay::done_check() {
    if (settings_.root || done_sent_ || parent_lost_ || !ranks_ended_) return;
    for (const Child &c : children_)
        if (c.state != State::done && c.state != State::lost) return;
    done_sent_ = true;
    done_at_ = Clock::now();
    parent_.send(static_cast<std::uint32_t>(TreeMessage::done), {});
    (void)parent_.write_some();
    say_verbose("this host and the hosts below it are done");
}

void TreeRelay::timers_run() {
    const auto now = Clock::now();
    for (Pending &p : pending_)
        if (p.stream.is_open() && now >= p.until) refuse(p, "no hello within 10 s");
    for (Child &c : children_) {
        if (c.kill_at && now >= *c.kill_at) {
            c.kill_at.reset();
            say_verbose("%s: its ssh is still running after the host finished; killing it", child_label(c).c_str());
            ssh_kill(c);
        }
    }
    if (stop_kill_at_ && now >= *stop_kill_at_) {
        stop_kill_at_.reset();
        for (Child &c : children_) {
            if (c.ssh_reaped) continue;
            local::say("%s has not finished in time; killing its ssh", child_label(c).c_str());
            ssh_kill(c);
        }
    }
    if (done_sent_ && !parent_closed_ && now >= done_at_ + leave_timeout) parent_closed_ = true;
}

int TreeRelay::poll_timeout() const {
    std::optional<Clock::time_point> next = stop_kill_at_;
    auto consider = [&](Clock::time_point when) {
        if (!next || when < *next) next = when;
    };
    for (const Pending &p : pending_) consider(p.until);
    for (const Child &c : children_)
        if (c.kill_at) consider(*c.kill_at);
    if (done_sent_ && !parent_closed_) consider(done_at_ + leave_timeout);
    return next ? milliseconds_until(*next) : -1;
}

bool TreeRelay::finished() const {
    if (!ranks_ended_) return false;
    for (const Child &c : children_)
        if ((c.state != State::done && c.state != State::lost) || !c.ssh_reaped) return false;
    if (settings_.root || parent_lost_) return true;
    return done_sent_ && (parent_closed_ || (!parent_.is_open()));
}

} // namespace sluice::spawner::ssh
