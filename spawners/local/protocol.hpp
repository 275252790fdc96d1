// spawners/local/protocol.hpp - the control-socket protocol between
// sluicerun (spawner `local`) and the ranks it forks.
//
// One AF_UNIX stream socket per rank, inherited across exec as the descriptor
// named by SLUICE_LOCAL_FD.  Every message is a header {type, length} in host
// byte order (both ends are on one host) followed by `length` bytes.
//
//   rank -> launcher                      launcher -> rank
//   allgather  <my bytes>                 allgather_result  (u32 len, bytes) x size
//   exit_notify  i32 code                 -
//   abort        i32 code                 - (the launcher kills every rank)
//   fini         -                        -
//   cleanup      shm name                 -
//
// The launcher answers an allgather once every rank has sent one; a barrier
// is an allgather of nothing.  A rank whose socket closes without `fini` or
// `exit_notify` has died abnormally.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace sluice::spawner::local {

enum class MessageType : std::uint32_t {
    allgather = 1,
    allgather_result = 2,
    exit_notify = 3,
    abort = 4,
    fini = 5,
    cleanup = 6,
};

struct MessageHeader {
    std::uint32_t type;
    std::uint32_t length;
};

inline constexpr std::uint32_t max_message = 64u << 20;

// Environment the launcher gives every rank.
inline constexpr const char *env_fd = "SLUICE_LOCAL_FD";
inline constexpr const char *env_rank = "SLUICE_RANK";
inline constexpr const char *env_size = "SLUICE_SIZE";
inline constexpr const char *env_job_id = "SLUICE_JOB_ID";

// Whole-message I/O on a blocking descriptor; false on EOF or error.
// Retries on EINTR.
bool message_send(int fd, MessageType type, const void *data, std::size_t len);
bool message_receive(int fd, MessageType &type, std::string &payload);

} // namespace sluice::spawner::local
