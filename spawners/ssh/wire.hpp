// spawners/ssh/wire.hpp - what the ssh spawner's processes say to each other.
//
// Two channels per host.  On the stdin of ssh, the parent (sluicerun or the
// control process of the host above) sends one `job` frame: the secret, this
// host's place in the tree and everything its ranks need, so no argument or
// variable passes through a remote shell; stdin then stays open, and its end
// tells the control process that its parent or the ssh connection is gone.
// The control connection is TCP from the child back to its parent; its
// first frame must be a `hello` with the job's secret.  Frames are
// local/protocol.hpp's {type, length} + bytes, in the byte order of the
// hosts (hello carries a mark, so a host of the other order is refused).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sluice::spawner::ssh {

enum class TreeMessage : std::uint32_t {
    job = 100,  // parent -> child on ssh's stdin: a NodeJob record
    // child -> parent, on the control connection
    hello = 101,  // byte order mark, secret, host number: the first frame, or refused
    block = 102,  // the subtree's part of the next allgather round (u32 length + bytes per rank)
    quiet = 103,  // no later round has a part from this subtree
    event = 104,  // u32 JobEvent, i32 code
    done = 105,   // every rank of the subtree ended; the child leaves when the parent hangs up
    // parent -> child
    result = 111,    // a whole allgather round, for the ranks and the children below
    signal = 112,    // u32 signal to forward to every rank
    stop = 113,      // kill every rank now
    deadline = 114,  // u32 milliseconds, reason: kill the ranks still running then
};

inline constexpr std::uint32_t byte_order_mark = 0x01020304;
inline constexpr std::size_t secret_length = 32;  // hex digits

// What a host's control process learns on its stdin.
struct NodeJob {
    std::string secret;
    std::string job_id;
    long long origin_ns = 0;  // sluicerun's start (CLOCK_REALTIME), for -v timings
    bool verbose = false;
    unsigned ranks = 0, hosts = 0;    // the whole job (placement)
    unsigned host = 0;                // this host; its subtree is [host, host + names.size())
    std::vector<std::string> names;   // the subtree's hosts, this one first
    std::vector<std::string> parent_addresses;  // where the parent listens, best guess first
    unsigned parent_port = 0;
    std::string parent_name;          // "sluicerun" or "host 0 (name)", for messages
    std::string directory;            // sluicerun's working directory
    std::string program;              // argv[0] of the ranks, as the user gave it
    std::string path;                 // what they exec: through PATH when it has no '/'
    std::vector<std::string> arguments;
    std::vector<std::pair<std::string, std::string>> environment;  // set before anything starts
};

std::string node_job_encode(const NodeJob &job);
bool node_job_decode(std::string_view bytes, NodeJob &job);

// Little helpers for the fixed-size fields of the other frames.
void put_u32(std::string &out, std::uint32_t value);
void put_string(std::string &out, std::string_view text);
class WireReader {
public:
    explicit WireReader(std::string_view bytes) : bytes_(bytes) {}
    bool u32(std::uint32_t &value);
    bool string(std::string &text);
    std::string_view rest() const { return bytes_.substr(at_); }
    bool at_end() const { return at_ == bytes_.size(); }

private:
    std::string_view bytes_;
    std::size_t at_ = 0;
};

std::string hello_encode(const std::string &secret, unsigned host);
// False when the frame is no hello of this byte order.
bool hello_decode(std::string_view bytes, std::string &secret, unsigned &host);

// Equal strings, in time independent of where they differ.
bool secret_equal(std::string_view a, std::string_view b);
// 32 random hex digits.
std::string secret_make();

} // namespace sluice::spawner::ssh
