// tests/unit/unit_connect_file.cpp - connect files in
// GASNet-EX's ibv format (src/conduits/common/connect_file.hpp): its examples, ranges,
// bases, both directions of a line, what a written file reads back as, and
// every malformed line refused with its number.
#include "conduits/common/connect_file.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace common = sluice::conduit::common;

namespace {

std::vector<unsigned> peers_of(const std::string &text, unsigned size, unsigned rank) {
    std::vector<bool> wanted;
    std::string why;
    EXPECT_TRUE(common::connect_file_peers(text, size, rank, wanted, why)) << why;
    std::vector<unsigned> out;
    for (unsigned p = 0; p < wanted.size(); ++p)
        if (wanted[p]) out.push_back(p);
    return out;
}

std::string refused(const std::string &text, unsigned size) {
    std::vector<bool> wanted;
    std::string why;
    EXPECT_FALSE(common::connect_file_peers(text, size, 0, wanted, why)) << text;
    return why;
}

TEST(ConnectFile, SeedExamples) {
    EXPECT_EQ(peers_of("7: 0 4 6\n", 8, 7), (std::vector<unsigned>{0, 4, 6}));
    EXPECT_EQ(peers_of("7:0 4\n7:6\n", 8, 7), (std::vector<unsigned>{0, 4, 6}));
    EXPECT_EQ(peers_of("6:9-12\n", 16, 6), (std::vector<unsigned>{9, 10, 11, 12}));
    // A line connects both ranks it names: 9 reads it from 6's line.
    EXPECT_EQ(peers_of("6:9-12\n", 16, 9), (std::vector<unsigned>{6}));
    EXPECT_EQ(peers_of("1:0\n0:1\n", 2, 0), (std::vector<unsigned>{1}));
    EXPECT_TRUE(peers_of("6:9-12\n", 16, 3).empty());
}

TEST(ConnectFile, BaseAndSize) {
    // Base 36 from the line after `base:` on; size and base are decimal.
    EXPECT_EQ(peers_of("5: 10\nbase: 36\nsize: 40\nz: a 1-3\n", 40, 35), (std::vector<unsigned>{1, 2, 3, 10}));
    EXPECT_EQ(peers_of("base: 2\n101: 0 11\n", 6, 5), (std::vector<unsigned>{0, 3}));
    EXPECT_EQ(peers_of("# a comment\n\n  2: 0  \r\n", 3, 2), (std::vector<unsigned>{0}));
    // A rank never connects to itself.
    EXPECT_TRUE(peers_of("0: 0\n", 1, 0).empty());
}

TEST(ConnectFile, RoundTrip) {
    for (unsigned base : {2u, 10u, 16u, 36u}) {
        std::vector<bool> used(300, false);
        for (unsigned p : {0u, 1u, 35u, 36u, 99u, 250u, 299u}) used[p] = true;
        used[17] = true;  // the rank itself: never written
        const std::string text = common::connect_file_text(17, 300, base, used);
        EXPECT_EQ(peers_of(text, 300, 17), (std::vector<unsigned>{0, 1, 35, 36, 99, 250, 299})) << text;
        EXPECT_EQ(peers_of(text, 300, 250), (std::vector<unsigned>{17})) << text;
        for (std::size_t at = 0, next; at < text.size(); at = next + 1) {
            next = text.find('\n', at);
            EXPECT_LE(next - at, 84u) << "a long line in " << text;
        }
    }
    // Nothing used: just the base and size lines, which read back as no peer.
    const std::string none = common::connect_file_text(3, 4, 36, std::vector<bool>(4, false));
    EXPECT_EQ(none, "base: 36\nsize: 4\n");
    EXPECT_TRUE(peers_of(none, 4, 3).empty());
}

TEST(ConnectFile, Refused) {
    EXPECT_NE(refused("0 1\n", 4).find("line 1"), std::string::npos);
    EXPECT_NE(refused("0: 1\nsize: 5\n", 4).find("line 2"), std::string::npos);
    EXPECT_NE(refused("0: 4\n", 4).find("'4'"), std::string::npos);
    EXPECT_NE(refused("4: 0\n", 4).find("'4'"), std::string::npos);
    EXPECT_NE(refused("0: 3-1\n", 4).find("3-1"), std::string::npos);
    EXPECT_NE(refused("0: 1-\n", 4).find("1-"), std::string::npos);
    EXPECT_NE(refused("base: 37\n", 4).find("base 37"), std::string::npos);
    EXPECT_NE(refused("base: x\n", 4).find("not a decimal"), std::string::npos);
    EXPECT_NE(refused("0: a\n", 11).find("base 10"), std::string::npos);
    EXPECT_NE(refused("base: 8\n0: 8\n", 11).find("line 2"), std::string::npos);
    EXPECT_NE(refused("0: 99999999999\n", 4).find("99999999999"), std::string::npos);
}

TEST(ConnectFile, Name) {
    EXPECT_EQ(common::connect_file_name("/tmp/conn.%", 12), "/tmp/conn.12");
    EXPECT_EQ(common::connect_file_name("%/a%b", 3), "3/a3b");
    EXPECT_EQ(common::connect_file_name("plain", 3), "plain");
}

} // namespace
