// src/conduits/common/connect_file.hpp - connect files, in GASNet-EX's ibv format
// (SLUICE_CONNECTFILE_IN / _OUT): which ranks connect at start-up.
//
// A file is lines of `node: peer peer ...`, where a peer may be a range
// `a-b`; `size: N` checks the job's size and `base: B` (2-36) sets the base
// of the node numbers on the lines after it (digits 0-9, then a-z); both
// are always decimal.  A connection is between two ranks: `1: 0` and
// `0: 1` name the same one, and either is enough.  Empty lines and lines
// starting with '#' are skipped.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sluice::conduit::common {

// The peers that `text` connects `rank` to (both directions of each line),
// in a job of `size` ranks: wanted[p] set.  False, and `why` naming the
// line, when the text is malformed, names a rank outside the job, or its
// `size:` line disagrees with `size`.
bool connect_file_peers(const std::string &text, std::uint32_t size, std::uint32_t rank, std::vector<bool> &wanted,
                        std::string &why);

// The file `rank` writes: `base:` and `size:` lines, then `rank: peers`
// for the peers it used, numbers in `base` (2-36), wrapped into lines of
// at most about 80 characters (several lines of one node are allowed).
std::string connect_file_text(std::uint32_t rank, std::uint32_t size, unsigned base, const std::vector<bool> &used);

// A knob's file name with every '%' replaced by the rank (decimal).
std::string connect_file_name(const std::string &pattern, std::uint32_t rank);

} // namespace sluice::conduit::common
