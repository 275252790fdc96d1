// spawners/ssh/wire.cpp - encoding of the job description, the hello and
// their fields (wire.hpp).
#include "spawners/ssh/wire.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <sys/random.h>

namespace sluice::spawner::ssh {

void put_u32(std::string &out, std::uint32_t value) { out.append(reinterpret_cast<const char *>(&value), sizeof value); }

void put_string(std::string &out, std::string_view text) {
    put_u32(out, static_cast<std::uint32_t>(text.size()));
    out.append(text);
}

bool WireReader::u32(std::uint32_t &value) {
    if (bytes_.size() - at_ < sizeof value) return false;
    std::memcpy(&value, bytes_.data() + at_, sizeof value);
    at_ += sizeof value;
    return true;
}

bool WireReader::string(std::string &text) {
    std::uint32_t n;
    if (!u32(n) || bytes_.size() - at_ < n) return false;
    text.assign(bytes_.substr(at_, n));
    at_ += n;
    return true;
}

namespace {

void put_strings(std::string &out, const std::vector<std::string> &list) {
    put_u32(out, static_cast<std::uint32_t>(list.size()));
    for (const auto &s : list) put_string(out, s);
}

bool get_strings(WireReader &in, std::vector<std::string> &list) {
    std::uint32_t n;
    if (!in.u32(n) || n > in.rest().size() / sizeof n) return false;
    list.resize(n);
    for (auto &s : list)
        if (!in.string(s)) return false;
    return true;
}

} // namespace

std::string node_job_encode(const NodeJob &job) {
    std::string out;
    put_u32(out, byte_order_mark);
    put_string(out, job.secret);
    put_string(out, job.job_id);
    put_string(out, std::to_string(job.origin_ns));
    for (std::uint32_t value : {std::uint32_t{job.verbose}, job.ranks, job.hosts, job.host}) put_u32(out, value);
    put_strings(out, job.names);
    put_strings(out, job.parent_addresses);
    put_u32(out, job.parent_port);
    for (const std::string *text : {&job.parent_name, &job.directory, &job.program, &job.path}) put_string(out, *text);
    put_strings(out, job.arguments);
    std::vector<std::string> flat;
    for (const auto &[name, value] : job.environment) flat.push_back(name + "=" + value);
    put_strings(out, flat);
    return out;
}

bool node_job_decode(std::string_view bytes, NodeJob &job) {
    WireReader in(bytes);
    std::uint32_t mark, verbose, ranks, hosts, host, port;
    std::string origin;
    std::vector<std::string> flat;
    if (!in.u32(mark) || mark != byte_order_mark || !in.string(job.secret) || !in.string(job.job_id) ||
        !in.string(origin) || !in.u32(verbose) || !in.u32(ranks) || !in.u32(hosts) || !in.u32(host) ||
        !get_strings(in, job.names) || !get_strings(in, job.parent_addresses) || !in.u32(port) ||
        !in.string(job.parent_name) || !in.string(job.directory) || !in.string(job.program) || !in.string(job.path) ||
        !get_strings(in, job.arguments) || !get_strings(in, flat) || !in.at_end())
        return false;
    job.origin_ns = std::strtoll(origin.c_str(), nullptr, 10);
    job.verbose = verbose != 0;
    job.ranks = ranks;
    job.hosts = hosts;
    job.host = host;
    job.parent_port = port;
    job.environment.clear();
    for (const auto &entry : flat) {
        const std::size_t eq = entry.find('=');
        if (eq == std::string::npos || eq == 0) return false;
        job.environment.emplace_back(entry.substr(0, eq), entry.substr(eq + 1));
    }
    return hosts > 0 && ranks >= hosts && host < hosts && !job.names.empty() && job.names.size() <= hosts - host &&
           port > 0 && port < 65536;
}

std::string hello_encode(const std::string &secret, unsigned host) {
    std::string out;
    put_u32(out, byte_order_mark);
    put_string(out, secret);
    put_u32(out, host);
    return out;
}

bool hello_decode(std::string_view bytes, std::string &secret, unsigned &host) {
    WireReader in(bytes);
    std::uint32_t mark, index;
    if (!in.u32(mark) || mark != byte_order_mark || !in.string(secret) || !in.u32(index) || !in.at_end()) return false;
    host = index;
    return true;
}

bool secret_equal(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    unsigned char differ = 0;
    for (std::size_t i = 0; i < a.size(); ++i) differ |= static_cast<unsigned char>(a[i] ^ b[i]);
    return differ == 0;
}

std::string secret_make() {
    unsigned char bytes[secret_length / 2];
    std::size_t got = 0;
    while (got < sizeof bytes) {
        const ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
        if (n > 0) got += static_cast<std::size_t>(n);
        else if (errno != EINTR) return {};  // no secret, no job: the caller says so
    }
    char hex[secret_length + 1];
    for (std::size_t i = 0; i < sizeof bytes; ++i) std::snprintf(hex + 2 * i, 3, "%02x", bytes[i]);
    return std::string(hex, secret_length);
}

} // namespace sluice::spawner::ssh
