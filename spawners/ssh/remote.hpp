// spawners/ssh/remote.hpp - reaching other hosts: the ssh command that
// starts a host's control process, starting it, and the TCP sockets of the
// control connections.
#pragma once

#include "spawners/local/stream.hpp"

#include <string>
#include <vector>

#include <sys/types.h>

namespace sluice::spawner::ssh {

// The command a remote shell runs to start the control process of `host`:
// `exec <SLUICE_SSH_REMOTE_CMD or this sluicerun> --ssh-node --job=ID --host=I`.
std::string remote_command(const std::string &job_id, unsigned host);

// SLUICE_SSH_CMD, SLUICE_SSH_OPTIONS (split at spaces), then -T and
// BatchMode=yes (ssh keeps the first value of an option, so the user's
// -o options win), the host and the remote command.
std::vector<std::string> ssh_command(const std::string &host, const std::string &remote);

// Forks and execs `argv` with a new pipe as its stdin; `stdin_write` gets
// the other end (close-on-exec, non-blocking).  The child leaves the
// launcher's process group (a Ctrl-C reaches sluicerun alone, which passes
// it on) and dies with its parent.  -1 with a message on failure.
pid_t ssh_spawn(const std::vector<std::string> &argv, local::UniqueFd &stdin_write, std::string &error);

// The address of this host as `host` would see it (the source address of a
// route there), or "" when the name does not resolve here.
std::string address_toward(const std::string &host);

// A listening TCP socket on every address, port chosen by the kernel.
local::UniqueFd listener_open(unsigned &port, std::string &error);

// Connects to one of `addresses` at `port`, each tried for at most
// `seconds`; "" on success, else what went wrong with each.
std::string connect_first(const std::vector<std::string> &addresses, unsigned port, double seconds,
                          local::UniqueFd &socket, std::string &connected);

// Control messages are small and answered at once: no Nagle delay.
void nodelay_set(int fd);

// "1.2.3.4:5678" of a connected socket's peer.
std::string peer_name(int fd);

} // namespace sluice::spawner::ssh
