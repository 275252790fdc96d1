// tests/unit/unit_knobs.cpp - the knob table: size parsing, typed values,
// malformed values, the listing, edit distance and "did you mean".
#include "sluice_config.h"  // SLUICE_CONDUIT_*: which conduits' knobs the table has

#include "conduits/knobs.hpp"
#include "tests/unit/unit_env.hpp"

#include <algorithm>
#include <set>

using namespace sluice::base;
using sluice_test::CleanEnvironment;

namespace {

// The conduits' knobs join the table as the runtime adds them.
const bool conduit_knobs_added = (sluice::conduit::knobs_register(), true);

std::size_t parsed(const char *text) {
    std::size_t out = 0;
    EXPECT_TRUE(parse_size(text, out)) << "'" << text << "' should parse";
    return out;
}

const KnobInfo *find_knob(const char *name) {
    for (const auto &k : knob_table())
        if (std::strcmp(k.name, name) == 0) return &k;
    return nullptr;
}

// The declared default of a Size knob, in bytes.
std::size_t default_size(const char *name) {
    const KnobInfo *k = find_knob(name);
    std::size_t out = 0;
    if (!k || !parse_size(k->default_value, out)) ADD_FAILURE() << name << " has no Size default";
    return out;
}

} // namespace

TEST(ParseSize, PlainNumbers) {
    EXPECT_EQ(parsed("0"), 0u);
    EXPECT_EQ(parsed("1"), 1u);
    EXPECT_EQ(parsed("4096"), 4096u);
    EXPECT_EQ(parsed("0x10"), 16u);
    EXPECT_EQ(parsed("18446744073709551615"), SIZE_MAX);
}

TEST(ParseSize, Suffixes) {
    EXPECT_EQ(parsed("2B"), 2u);
    for (const char *k : {"1K", "1k", "1KB", "1kb", "1KiB", "1kib"}) EXPECT_EQ(parsed(k), 1024u) << k;
    for (const char *m : {"1M", "1m", "1MB", "1MiB"}) EXPECT_EQ(parsed(m), 1u << 20) << m;
    for (const char *g : {"1G", "1g", "1GB", "1GiB"}) EXPECT_EQ(parsed(g), 1u << 30) << g;
    EXPECT_EQ(parsed("64K"), 65536u);
    EXPECT_EQ(parsed("16M"), 16u << 20);
    EXPECT_EQ(parsed("256K"), 262144u);
    EXPECT_EQ(parsed("3G"), 3ull << 30);
    EXPECT_EQ(parsed("0x10K"), 16384u);
}

TEST(ParseSize, LargestValues) {
    EXPECT_EQ(parsed("17179869183G"), ((1ull << 34) - 1) << 30);
    std::size_t out = 7;
    EXPECT_FALSE(parse_size("17179869184G", out)) << "2^64 bytes must not wrap around";
    EXPECT_FALSE(parse_size("18446744073709551616", out));
    EXPECT_FALSE(parse_size("99999999999999999999999", out));
    EXPECT_FALSE(parse_size("18014398509481984K", out));
    EXPECT_EQ(out, 7u);
}

TEST(ParseSize, MalformedValuesAreRejected) {
    for (const char *bad : {"", "K", "abc", "12Q", "1.5M", "-1", "-0", "16 M", "M16", "1T", "1KK", "0x", "1e3",
                            "4096 bytes", " -1", "\t-5K"}) {
        std::size_t out = 12345;
        EXPECT_FALSE(parse_size(bad, out)) << "'" << bad << "' must be rejected, parsed as " << out;
        EXPECT_EQ(out, 12345u) << "output written for '" << bad << "'";
    }
}

TEST(EditDistance, KnownValues) {
    EXPECT_EQ(edit_distance("", ""), 0u);
    EXPECT_EQ(edit_distance("abc", ""), 3u);
    EXPECT_EQ(edit_distance("", "abcd"), 4u);
    EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
    EXPECT_EQ(edit_distance("flaw", "lawn"), 2u);
    EXPECT_EQ(edit_distance("ab", "ba"), 2u);
    EXPECT_EQ(edit_distance("SLUICE_VERBOSEENV", "SLUICE_VERBOSEENV"), 0u);
    EXPECT_EQ(edit_distance("SLUICE_VERBOSEEVN", "SLUICE_VERBOSEENV"), 2u);
    EXPECT_EQ(edit_distance("SLUICE_CREDIT_EPOC", "SLUICE_CREDIT_EPOCH"), 1u);
}

TEST(EditDistance, Symmetric) {
    const char *words[] = {"", "a", "SLUICE_X", "SLUICE_NATIVE_RMA", "SLUICE_NATIVE_RAM", "native"};
    for (const char *a : words)
        for (const char *b : words) EXPECT_EQ(edit_distance(a, b), edit_distance(b, a)) << a << " / " << b;
}

TEST_F(CleanEnvironment, TableIsWellFormed) {
    const auto &table = knob_table();
    ASSERT_GE(table.size(), static_cast<std::size_t>(knob_count()));
    EXPECT_TRUE(conduit_knobs_added);
    std::set<std::string> names;
    for (const auto &k : table) {
        EXPECT_EQ(std::strncmp(k.name, "SLUICE_", 7), 0) << k.name;
        EXPECT_TRUE(names.insert(k.name).second) << "declared twice: " << k.name;
        EXPECT_TRUE(k.doc && *k.doc) << k.name << " has no doc";
        EXPECT_STRNE(knob_type_name(k.type), "?") << k.name;
    }
    // Knobs first, internal variables after them.
    for (std::size_t i = 0; i < table.size(); ++i)
        EXPECT_EQ(table[i].internal, i >= static_cast<std::size_t>(knob_count())) << table[i].name;
    for (const char *internal : {"SLUICE_RANK", "SLUICE_SIZE", "SLUICE_LOCAL_FD"}) {
        const KnobInfo *k = find_knob(internal);
        ASSERT_NE(k, nullptr) << internal;
        EXPECT_TRUE(k->internal) << internal;
    }
    for (const char *knob : {"SLUICE_VERBOSEENV", "SLUICE_BACKTRACE", "SLUICE_QUIET_ERRORS", "SLUICE_NATIVE_RMA",
                             "SLUICE_CREDIT_PER_PEER", "SLUICE_JOB_ID", "SLUICE_CREDIT_RECV_SPACE", "SLUICE_EXIT_TIMEOUT"})
        EXPECT_NE(find_knob(knob), nullptr) << knob << " is not declared";
}

// The conduits' knobs come after base's own, before the internal
// variables, numbered on from Knob::count_; base names none of them.
TEST_F(CleanEnvironment, ConduitKnobsAreAddedAfterBaseKnobs) {
    EXPECT_GE(knob_count(), static_cast<int>(Knob::count_) + static_cast<int>(sluice::conduit::Knob::count_));
#ifdef SLUICE_CONDUIT_SMP
    const int ring = static_cast<int>(sluice::conduit::knob(sluice::conduit::Knob::SMP_RING_SIZE));
    EXPECT_GE(ring, static_cast<int>(Knob::count_));
    EXPECT_LT(ring, knob_count());
    EXPECT_STREQ(knob_table()[static_cast<std::size_t>(ring)].name, "SLUICE_SMP_RING_SIZE");
    set("SLUICE_SMP_RING_SIZE", "1M");
    EXPECT_TRUE(knobs_load().empty());
    EXPECT_EQ(knob_size(sluice::conduit::knob(sluice::conduit::Knob::SMP_RING_SIZE)), 1u << 20);
    set("SLUICE_SMP_RING_SIZE", "lots");
    const std::vector<std::string> errors = knobs_load();
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_NE(errors[0].find("SLUICE_SMP_RING_SIZE=lots is not a valid size"), std::string::npos) << errors[0];
#endif
}

// A layer adds knobs after the table was read: they are read at once, and
// again by every later knobs_load().
TEST_F(CleanEnvironment, KnobsAddedLateAreRead) {
    static const KnobInfo late[] = {
        {"SLUICE_UNIT_LATE_SIZE", KnobType::Size, "4K", "1K..1M", "unit test: a knob added after the first read",
         false}};
    set("SLUICE_UNIT_LATE_SIZE", "64K");
    (void)knobs_load();
    const int before = knob_count();
    const auto first = static_cast<Knob>(knobs_add(late, 1));
    EXPECT_EQ(static_cast<int>(first), before);
    EXPECT_EQ(knob_count(), before + 1);
    EXPECT_EQ(knob_size(first), 64u * 1024);
    EXPECT_TRUE(knob_is_set(first));
    const auto &table = knob_table();
    for (auto i = static_cast<std::size_t>(knob_count()); i < table.size(); ++i)
        EXPECT_TRUE(table[i].internal) << table[i].name << " after the added knob";
    set("SLUICE_UNIT_LATE_SIZE", "2M");
    const std::vector<std::string> errors = knobs_load();
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_NE(errors[0].find("out of range"), std::string::npos) << errors[0];
    EXPECT_EQ(knob_size(first), 4u * 1024);
}

TEST_F(CleanEnvironment, DefaultsParseAndAreNotSet) {
    EXPECT_TRUE(knobs_load().empty()) << "a declared default does not parse";
    for (int i = 0; i < knob_count(); ++i)
        EXPECT_FALSE(knob_is_set(static_cast<Knob>(i))) << knob_table()[i].name;
    EXPECT_EQ(knob_size(Knob::CREDIT_RECV_SPACE), default_size("SLUICE_CREDIT_RECV_SPACE"));
#ifdef SLUICE_CONDUIT_SMP
    EXPECT_EQ(knob_size(sluice::conduit::knob(sluice::conduit::Knob::SMP_MAX_MEDIUM)), 16u * 1024);
#endif
    EXPECT_TRUE(knob_bool(Knob::NATIVE_RMA));
    EXPECT_FALSE(knob_bool(Knob::QUIET_ERRORS));
    EXPECT_EQ(knob_int(Knob::CREDIT_PER_PEER), 0);
    EXPECT_EQ(knob_string(Knob::JOB_ID), "");
}

TEST_F(CleanEnvironment, ValuesFromTheEnvironment) {
    set("SLUICE_CREDIT_RECV_SPACE", "1M");
    set("SLUICE_VERBOSEENV", "yes");
    set("SLUICE_NATIVE_RMA", "off");
    set("SLUICE_CREDIT_PER_PEER", "4");
    set("SLUICE_EXIT_TIMEOUT", "2.5");
    set("SLUICE_SPAWNER", "local");
    EXPECT_TRUE(knobs_load().empty());
    EXPECT_EQ(knob_size(Knob::CREDIT_RECV_SPACE), 1u << 20);
    EXPECT_TRUE(knob_is_set(Knob::CREDIT_RECV_SPACE));
    EXPECT_TRUE(knob_bool(Knob::VERBOSEENV));
    EXPECT_FALSE(knob_bool(Knob::NATIVE_RMA));
    EXPECT_TRUE(knob_is_set(Knob::NATIVE_RMA));
    EXPECT_EQ(knob_int(Knob::CREDIT_PER_PEER), 4);
    EXPECT_DOUBLE_EQ(knob_double(Knob::EXIT_TIMEOUT), 2.5);
    EXPECT_EQ(knob_string(Knob::SPAWNER), "local");
    EXPECT_FALSE(knob_is_set(Knob::BACKTRACE));
}

TEST_F(CleanEnvironment, BooleanSpellings) {
    for (const char *yes : {"1", "yes", "YES", "true", "True", "on", "y"}) {
        set("SLUICE_BACKTRACE", yes);
        EXPECT_TRUE(knobs_load().empty()) << yes;
        EXPECT_TRUE(knob_bool(Knob::BACKTRACE)) << yes;
    }
    for (const char *no : {"0", "no", "false", "OFF", "n"}) {
        set("SLUICE_BACKTRACE", no);
        EXPECT_TRUE(knobs_load().empty()) << no;
        EXPECT_FALSE(knob_bool(Knob::BACKTRACE)) << no;
    }
}

TEST_F(CleanEnvironment, MalformedValuesFallBackToDefaults) {
    set("SLUICE_CREDIT_RECV_SPACE", "12Q");
    set("SLUICE_BACKTRACE", "maybe");
    set("SLUICE_CREDIT_PER_PEER", "4x");
    set("SLUICE_EXIT_TIMEOUT", "fast");
    auto errors = knobs_load();
    ASSERT_EQ(errors.size(), 4u);
    auto mentions = [&](const char *name, const char *value) {
        for (const auto &e : errors)
            if (e.find(name) != std::string::npos && e.find(value) != std::string::npos &&
                e.find("default") != std::string::npos)
                return true;
        return false;
    };
    EXPECT_TRUE(mentions("SLUICE_CREDIT_RECV_SPACE", "12Q"));
    EXPECT_TRUE(mentions("SLUICE_BACKTRACE", "maybe"));
    EXPECT_TRUE(mentions("SLUICE_CREDIT_PER_PEER", "4x"));
    EXPECT_TRUE(mentions("SLUICE_EXIT_TIMEOUT", "fast"));
    EXPECT_EQ(knob_size(Knob::CREDIT_RECV_SPACE), default_size("SLUICE_CREDIT_RECV_SPACE"));
    EXPECT_FALSE(knob_is_set(Knob::CREDIT_RECV_SPACE));
    EXPECT_FALSE(knob_bool(Knob::BACKTRACE));
    EXPECT_EQ(knob_int(Knob::CREDIT_PER_PEER), 0);
    EXPECT_DOUBLE_EQ(exit_timeout_seconds(0), 2.0);
}

// Each range in knobs.def parses as its knob's type, holds the default, and
// shows in the text sluice-info and docs/knobs.md print.
TEST_F(CleanEnvironment, RangesAreWellFormedAndHoldTheDefaults) {
    unsigned ranged = 0;
    for (const auto &k : knob_table()) {
        if (k.internal || !*k.range) continue;
        ++ranged;
        EXPECT_TRUE(k.type == KnobType::Int || k.type == KnobType::Size || k.type == KnobType::Double ||
                    k.type == KnobType::String)
            << k.name;
        EXPECT_TRUE(knob_value_valid(k, k.default_value)) << k.name << ": default " << k.default_value
                                                          << " outside " << k.range;
        EXPECT_FALSE(knob_range_text(k).empty()) << k.name;
    }
    EXPECT_GE(ranged, 10u);
#ifdef SLUICE_CONDUIT_UDP
    const KnobInfo *mtu = find_knob("SLUICE_UDP_MTU");
    ASSERT_NE(mtu, nullptr);
    EXPECT_EQ(knob_range_text(*mtu), "0, or 576 to 65535");
    for (const char *ok : {"0", "576", "1500", "65535"}) EXPECT_TRUE(knob_value_valid(*mtu, ok)) << ok;
    for (const char *bad : {"1", "575", "65536", "-1", "x"}) EXPECT_FALSE(knob_value_valid(*mtu, bad)) << bad;
#endif
#ifdef SLUICE_CONDUIT_SMP
    const KnobInfo *medium = find_knob("SLUICE_SMP_MAX_MEDIUM");
    ASSERT_NE(medium, nullptr);
    EXPECT_TRUE(knob_value_valid(*medium, "1M"));
    EXPECT_FALSE(knob_value_valid(*medium, "1025K"));
    EXPECT_EQ(knob_range_text(*find_knob("SLUICE_SMP_RING_SIZE")), "at most 256M");
#endif
    EXPECT_EQ(knob_range_text(*find_knob("SLUICE_EXIT_TIMEOUT")), "0 or more");
}

// A Switch knob takes auto (or nothing) and a Bool's spellings; a String
// knob with a range takes the values it lists (or nothing: the default).
TEST_F(CleanEnvironment, SwitchesAndListedStrings) {
    const KnobInfo *yield = find_knob("SLUICE_POLL_YIELD");
    ASSERT_NE(yield, nullptr);
    EXPECT_EQ(yield->type, KnobType::Switch);
    for (const char *ok : {"auto", "AUTO", "", "1", "0", "yes", "off"}) EXPECT_TRUE(knob_value_valid(*yield, ok)) << ok;
    for (const char *bad : {"2", "maybe", "autox"}) EXPECT_FALSE(knob_value_valid(*yield, bad)) << bad;
    EXPECT_TRUE(knob_auto(Knob::POLL_YIELD));
    EXPECT_TRUE(knob_switch(Knob::POLL_YIELD, true));
    EXPECT_FALSE(knob_switch(Knob::POLL_YIELD, false));
    set("SLUICE_POLL_YIELD", "on");
    set("SLUICE_CREDIT_FLOW", "0");
    EXPECT_TRUE(knobs_load().empty());
    EXPECT_FALSE(knob_auto(Knob::POLL_YIELD));
    EXPECT_TRUE(knob_switch(Knob::POLL_YIELD, false));
    EXPECT_FALSE(knob_switch(Knob::CREDIT_FLOW, true));
    const KnobInfo *segment = find_knob("SLUICE_SEGMENT");
    ASSERT_NE(segment, nullptr);
    EXPECT_EQ(knob_range_text(*segment), "fast, or large");
    for (const char *ok : {"fast", "large", ""}) EXPECT_TRUE(knob_value_valid(*segment, ok)) << ok;
    for (const char *bad : {"Fast", "huge", "fastlarge"}) EXPECT_FALSE(knob_value_valid(*segment, bad)) << bad;
    set("SLUICE_SEGMENT", "huge");
    set("SLUICE_CREDIT_FLOW", "sometimes");
    const auto errors = knobs_load();
    ASSERT_EQ(errors.size(), 2u);
    const std::string all = errors[0] + "\n" + errors[1];
    EXPECT_NE(all.find("SLUICE_SEGMENT=huge is out of range: it must be fast, or large"), std::string::npos) << all;
    EXPECT_NE(all.find("SLUICE_CREDIT_FLOW=sometimes is not a valid switch (auto, 1 or 0)"), std::string::npos) << all;
}

// A value outside the range is refused: one message naming the knob, the
// value, the range and the doc, and the default is what the code sees.
TEST_F(CleanEnvironment, OutOfRangeValuesAreRefusedWithRangeAndDoc) {
    std::size_t refused = 2;
    set("SLUICE_EXIT_TIMEOUT", "-1");
    set("SLUICE_CREDIT_MIN", "16");
    // Conduit knobs are in the table only when their conduit is built.
#ifdef SLUICE_CONDUIT_SMP
    set("SLUICE_SMP_MAX_MEDIUM", "100");
    refused += 1;
#endif
#ifdef SLUICE_CONDUIT_UDP
    set("SLUICE_UDP_WINDOW", "5");
    set("SLUICE_UDP_MTU", "65536");
    refused += 2;
#endif
    const auto errors = knobs_load();
    ASSERT_EQ(errors.size(), refused);
    auto find = [&](const char *what) {
        for (const auto &e : errors)
            if (e.find(what) != std::string::npos) return e;
        return std::string();
    };
    EXPECT_NE(find("SLUICE_EXIT_TIMEOUT=-1 ").find("0 or more"), std::string::npos);
    const std::string credit = find("SLUICE_CREDIT_MIN=16 ");
    EXPECT_NE(credit.find("1 to 15"), std::string::npos) << credit;
    EXPECT_NE(credit.find(find_knob("SLUICE_CREDIT_MIN")->doc), std::string::npos) << credit;
    EXPECT_EQ(knob_int(Knob::CREDIT_MIN), 4);
    EXPECT_FALSE(knob_is_set(Knob::CREDIT_MIN));
#ifdef SLUICE_CONDUIT_SMP
    EXPECT_NE(find("SLUICE_SMP_MAX_MEDIUM=100 ").find("512 to 1M"), std::string::npos);
    EXPECT_EQ(knob_size(sluice::conduit::knob(sluice::conduit::Knob::SMP_MAX_MEDIUM)), 16u * 1024);
#endif
#ifdef SLUICE_CONDUIT_UDP
    const std::string window = find("SLUICE_UDP_WINDOW=5 ");
    EXPECT_NE(window.find("8 to 1024"), std::string::npos) << window;
    EXPECT_NE(window.find("datagrams sent to one peer"), std::string::npos) << window;
    EXPECT_NE(find("SLUICE_UDP_MTU=65536 ").find("0, or 576 to 65535"), std::string::npos);
    EXPECT_EQ(knob_int(sluice::conduit::knob(sluice::conduit::Knob::UDP_WINDOW)), 64);
    EXPECT_FALSE(knob_is_set(sluice::conduit::knob(sluice::conduit::Knob::UDP_WINDOW)));
#endif
    // The bounds themselves are accepted.
    set("SLUICE_EXIT_TIMEOUT", "0");
    set("SLUICE_CREDIT_MIN", "15");
#ifdef SLUICE_CONDUIT_SMP
    set("SLUICE_SMP_MAX_MEDIUM", "512");
#endif
#ifdef SLUICE_CONDUIT_UDP
    set("SLUICE_UDP_WINDOW", "1024");
    set("SLUICE_UDP_MTU", "0");
#endif
    EXPECT_TRUE(knobs_load().empty());
    EXPECT_EQ(knob_int(Knob::CREDIT_MIN), 15);
#ifdef SLUICE_CONDUIT_UDP
    EXPECT_EQ(knob_int(sluice::conduit::knob(sluice::conduit::Knob::UDP_WINDOW)), 1024);
#endif
}

TEST_F(CleanEnvironment, EmptyNumericValueIsMalformed) {
    set("SLUICE_CREDIT_PER_PEER", "");
    set("SLUICE_CREDIT_RECV_SPACE", "");
    EXPECT_EQ(knobs_load().size(), 2u);
    EXPECT_EQ(knob_int(Knob::CREDIT_PER_PEER), 0);
    EXPECT_EQ(knob_size(Knob::CREDIT_RECV_SPACE), 0u);
}

TEST_F(CleanEnvironment, ExitTimeout) {
    EXPECT_DOUBLE_EQ(exit_timeout_seconds(0), 2.0);
    EXPECT_DOUBLE_EQ(exit_timeout_seconds(8), 2.4);
    EXPECT_DOUBLE_EQ(exit_timeout_seconds(100), 7.0);
    set("SLUICE_EXIT_TIMEOUT", "7");
    (void)knobs_load();
    EXPECT_DOUBLE_EQ(exit_timeout_seconds(1000), 7.0);
    set("SLUICE_EXIT_TIMEOUT", "0");
    (void)knobs_load();
    EXPECT_DOUBLE_EQ(exit_timeout_seconds(20), 3.0);
    set("SLUICE_EXIT_TIMEOUT", "-1");
    (void)knobs_load();
    EXPECT_DOUBLE_EQ(exit_timeout_seconds(20), 3.0);
}

TEST_F(CleanEnvironment, ListingNamesEveryKnobAndItsSource) {
    set("SLUICE_CREDIT_PER_PEER", "4");
    (void)knobs_load();
    std::string listing = knobs_listing();
    for (int i = 0; i < knob_count(); ++i)
        EXPECT_NE(listing.find(knob_table()[i].name), std::string::npos) << knob_table()[i].name;
    auto line_of = [&](const std::string &name) {
        std::size_t at = listing.find(name + " ");
        if (at == std::string::npos) return std::string();
        return listing.substr(at, listing.find('\n', at) - at);
    };
    EXPECT_NE(line_of("SLUICE_CREDIT_PER_PEER").find("4"), std::string::npos) << line_of("SLUICE_CREDIT_PER_PEER");
    EXPECT_NE(line_of("SLUICE_CREDIT_PER_PEER").find("environment"), std::string::npos) << line_of("SLUICE_CREDIT_PER_PEER");
    EXPECT_NE(line_of("SLUICE_BACKTRACE").find("default"), std::string::npos) << line_of("SLUICE_BACKTRACE");
}

TEST_F(CleanEnvironment, UnknownVariablesGetDidYouMean) {
    set("SLUICE_VERBOSEEVN", "1");
    set("SLUICE_NATIVE_RAM", "0");
    set("SLUICE_CREDIT_EPOC", "4");
    auto warnings = knobs_unknown();
    ASSERT_EQ(warnings.size(), 3u);
    auto suggests = [&](const char *typo, const char *right) {
        for (const auto &w : warnings)
            if (w.find(typo) != std::string::npos)
                return w.find(std::string("did you mean ") + right) != std::string::npos;
        return false;
    };
    EXPECT_TRUE(suggests("SLUICE_VERBOSEEVN", "SLUICE_VERBOSEENV"));
    EXPECT_TRUE(suggests("SLUICE_NATIVE_RAM", "SLUICE_NATIVE_RMA"));
    EXPECT_TRUE(suggests("SLUICE_CREDIT_EPOC", "SLUICE_CREDIT_EPOCH"));
}

TEST_F(CleanEnvironment, FarOffNamesGetNoSuggestion) {
    set("SLUICE_TOTALLY_UNRELATED_SETTING", "1");
    auto warnings = knobs_unknown();
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_NE(warnings[0].find("SLUICE_TOTALLY_UNRELATED_SETTING"), std::string::npos);
    EXPECT_EQ(warnings[0].find("did you mean"), std::string::npos) << warnings[0];
    EXPECT_NE(warnings[0].find("sluice-info"), std::string::npos) << warnings[0];
}

TEST_F(CleanEnvironment, KnownAndForeignNamesGiveNoWarning) {
    set("SLUICE_VERBOSEENV", "0");
    set("SLUICE_CREDIT_PER_PEER", "4");
    set("SLUICE_RANK", "0");        // internal: set by the launcher
    set("SLUICE_LOCAL_FD", "3");
    set("SLUICEX_SOMETHING", "1");  // not the SLUICE_ prefix
    set("MY_SLUICE_THING", "1");
    EXPECT_TRUE(knobs_unknown().empty());
}

#ifdef SLUICE_CONDUIT_IBV
// A family (a knob whose name ends in "_n"): its members are the prefix and
// digits, read as they are; other suffixes are still unknown.
TEST_F(CleanEnvironment, FamilyMembersAreKnownAndRead) {
    set("SLUICE_IBV_PORTS_0", "mlx5_0");
    set("SLUICE_IBV_PORTS_12", "mlx5_1:2");
    EXPECT_TRUE(knobs_unknown().empty());
    EXPECT_EQ(knob_family_string(sluice::conduit::knob(sluice::conduit::Knob::IBV_PORTS_n), 0), "mlx5_0");
    EXPECT_EQ(knob_family_string(sluice::conduit::knob(sluice::conduit::Knob::IBV_PORTS_n), 12), "mlx5_1:2");
    EXPECT_EQ(knob_family_string(sluice::conduit::knob(sluice::conduit::Knob::IBV_PORTS_n), 1), "");
    set("SLUICE_IBV_PORTS_X", "mlx5_0");
    const auto warnings = knobs_unknown();
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_NE(warnings[0].find("SLUICE_IBV_PORTS_X"), std::string::npos) << warnings[0];
}
#endif
