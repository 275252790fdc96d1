// spawners/ssh/bootstrap_ssh.cpp - the rank side of spawner `ssh`.  A rank
// is a child of its host's control process, which serves it exactly as
// sluicerun serves local ranks (local/protocol.hpp) and relays allgathers
// through the tree; so this is the local backend under the name "ssh".  The
// control process sets SLUICE_SPAWNER=ssh, which selects it.
#include "spawners/bootstrap.hpp"

#include <cstdlib>
#include <cstring>

namespace sluice::spawner {
namespace local {
std::unique_ptr<Bootstrap> local_create_named(const char *name, std::string &error);
} // namespace local

namespace ssh {

// Without SLUICE_SPAWNER=ssh the local backend, probed first, serves these
// ranks just the same; this probe only claims a rank that names it.
bool ssh_probe() {
    const char *spawner = std::getenv("SLUICE_SPAWNER");
    return std::getenv("SLUICE_LOCAL_FD") && spawner && std::strcmp(spawner, "ssh") == 0;
}

std::unique_ptr<Bootstrap> ssh_create(std::string &error) { return local::local_create_named("ssh", error); }

} // namespace ssh
} // namespace sluice::spawner
