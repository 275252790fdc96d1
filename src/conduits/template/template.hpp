// src/conduits/template/template.hpp - the template conduit: the documented
// skeleton every new conduit starts from.  It works as a loopback transport
// (it reaches only its own rank), is listed in the registry, and is never
// selected for a job.  Read template.cpp and README.md next to this file.
#pragma once

#include "conduits/transport.hpp"

#include <memory>

namespace sluice::conduit::template_ {

// `registration`: the "NIC" demands registered local memory
// (needs_registration), reached through firehose.
std::unique_ptr<Transport> make_template_transport(bool registration = false);

} // namespace sluice::conduit::template_
