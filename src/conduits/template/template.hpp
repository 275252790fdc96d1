// src/conduits/template/template.hpp - the template conduit: the documented
// skeleton every new conduit starts from.  It works as a loopback transport
// (it reaches only its own rank), is listed in the registry, and is never
// selected for a job.  Read template_transport.hpp, template_setup.cpp,
// template.cpp and README.md next to this file.
#pragma once

#include "conduits/transport.hpp"

#include <memory>

namespace sluice::conduit::template_ {

std::unique_ptr<Transport> make_template_transport();
// The same with a "NIC" that demands registered local memory
// (needs_registration), named "template_registered": not in the registry
// (one entry per conduit folder); tests/conduit adds it to the conduits it
// tests, so every suite runs through firehose's registrar.
std::unique_ptr<Transport> make_template_transport_registered();

} // namespace sluice::conduit::template_
