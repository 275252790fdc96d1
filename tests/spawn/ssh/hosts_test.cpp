// tests/spawn/ssh/hosts_test.cpp - the ssh spawner's pure parts: host lists
// (knobs, node file, Slurm's compressed form, PBS), block placement, the
// shape and depth of the tree, and the job record sent on ssh's stdin.
#include "spawners/ssh/hosts.hpp"
#include "spawners/ssh/wire.hpp"
#include "tests/unit/unit_env.hpp"

#include <fstream>

using namespace sluice::spawner::ssh;

namespace {

std::vector<std::string> expanded(const std::string &text) {
    std::vector<std::string> hosts;
    std::string error;
    EXPECT_TRUE(slurm_hosts_expand(text, hosts, error)) << text << ": " << error;
    return hosts;
}

using Names = std::vector<std::string>;

class HostList : public sluice_test::CleanEnvironment {
protected:
    void SetUp() override {
        CleanEnvironment::SetUp();
        for (const char *name : {"SLURM_JOB_NODELIST", "PBS_NODEFILE"}) {
            if (const char *v = std::getenv(name)) saved_.emplace_back(name, v);
            ::unsetenv(name);
        }
    }
    void TearDown() override {
        ::unsetenv("SLURM_JOB_NODELIST");
        ::unsetenv("PBS_NODEFILE");
        for (const auto &[name, value] : saved_) ::setenv(name.c_str(), value.c_str(), 1);
        if (!file_.empty()) std::remove(file_.c_str());
        CleanEnvironment::TearDown();
    }
    // Hosts found after setting `name` to `value` (reloading the knobs).
    Names found(const char *name, const char *value, std::string *source = nullptr) {
        set(name, value);
        (void)sluice::base::knobs_load();
        Names hosts;
        std::string from, error;
        EXPECT_TRUE(hosts_find(hosts, from, error)) << error;
        if (source) *source = from;
        return hosts;
    }
    std::string file_write(const std::string &text) {
        char path[] = "/tmp/sluice-hosts-test.XXXXXX";
        const int fd = ::mkstemp(path);
        EXPECT_GE(fd, 0);
        ::close(fd);
        std::ofstream(path) << text;
        file_ = path;
        return file_;
    }

private:
    std::vector<std::pair<std::string, std::string>> saved_;
    std::string file_;
};

} // namespace

TEST(SlurmHosts, RangesListsAndPadding) {
    EXPECT_EQ(expanded("n[1-3,5]"), (Names{"n1", "n2", "n3", "n5"}));
    EXPECT_EQ(expanded("gpu[08-10]"), (Names{"gpu08", "gpu09", "gpu10"}));
    EXPECT_EQ(expanded("login,n[7]"), (Names{"login", "n7"}));
    EXPECT_EQ(expanded("r[1-2]-n[0-1]"), (Names{"r1-n0", "r1-n1", "r2-n0", "r2-n1"}));
    EXPECT_EQ(expanded("a[1-2],b,a[2-3]"), (Names{"a1", "a2", "b", "a3"}));  // repeats dropped
    EXPECT_EQ(expanded("10.0.0.[1-2]"), (Names{"10.0.0.1", "10.0.0.2"}));
}

TEST(SlurmHosts, MalformedListsAreRefused) {
    for (const char *bad : {"n[1-", "n[a-b]", "n[3-1]", "n]1[", "n[1-2"}) {
        Names hosts;
        std::string error;
        EXPECT_FALSE(slurm_hosts_expand(bad, hosts, error)) << bad;
        EXPECT_NE(error.find("SLUICE_SSH_NODES"), std::string::npos) << "the fix is named: " << error;
    }
}

TEST_F(HostList, KnobFirstThenNodeFileThenBatchSystems) {
    std::string source;
    EXPECT_EQ(found("SLUICE_SSH_NODES", "a, b  c,a\tu@d", &source), (Names{"a", "b", "c", "u@d"}));
    EXPECT_EQ(source, "SLUICE_SSH_NODES");
    // The knob wins over the batch system.
    set("SLURM_JOB_NODELIST", "n[1-2]");
    EXPECT_EQ(found("SLUICE_SSH_NODES", "x"), (Names{"x"}));
}

TEST_F(HostList, NodeFileSkipsCommentsBlanksAndRepeats) {
    const std::string path = file_write("# one per slot\nb\nb\n  a   # first\n\nc extra words\n");
    EXPECT_EQ(found("SLUICE_SSH_NODEFILE", path.c_str()), (Names{"b", "a", "c"}));
}

TEST_F(HostList, SlurmThenPbs) {
    std::string source;
    EXPECT_EQ(found("SLURM_JOB_NODELIST", "n[01-02]", &source), (Names{"n01", "n02"}));
    EXPECT_EQ(source, "SLURM_JOB_NODELIST");
    ::unsetenv("SLURM_JOB_NODELIST");
    const std::string path = file_write("p1\np1\np2\n");
    EXPECT_EQ(found("PBS_NODEFILE", path.c_str()), (Names{"p1", "p2"}));
}

TEST_F(HostList, NoListNamesTheKnobs) {
    Names hosts;
    std::string source, error;
    EXPECT_FALSE(hosts_find(hosts, source, error));
    EXPECT_NE(error.find("SLUICE_SSH_NODES"), std::string::npos) << error;
    set("SLUICE_SSH_NODEFILE", "/nonexistent/hosts");
    (void)sluice::base::knobs_load();
    EXPECT_FALSE(hosts_find(hosts, source, error));
    EXPECT_NE(error.find("/nonexistent/hosts"), std::string::npos) << error;
}

TEST(Placement, BlocksWithTheRemainderFirst) {
    const Placement p{7, 3};
    EXPECT_EQ(p.count(0), 3u);
    EXPECT_EQ(p.count(1), 2u);
    EXPECT_EQ(p.count(2), 2u);
    EXPECT_EQ(p.first(0), 0u);
    EXPECT_EQ(p.first(1), 3u);
    EXPECT_EQ(p.first(2), 5u);
    const Placement even{6, 3};
    for (unsigned h = 0; h < 3; ++h) EXPECT_EQ(even.first(h), 2 * h);
}

TEST(Tree, SubtreesAreContiguousAndBalanced) {
    auto parts = subtrees_split(0, 3, 2);
    ASSERT_EQ(parts.size(), 2u);
    EXPECT_EQ(parts[0].first, 0u);
    EXPECT_EQ(parts[0].count, 2u);
    EXPECT_EQ(parts[1].first, 2u);
    EXPECT_EQ(parts[1].count, 1u);
    EXPECT_TRUE(subtrees_split(5, 0, 4).empty());
    EXPECT_EQ(subtrees_split(1, 2, 32).size(), 2u);  // never more parts than hosts
    // Every host in exactly one part, in order.
    unsigned next = 10;
    for (const Subtree &s : subtrees_split(10, 100, 7)) {
        EXPECT_EQ(s.first, next);
        EXPECT_TRUE(s.count == 14 || s.count == 15) << s.count;
        next += s.count;
    }
    EXPECT_EQ(next, 110u);
}

TEST(Tree, DepthIsLogarithmic) {
    EXPECT_EQ(tree_depth(3, 1), 3u);
    EXPECT_EQ(tree_depth(3, 2), 2u);
    EXPECT_EQ(tree_depth(3, 32), 1u);
    EXPECT_EQ(tree_depth(1, 1), 1u);
    EXPECT_EQ(tree_depth(1000, 32), 2u);
    EXPECT_LE(tree_depth(1024, 2), 10u);
    EXPECT_GE(tree_depth(1024, 2), 9u);
}

TEST(Wire, JobRecordRoundTrips) {
    NodeJob job;
    job.secret = secret_make();
    job.job_id = "j1";
    job.origin_ns = 1234567890123456789LL;
    job.verbose = true;
    job.ranks = 6;
    job.hosts = 3;
    job.host = 1;
    job.names = {"b", "c"};
    job.parent_addresses = {"10.0.0.1"};
    job.parent_port = 4242;
    job.parent_name = "host 0 (a)";
    job.directory = "/work dir";
    job.program = "./p";
    job.path = "/work dir/p";
    job.arguments = {"", "a b", "new\nline", std::string("nul\0byte", 8)};
    job.environment = {{"A", "x=y"}, {"EMPTY", ""}};
    NodeJob back;
    ASSERT_TRUE(node_job_decode(node_job_encode(job), back));
    EXPECT_EQ(back.secret, job.secret);
    EXPECT_EQ(back.secret.size(), secret_length);
    EXPECT_EQ(back.origin_ns, job.origin_ns);
    EXPECT_EQ(back.names, job.names);
    EXPECT_EQ(back.arguments, job.arguments);
    EXPECT_EQ(back.environment, job.environment);
    EXPECT_EQ(back.path, job.path);
    EXPECT_EQ(back.parent_port, 4242u);
    // Truncated or padded records are refused.
    const std::string bytes = node_job_encode(job);
    EXPECT_FALSE(node_job_decode(bytes.substr(0, bytes.size() - 1), back));
    EXPECT_FALSE(node_job_decode(bytes + "x", back));
}

TEST(Wire, HelloAndSecret) {
    const std::string secret = secret_make();
    EXPECT_NE(secret, secret_make());
    std::string got;
    unsigned host = 0;
    ASSERT_TRUE(hello_decode(hello_encode(secret, 7), got, host));
    EXPECT_EQ(host, 7u);
    EXPECT_TRUE(secret_equal(got, secret));
    EXPECT_FALSE(secret_equal(got, std::string(secret_length, 'x')));
    EXPECT_FALSE(secret_equal(got, secret.substr(1)));
    EXPECT_FALSE(hello_decode("GET / HTTP/1.0\r\n\r\n", got, host));
}
