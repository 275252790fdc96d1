// spawners/ssh/node.hpp - the control process of one host of an ssh job:
// the hidden mode `sluicerun --ssh-node --job=ID --host=I` that the ssh
// spawner starts on every host (its arguments only name it in `ps`; the job
// comes on stdin, see wire.hpp).  sluicerun's main() hands it the command
// line when argv[1] is "--ssh-node".
#pragma once

namespace sluice::spawner::ssh {

int node_main(int argc, char **argv);

} // namespace sluice::spawner::ssh
