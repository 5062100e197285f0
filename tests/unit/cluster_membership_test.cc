// ClusterMembership: node leases (who is alive) and claims (who owns a shard or a
// cluster job), on the manual clock. How the execution history judges another owner's
// `started` rows by these leases is in history_execution_test.cc.
#include "emulator/runtime/cluster_membership.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "emulator/env/clock.h"
#include "emulator/table/connection.h"
#include "tests/support/offset_clock.h"
#include "tests/support/server_process.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_database.h"

namespace sheetlog {
namespace {

using testing::Backend;

// Every case runs on both backends from one source: Sqlite/ClusterMembershipTest.* and
// Postgres/ClusterMembershipTest.* (the latter on ctest's throwaway server).
class ClusterMembershipTest : public ::testing::TestWithParam<Backend> {
 protected:
  static constexpr int64_t kTtl = 30LL * 1000000;
  static constexpr int64_t kRenewEvery = 10LL * 1000000;
  // Renewed by hand only: the case stands in for the node's renewal thread, or for a
  // node that stopped renewing (killed).
  static ClusterMembership::LeaseOptions ByHand(std::string node = "") {
    return ClusterMembership::LeaseOptions{kTtl, kRenewEvery, false, std::move(node)};
  }

  void SetUp() override {
    db_ = std::make_unique<testing::BackendTestDatabase>(
        GetParam(), dir_.File("sheetlog.db"), &clock_);
    ASSERT_NE(db_->get(), nullptr);
  }

  std::unique_ptr<ClusterMembership> NewNode() {
    return std::make_unique<ClusterMembership>(db_->get(), &clock_);
  }

  // The expiry of `owner`'s lease row, read from the table; nullopt: no row.
  std::optional<int64_t> ExpiresAt(const std::string& owner) {
    std::optional<int64_t> expires_at;
    EXPECT_OK(db_->get()->Read([&](Connection& c) -> Status {
      expires_at.reset();
      return c
          .RunSql("SELECT expires_at FROM execution_owner WHERE owner = ?1", {owner},
                  [&](const SqlRow& row) {
                    expires_at = row.Int(0);
                    return false;
                  })
          .status();
    }));
    return expires_at;
  }

  bool Live(ClusterMembership& asking, const std::string& owner) {
    Result<bool> live = asking.IsLive(owner);
    EXPECT_OK(live);
    return live.ok() && *live;
  }

  int LiveOwners(ClusterMembership& asking) {
    Result<int> live = asking.LiveOwners();
    EXPECT_OK(live);
    return live.ok() ? *live : -1;
  }

  bool Claim(ClusterMembership& node, const std::string& name) {
    Result<bool> held = node.ClaimName(name);
    EXPECT_OK(held) << name;
    return held.ok() && *held;
  }

  testing::TempDir dir_;
  ManualClock clock_;
  std::unique_ptr<testing::BackendTestDatabase> db_;
};

// The one rule of liveness: a lease lives while it expires after now.
TEST_P(ClusterMembershipTest, ALeaseIsLiveStrictlyBeforeItExpires) {
  auto node = NewNode();
  EXPECT_TRUE(node->IsLeaseLive(1001, 1000));
  EXPECT_FALSE(node->IsLeaseLive(1000, 1000)) << "expired at its expiry";
  EXPECT_FALSE(node->IsLeaseLive(999, 1000));
  EXPECT_FALSE(node->IsLeaseLive(std::nullopt, 1000)) << "no lease row: not live";
}

// StartLease takes an owner id and writes its lease to now + ttl; it is refused twice,
// with a ttl not above the renewal period, and renewing needs a lease.
TEST_P(ClusterMembershipTest, ALeaseIsTakenOnceWithARandomOwnerId) {
  auto node = NewNode();
  EXPECT_EQ(node->owner(), "");
  EXPECT_EQ(node->RenewLease().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(node->StartLease({kTtl, kTtl, false, ""}).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(node->StartLease({kTtl, 0, false, ""}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(node->owner(), "") << "a refused start takes no lease";

  const int64_t t0 = clock_.NowMicros();
  ASSERT_OK(node->StartLease(ByHand()));
  const std::string owner = node->owner();
  EXPECT_FALSE(owner.empty());
  EXPECT_EQ(ExpiresAt(owner), t0 + kTtl);
  EXPECT_TRUE(Live(*node, owner));
  EXPECT_EQ(node->StartLease(ByHand()).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(node->owner(), owner);

  clock_.AdvanceSeconds(5);
  ASSERT_OK(node->RenewLease());
  EXPECT_EQ(ExpiresAt(owner), t0 + 5 * 1000000 + kTtl) << "renewed to now + ttl";

  // A stopped node releases its lease; a new start takes a new id.
  node->StopLease();
  node->StopLease();  // idempotent
  EXPECT_EQ(node->owner(), "");
  EXPECT_FALSE(ExpiresAt(owner).has_value());
  EXPECT_FALSE(Live(*node, owner));
  ASSERT_OK(node->StartLease(ByHand()));
  EXPECT_NE(node->owner(), owner);
}

// In the background the lease is renewed on the clock (every 10 s to now + 30 s): it
// never lapses while its node lives, however far time moves.
TEST_P(ClusterMembershipTest, TheLeaseIsRenewedOnTheClockWhileItsNodeLives) {
  auto node = NewNode();
  auto observer = NewNode();
  ASSERT_OK(node->StartLease());  // 30 s, renewed every 10 s by its thread
  const std::string owner = node->owner();
  for (int step = 0; step < 12; ++step) {
    clock_.AdvanceSeconds(10);
    const int64_t now = clock_.NowMicros();
    // The renewal is the node's thread's: wait for it (a read, not a sleep).
    ASSERT_TRUE(testing::Eventually([&] {
      std::optional<int64_t> expires_at = ExpiresAt(owner);
      return expires_at && *expires_at >= now + kTtl;
    })) << "step "
        << step;
    EXPECT_TRUE(Live(*observer, owner)) << "step " << step;
    EXPECT_EQ(LiveOwners(*observer), 1) << "step " << step;
  }
  node->StopLease();
  EXPECT_FALSE(Live(*observer, owner));
  EXPECT_EQ(LiveOwners(*observer), 0);
}

// Another owner's lease counts as live until it lapses (by the asking node's clock);
// renewing after the lapse (the row pruned meanwhile) makes it live again.
TEST_P(ClusterMembershipTest, AnotherOwnersLeaseCountsLiveUntilItLapses) {
  auto mine = NewNode();
  auto theirs = NewNode();
  ASSERT_OK(mine->StartLease(ByHand()));
  ASSERT_OK(theirs->StartLease(ByHand()));
  // On SQLite the second owner released the first's lease (one process per file):
  // renewing writes it again, so both backends go on from the same state.
  ASSERT_OK(mine->RenewLease());
  EXPECT_EQ(LiveOwners(*mine), 2);

  clock_.AdvanceSeconds(20);
  ASSERT_OK(mine->RenewLease());  // until 50 s; theirs until 30 s
  clock_.AdvanceSeconds(9);       // 29 s
  EXPECT_TRUE(Live(*mine, theirs->owner())) << "1 s left";
  EXPECT_EQ(LiveOwners(*mine), 2);
  clock_.AdvanceSeconds(1);  // 30 s: lapsed
  EXPECT_FALSE(Live(*mine, theirs->owner()));
  EXPECT_TRUE(Live(*theirs, mine->owner())) << "judged alike from either node";
  EXPECT_EQ(LiveOwners(*mine), 1);

  // A renewal prunes lapsed leases of others ...
  ASSERT_OK(mine->RenewLease());
  EXPECT_FALSE(ExpiresAt(theirs->owner()).has_value());
  // ... and a late renewal of the lapsed node writes its lease again.
  ASSERT_OK(theirs->RenewLease());
  EXPECT_TRUE(Live(*mine, theirs->owner()));
  EXPECT_EQ(LiveOwners(*mine), 2);
}

// The one documented difference: a SQLite file belongs to one process, so a new owner
// there releases every other lease at start; on PostgreSQL other nodes' live leases
// stand and only lapsed ones are pruned.
TEST_P(ClusterMembershipTest, ANewOwnerReleasesOtherLeasesOnlyOnSqlite) {
  auto lapsed = NewNode();
  ASSERT_OK(lapsed->StartLease(ByHand()));
  clock_.AdvanceSeconds(30);  // lapsed: never renewed
  auto before_restart = NewNode();
  ASSERT_OK(before_restart->StartLease(ByHand()));
  EXPECT_FALSE(ExpiresAt(lapsed->owner()).has_value()) << "a lapsed lease is pruned";
  auto restarted = NewNode();
  ASSERT_OK(restarted->StartLease(ByHand()));
  EXPECT_EQ(Live(*restarted, before_restart->owner()), GetParam() == Backend::kPostgres);
  EXPECT_EQ(LiveOwners(*restarted), GetParam() == Backend::kSqlite ? 1 : 2);
}

// A node killed and started again (same host and data directory: the same node name)
// takes its predecessor's lease at once, with no time passing; another node's stands.
TEST_P(ClusterMembershipTest, ARestartedNodeTakesItsPredecessorsLeaseAtOnce) {
  auto killed = NewNode();
  ASSERT_OK(killed->StartLease(ByHand("host:/srv/node-1")));
  auto elsewhere = NewNode();
  ASSERT_OK(elsewhere->StartLease(ByHand("host:/srv/node-2")));
  // On SQLite node-2 released node-1's lease already (one process per file); renew so
  // that both backends go on from the same state.
  ASSERT_OK(killed->RenewLease());
  ASSERT_TRUE(Live(*elsewhere, killed->owner()));

  auto restarted = NewNode();
  ASSERT_OK(restarted->StartLease(ByHand("host:/srv/node-1")));
  EXPECT_FALSE(Live(*restarted, killed->owner())) << "its predecessor, gone";
  EXPECT_TRUE(Live(*restarted, restarted->owner()));
  EXPECT_EQ(Live(*restarted, elsewhere->owner()), GetParam() == Backend::kPostgres)
      << "another node's lease stands on PostgreSQL";
}

// The owners-gone listener hears every lease this node removes, after its commit: a
// restarted node's predecessor at start, a lapsed lease at a renewal, its own at
// StopLease; a live node's lease (PostgreSQL) is never reported.
TEST_P(ClusterMembershipTest, TheOwnersGoneListenerHearsEveryLeaseRemoved) {
  auto killed = NewNode();
  ASSERT_OK(killed->StartLease(ByHand("host:/srv/node-1")));
  auto lapsing = NewNode();
  ASSERT_OK(lapsing->StartLease(ByHand("host:/srv/node-2")));
  auto live = NewNode();
  ASSERT_OK(live->StartLease(ByHand("host:/srv/node-3")));
  // On SQLite each start released the leases before it; renew so that both backends go
  // on with all three.
  ASSERT_OK(killed->RenewLease());
  ASSERT_OK(lapsing->RenewLease());

  auto restarted = NewNode();
  std::vector<std::vector<std::string>> heard;
  restarted->SetOwnersGoneListener([&](const std::vector<std::string>& owners) {
    // After the commit: the removed lease is gone from the table already.
    for (const std::string& owner : owners) EXPECT_FALSE(ExpiresAt(owner).has_value());
    heard.push_back(owners);
  });
  ASSERT_OK(restarted->StartLease(ByHand("host:/srv/node-1")));
  ASSERT_EQ(heard.size(), 1u);
  std::vector<std::string> at_start = heard[0];
  std::sort(at_start.begin(), at_start.end());
  std::vector<std::string> expected{killed->owner()};
  if (GetParam() == Backend::kSqlite) {
    // One process per file: every other owner is gone.
    expected = {killed->owner(), lapsing->owner(), live->owner()};
  }
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(at_start, expected);

  heard.clear();
  ASSERT_OK(restarted->RenewLease());
  EXPECT_TRUE(heard.empty()) << "nothing lapsed: nothing reported";
  if (GetParam() == Backend::kPostgres) {
    clock_.AdvanceSeconds(20);
    ASSERT_OK(live->RenewLease());
    ASSERT_OK(restarted->RenewLease());
    clock_.AdvanceSeconds(15);  // node-2's lease (renewed 35 s ago) has lapsed
    ASSERT_OK(restarted->RenewLease());
    ASSERT_EQ(heard.size(), 1u);
    EXPECT_EQ(heard[0], std::vector<std::string>{lapsing->owner()});
    EXPECT_TRUE(Live(*restarted, live->owner())) << "a live lease is not removed";
  }

  heard.clear();
  const std::string own = restarted->owner();
  restarted->StopLease();
  ASSERT_EQ(heard.size(), 1u);
  EXPECT_EQ(heard[0], std::vector<std::string>{own});
}

// Claims (a change-feed shard, a cluster job): held while the holder's lease lives,
// taken over once it lapses, freed at once by a release or StopLease.
TEST_P(ClusterMembershipTest, AClaimIsHeldWhileItsOwnersLeaseLives) {
  const ClusterMembership::LeaseOptions lease{30LL * 1000000, 10LL * 1000000, false, ""};
  ClusterMembership mine(db_->get(), &clock_);
  ClusterMembership other(db_->get(), &clock_);
  EXPECT_EQ(other.ClaimName("job/sweep").status().code(), StatusCode::kFailedPrecondition)
      << "no lease, no claim";
  ASSERT_OK(other.ReleaseName("job/sweep")) << "nothing to release without a lease";
  ASSERT_OK(mine.StartLease(lease));
  ASSERT_OK(other.StartLease(lease));
  // On SQLite the second owner released the first's lease (one process per file):
  // renewing writes it again, so both backends go on from the same state.
  ASSERT_OK(mine.RenewLease());
  auto live = other.LiveOwners();
  ASSERT_OK(live);
  EXPECT_EQ(*live, 2);

  auto held = mine.ClaimName("job/sweep");
  ASSERT_OK(held);
  EXPECT_TRUE(*held);
  held = mine.ClaimName("job/sweep");
  ASSERT_OK(held);
  EXPECT_TRUE(*held) << "claiming again keeps it";
  auto theirs = other.ClaimName("job/sweep");
  ASSERT_OK(theirs);
  EXPECT_FALSE(*theirs) << "held by an owner whose lease lives";
  theirs = other.ClaimName("stream/effects/0");
  ASSERT_OK(theirs);
  EXPECT_TRUE(*theirs) << "another name is free";

  // Ours is renewed, theirs lapses: their claims stay theirs only while it lives.
  clock_.AdvanceSeconds(20);
  ASSERT_OK(mine.RenewLease());  // until 50 s
  clock_.AdvanceSeconds(15);     // 35 s: the other's lease (30 s) has lapsed
  live = mine.LiveOwners();
  ASSERT_OK(live);
  EXPECT_EQ(*live, 1);
  held = mine.ClaimName("stream/effects/0");
  ASSERT_OK(held);
  EXPECT_TRUE(*held) << "its holder's lease lapsed: taken over";
  theirs = other.ClaimName("job/sweep");
  ASSERT_OK(theirs);
  EXPECT_FALSE(*theirs) << "ours still lives";

  // Released: free at once for another owner.
  ASSERT_OK(other.RenewLease());
  ASSERT_OK(mine.ReleaseName("job/sweep"));
  theirs = other.ClaimName("job/sweep");
  ASSERT_OK(theirs);
  EXPECT_TRUE(*theirs);
  held = mine.ClaimName("job/sweep");
  ASSERT_OK(held);
  EXPECT_FALSE(*held);

  // StopLease frees every claim of its owner.
  other.StopLease();
  held = mine.ClaimName("job/sweep");
  ASSERT_OK(held);
  EXPECT_TRUE(*held);
}

// A node killed and started again (same host and data directory: the same node name)
// takes its predecessor's claims at once; on PostgreSQL a lease of another node stands.
TEST_P(ClusterMembershipTest, ARestartOfTheSameNodeTakesItsPredecessorsClaimsAtOnce) {
  ClusterMembership::LeaseOptions lease{30LL * 1000000, 10LL * 1000000, false, ""};
  lease.node = "host:/srv/node-1";
  ClusterMembership killed(db_->get(), &clock_);
  ASSERT_OK(killed.StartLease(lease));
  ASSERT_TRUE(*killed.ClaimName("stream/effects/0"));
  ClusterMembership::LeaseOptions other_node = lease;
  other_node.node = "host:/srv/node-2";
  ClusterMembership elsewhere(db_->get(), &clock_);
  ASSERT_OK(elsewhere.StartLease(other_node));
  if (GetParam() == Backend::kSqlite) {
    EXPECT_TRUE(*elsewhere.ClaimName("stream/effects/0")) << "one process per file";
    return;
  }
  EXPECT_FALSE(*elsewhere.ClaimName("stream/effects/0")) << "another node's lease lives";
  // The same node again, without a clean stop and with no time passing.
  ClusterMembership restarted(db_->get(), &clock_);
  ASSERT_OK(restarted.StartLease(lease));
  auto taken = restarted.ClaimName("stream/effects/0");
  ASSERT_OK(taken);
  EXPECT_TRUE(*taken);
  auto live = restarted.LiveOwners();
  ASSERT_OK(live);
  EXPECT_EQ(*live, 2) << "the restarted node and the other";
}

// Every claim of a node moves when its one lease lapses: a shard and a job held by a
// node that stops renewing are taken over by a live one, and stay there when the old
// holder comes back.
TEST_P(ClusterMembershipTest, ClaimsMoveWhenTheirOwnersLeaseLapses) {
  auto survivor = NewNode();
  auto dying = NewNode();
  ASSERT_OK(survivor->StartLease(ByHand()));
  ASSERT_OK(dying->StartLease(ByHand()));
  ASSERT_OK(survivor->RenewLease());  // see AnotherOwnersLeaseCountsLiveUntilItLapses
  ASSERT_TRUE(Claim(*dying, "stream/effects/0"));
  ASSERT_TRUE(Claim(*dying, "job/sweep"));

  for (int second = 0; second < 29; ++second) {
    clock_.AdvanceSeconds(1);
    if (second % 10 == 0) {
      ASSERT_OK(survivor->RenewLease());
    }
    ASSERT_FALSE(Claim(*survivor, "stream/effects/0")) << "at " << second + 1 << " s";
    ASSERT_FALSE(Claim(*survivor, "job/sweep")) << "at " << second + 1 << " s";
  }
  clock_.AdvanceSeconds(1);  // 30 s: the dying node's lease lapses
  ASSERT_OK(survivor->RenewLease());
  EXPECT_TRUE(Claim(*survivor, "stream/effects/0"));
  EXPECT_TRUE(Claim(*survivor, "job/sweep"));

  // The old holder renews late: its claims are gone, not back.
  ASSERT_OK(dying->RenewLease());
  EXPECT_FALSE(Claim(*dying, "stream/effects/0"));
  EXPECT_FALSE(Claim(*dying, "job/sweep"));
  EXPECT_TRUE(Claim(*survivor, "stream/effects/0")) << "still the survivor's";
}

// Claims are exclusive among live owners: nodes claiming the same names at once get
// exactly one holder per name (on PostgreSQL the upsert waits for the first commit and
// sees its live lease), and the holders agree when each asks again.
TEST_P(ClusterMembershipTest, ConcurrentClaimsOfOneNameGetExactlyOneHolder) {
  constexpr int kNodes = 4, kNames = 12;
  std::vector<std::unique_ptr<ClusterMembership>> nodes;
  for (int n = 0; n < kNodes; ++n) {
    nodes.push_back(NewNode());
    ASSERT_OK(nodes.back()->StartLease(ByHand()));
  }
  // On SQLite each start released the others' leases: renew them all.
  for (auto& node : nodes) ASSERT_OK(node->RenewLease());
  ASSERT_EQ(LiveOwners(*nodes[0]), kNodes);

  std::vector<std::atomic<int>> holders(kNames);
  std::vector<std::vector<bool>> held(kNodes, std::vector<bool>(kNames, false));
  std::atomic<int> errors{0};
  std::barrier start(kNodes);
  std::vector<std::thread> threads;
  for (int n = 0; n < kNodes; ++n) {
    threads.emplace_back([&, n] {
      start.arrive_and_wait();
      for (int k = 0; k < kNames; ++k) {
        // Each node in its own order, so that the races differ.
        const int name = (k + n * 5) % kNames;
        Result<bool> got = nodes[n]->ClaimName("stream/effects/" + std::to_string(name));
        if (!got.ok()) {
          ++errors;
        } else if (*got) {
          ++holders[name];
          held[n][name] = true;
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  ASSERT_EQ(errors.load(), 0);
  for (int name = 0; name < kNames; ++name) {
    EXPECT_EQ(holders[name].load(), 1) << "stream/effects/" << name;
    for (int n = 0; n < kNodes; ++n) {
      EXPECT_EQ(Claim(*nodes[n], "stream/effects/" + std::to_string(name)),
                static_cast<bool>(held[n][name]))
          << "node " << n << ", stream/effects/" << name;
    }
  }
}

// A node whose clock ran 45 s ahead took every shard claim and cluster job
// of three live nodes within 5 s, since it judged their leases (written by their
// clocks) by its own. Leases are now written and judged on the database's clock
// (PostgreSQL's clock_timestamp()): the node ahead sees the live node's lease as live,
// cannot take its claims, writes its own lease to the database's now + ttl (not 45 s
// more), and measures its skew. Real time throughout and no wait: the leases last
// 30 s and nothing here waits for one to lapse. The PostgreSQL test server runs on
// this machine, so the test's own clock is the database's.
TEST_P(ClusterMembershipTest, ANodeWhoseClockRunsAheadCannotTakeALiveNodesClaims) {
  constexpr int64_t kAhead = 45LL * 1000000;
  // Room for the time between two statements on a loaded machine (ASan, two cores).
  constexpr double kTolerance = 5.0 * 1000000;
  testing::OffsetSystemClock on_time_clock(0);
  testing::OffsetSystemClock ahead_clock(kAhead);
  ClusterMembership on_time(db_->get(), &on_time_clock);
  ClusterMembership ahead(db_->get(), &ahead_clock);
  ASSERT_EQ(on_time.lease_clock(), ClusterMembership::LeaseClock::kDatabase);
  ASSERT_EQ(ahead.lease_clock(), ClusterMembership::LeaseClock::kDatabase);

  if (GetParam() == Backend::kSqlite) {
    // A SQLite file has one process: its clock is the database's, and there is no
    // other clock to measure against.
    const int64_t started = ahead_clock.NowMicros();
    ASSERT_OK(ahead.StartLease(ByHand()));
    ASSERT_TRUE(ExpiresAt(ahead.owner()).has_value());
    EXPECT_NEAR(static_cast<double>(*ExpiresAt(ahead.owner())),
                static_cast<double>(started + kTtl), kTolerance);
    EXPECT_FALSE(ahead.clock_skew_micros().has_value());
    EXPECT_EQ(ahead.ToLeaseClock(started), started);
    return;
  }

  ASSERT_OK(on_time.StartLease(ByHand()));
  ASSERT_TRUE(Claim(on_time, "stream/entry-effects/0"));
  ASSERT_TRUE(Claim(on_time, "job/sweep"));

  ASSERT_OK(ahead.StartLease(ByHand()));
  ASSERT_TRUE(ExpiresAt(on_time.owner()).has_value()) << "its start pruned no live lease";
  EXPECT_TRUE(Live(ahead, on_time.owner()));
  EXPECT_EQ(LiveOwners(ahead), 2);
  EXPECT_FALSE(Claim(ahead, "stream/entry-effects/0"));
  EXPECT_FALSE(Claim(ahead, "job/sweep"));
  ASSERT_OK(ahead.RenewLease());
  ASSERT_TRUE(ExpiresAt(on_time.owner()).has_value()) << "nor did its renewal";
  EXPECT_FALSE(Claim(ahead, "stream/entry-effects/0"));
  EXPECT_TRUE(Claim(on_time, "stream/entry-effects/0")) << "still the live node's";
  EXPECT_TRUE(Claim(on_time, "job/sweep"));

  // Both leases on the database's clock: the same expiry but for the time between the
  // two writes, not 45 s apart.
  ASSERT_TRUE(ExpiresAt(ahead.owner()).has_value());
  EXPECT_NEAR(static_cast<double>(*ExpiresAt(ahead.owner())),
              static_cast<double>(*ExpiresAt(on_time.owner())), kTolerance);
  // The skew, measured at the start and renewal: 45 s for the one, none for the other;
  // it translates the node's own times (the execution history's judgments).
  ASSERT_TRUE(ahead.clock_skew_micros().has_value());
  EXPECT_NEAR(static_cast<double>(*ahead.clock_skew_micros()),
              static_cast<double>(kAhead), kTolerance);
  ASSERT_TRUE(on_time.clock_skew_micros().has_value());
  EXPECT_NEAR(static_cast<double>(*on_time.clock_skew_micros()), 0.0, kTolerance);
  EXPECT_NEAR(static_cast<double>(ahead.ToLeaseClock(ahead_clock.NowMicros())),
              static_cast<double>(on_time_clock.NowMicros()), kTolerance);

  // The view the health report shows: both nodes alive, the claims the live node's.
  Result<ClusterMembership::View> view = ahead.ReadView();
  ASSERT_OK(view);
  EXPECT_EQ(view->owner, ahead.owner());
  EXPECT_EQ(view->nodes.size(), 2u);
  ASSERT_EQ(view->claims.size(), 2u);
  for (const ClusterMembership::NameClaim& claim : view->claims) {
    EXPECT_EQ(claim.owner, on_time.owner()) << claim.name;
    EXPECT_TRUE(claim.owner_live) << claim.name;
  }

  // What the database's clock prevents: the same node judging by its own clock, as
  // before, finds the live node's lease lapsed and takes its claim at once.
  ClusterMembership judged_by_own_clock(db_->get(), &ahead_clock,
                                        ClusterMembership::LeaseClock::kNode);
  ASSERT_OK(judged_by_own_clock.StartLease(ByHand()));
  EXPECT_TRUE(Claim(judged_by_own_clock, "stream/entry-effects/0"));
}

// The lease clock each kind of clock gets: a manual clock stands for the database's
// too (tests move time for every node and the database at once), any other clock
// defers to the database's.
TEST_P(ClusterMembershipTest, AManualClockKeepsLeasesOnTheNodesClock) {
  EXPECT_EQ(ClusterMembership::DefaultLeaseClock(clock_),
            ClusterMembership::LeaseClock::kNode);
  EXPECT_EQ(ClusterMembership::DefaultLeaseClock(*SystemClock::Default()),
            ClusterMembership::LeaseClock::kDatabase);
  auto node = NewNode();
  EXPECT_EQ(node->lease_clock(), ClusterMembership::LeaseClock::kNode);
  ASSERT_OK(node->StartLease(ByHand()));
  EXPECT_FALSE(node->clock_skew_micros().has_value()) << "nothing to measure";
  EXPECT_EQ(node->ToLeaseClock(clock_.NowMicros()), clock_.NowMicros());
  // The view: one node, this one, on the manual clock.
  Result<ClusterMembership::View> view = node->ReadView();
  ASSERT_OK(view);
  EXPECT_EQ(view->now_micros, clock_.NowMicros());
  ASSERT_EQ(view->nodes.size(), 1u);
  EXPECT_EQ(view->nodes[0].owner, node->owner());
  EXPECT_EQ(view->nodes[0].expires_at_micros, clock_.NowMicros() + kTtl);
  EXPECT_TRUE(view->claims.empty());
  ASSERT_TRUE(Claim(*node, "job/sweep"));
  clock_.AdvanceSeconds(30);  // lapsed: the claim's holder is no longer live
  view = node->ReadView();
  ASSERT_OK(view);
  EXPECT_TRUE(view->nodes.empty());
  ASSERT_EQ(view->claims.size(), 1u);
  EXPECT_EQ(view->claims[0].name, "job/sweep");
  EXPECT_FALSE(view->claims[0].owner_live);
}

INSTANTIATE_TEST_SUITE_P(Sqlite, ClusterMembershipTest,
                         ::testing::Values(Backend::kSqlite));
INSTANTIATE_TEST_SUITE_P(Postgres, ClusterMembershipTest,
                         ::testing::Values(Backend::kPostgres));

}  // namespace
}  // namespace sheetlog
