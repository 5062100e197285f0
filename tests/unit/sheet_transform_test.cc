#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "src/sheet/transform.h"

namespace sheetlog {
namespace {

using Piece = AxisMap::Piece;

// The map as a table old -> new (0 = deleted) over 1..limit, for small limits.
std::vector<int64_t> Positions(const AxisMap& map) {
  std::vector<int64_t> out;
  for (int64_t p = 1; p <= map.limit(); ++p) out.push_back(map.Forward(p).value_or(0));
  return out;
}

TEST(AxisMapTest, IdentityAndAllDeleted) {
  AxisMap id = AxisMap::Identity(kMaxRow);
  EXPECT_TRUE(id.IsIdentity());
  EXPECT_EQ(id.Forward(1), 1);
  EXPECT_EQ(id.Forward(kMaxRow), kMaxRow);
  EXPECT_EQ(id.Forward(0), std::nullopt);
  EXPECT_EQ(id.Forward(kMaxRow + 1), std::nullopt);
  EXPECT_EQ(id.Backward(kMaxRow), kMaxRow);
  AxisMap none = AxisMap::AllDeleted(10);
  EXPECT_FALSE(none.IsIdentity());
  EXPECT_EQ(none.Forward(3), std::nullopt);
  EXPECT_EQ(none.Backward(3), std::nullopt);
  none.Insert(0, 2);
  none.Delete(1, 1);
  EXPECT_TRUE(none.pieces().empty());
}

TEST(AxisMapTest, InsertAtTopMovesEverythingDown) {
  AxisMap map = AxisMap::Identity(10);
  map.Insert(0, 3);
  EXPECT_EQ(Positions(map), (std::vector<int64_t>{4, 5, 6, 7, 8, 9, 10, 0, 0, 0}));
  EXPECT_EQ(map.Backward(1), std::nullopt);  // inserted
  EXPECT_EQ(map.Backward(3), std::nullopt);
  EXPECT_EQ(map.Backward(4), 1);
  EXPECT_EQ(map.pieces(), (std::vector<Piece>{{1, 4, 7}}));
}

TEST(AxisMapTest, InsertInTheMiddleSplitsOnePiece) {
  AxisMap map = AxisMap::Identity(kMaxRow);
  map.Insert(1000001, 1);  // the seed's "insert new row after 1000001"
  EXPECT_EQ(map.Forward(1000001), 1000001);
  EXPECT_EQ(map.Forward(1000002), 1000003);
  EXPECT_EQ(map.Backward(1000002), std::nullopt);
  EXPECT_EQ(map.Forward(kMaxRow), std::nullopt);  // pushed off the grid
  EXPECT_EQ(map.Forward(kMaxRow - 1), kMaxRow);
  EXPECT_EQ(map.pieces().size(), 2u);
}

TEST(AxisMapTest, DeleteMovesTheRestUp) {
  AxisMap map = AxisMap::Identity(10);
  map.Delete(3, 2);
  EXPECT_EQ(Positions(map), (std::vector<int64_t>{1, 2, 0, 0, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(map.Backward(3), 5);
  EXPECT_EQ(map.Backward(9), std::nullopt);  // nothing old is below row 8 any more
}

TEST(AxisMapTest, DeleteAtTheEdgesAndBeyond) {
  AxisMap map = AxisMap::Identity(10);
  map.Delete(9, 5);  // overlaps the end: clipped
  EXPECT_EQ(Positions(map), (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8, 0, 0}));
  map.Delete(11, 3);  // wholly beyond the grid: no-op
  map.Delete(0, 3);   // invalid: no-op
  map.Delete(1, 0);   // invalid: no-op
  EXPECT_EQ(Positions(map), (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8, 0, 0}));
  map.Delete(1, 1);
  EXPECT_EQ(Positions(map), (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 0, 0}));
  map.Delete(1, 100);
  EXPECT_TRUE(map.pieces().empty());
}

TEST(AxisMapTest, InsertPastTheLimitIsANoop) {
  AxisMap map = AxisMap::Identity(5);
  map.Insert(5, 2);
  map.Insert(9, 1);
  EXPECT_TRUE(map.IsIdentity());
  map.Insert(4, 7);  // only the last position moves, and falls off
  EXPECT_EQ(Positions(map), (std::vector<int64_t>{1, 2, 3, 4, 0}));
}

TEST(AxisMapTest, DeleteOfInsertedRowsRestoresIdentity) {
  AxisMap map = AxisMap::Identity(kMaxRow);
  map.Insert(7, 4);
  EXPECT_FALSE(map.IsIdentity());
  map.Delete(8, 4);
  // Canonical pieces: the map is the identity again, except that the last 4 rows fell
  // off the grid during the insert and stay deleted.
  EXPECT_EQ(map.pieces(), (std::vector<Piece>{{1, 1, kMaxRow - 4}}));
  AxisMap expected_big = AxisMap::Identity(kMaxRow);
  expected_big.Delete(kMaxRow - 3, 4);
  EXPECT_EQ(map, expected_big);
  AxisMap roundtrip = AxisMap::Identity(100);
  roundtrip.Insert(100 - 1, 1);  // moves row 100 off
  AxisMap expected = AxisMap::Identity(100);
  expected.Delete(100, 1);
  EXPECT_EQ(roundtrip.Forward(100), std::nullopt);
  roundtrip.Delete(100, 1);  // delete the inserted (empty) row
  EXPECT_EQ(roundtrip, expected);
}

TEST(AxisMapTest, PiecesGrowWithEditsNotWithSize) {
  AxisMap map = AxisMap::Identity(kMaxRow);
  std::mt19937_64 rng(7);
  for (int i = 0; i < 500; ++i) {
    int64_t at = 1 + static_cast<int64_t>(rng() % 1000000);
    if (rng() % 2) {
      map.Insert(at, 1 + rng() % 10);
    } else {
      map.Delete(at, 1 + rng() % 10);
    }
    ASSERT_LE(map.pieces().size(), static_cast<size_t>(i + 2));
  }
  // Pieces stay strictly increasing on both sides and consistent both ways.
  for (size_t i = 1; i < map.pieces().size(); ++i) {
    const Piece& a = map.pieces()[i - 1];
    const Piece& b = map.pieces()[i];
    ASSERT_LT(a.old_begin + a.length - 1, b.old_begin);
    ASSERT_LT(a.new_begin + a.length - 1, b.new_begin);
  }
  for (int i = 0; i < 2000; ++i) {
    int64_t p = 1 + static_cast<int64_t>(rng() % 1100000);
    if (auto fwd = map.Forward(p)) {
      ASSERT_EQ(map.Backward(*fwd), p);
    }
    if (auto back = map.Backward(p)) {
      ASSERT_EQ(map.Forward(*back), p);
    }
  }
}

// A literal model: a vector of old positions (0 = inserted), edited by vector
// insert/erase and truncated to the limit.
TEST(AxisMapTest, MatchesALiteralVectorModel) {
  std::mt19937_64 rng(20261122);
  for (int round = 0; round < 3000; ++round) {
    int64_t limit = 1 + static_cast<int64_t>(rng() % 12);
    AxisMap map = AxisMap::Identity(limit);
    std::vector<int64_t> model;
    for (int64_t p = 1; p <= limit; ++p) model.push_back(p);
    int steps = static_cast<int>(rng() % 12);
    std::string history;
    for (int s = 0; s < steps; ++s) {
      bool insert = rng() % 2;
      int64_t count = 1 + static_cast<int64_t>(rng() % (limit + 2));
      if (insert) {
        int64_t after = static_cast<int64_t>(rng() % (limit + 2));
        map.Insert(after, count);
        if (after < limit) {
          model.insert(model.begin() + after, count, 0);
          model.resize(limit);
        }
        history += " ins(" + std::to_string(after) + "," + std::to_string(count) + ")";
      } else {
        int64_t at = 1 + static_cast<int64_t>(rng() % (limit + 2));
        map.Delete(at, count);
        if (at <= limit) {
          int64_t end = std::min(at - 1 + count, limit);
          model.erase(model.begin() + (at - 1), model.begin() + end);
          model.resize(limit, 0);
        }
        history += " del(" + std::to_string(at) + "," + std::to_string(count) + ")";
      }
    }
    SCOPED_TRACE("limit " + std::to_string(limit) + ":" + history + " -> " +
                 map.DebugString());
    for (int64_t p = 1; p <= limit; ++p) {
      int64_t old = model[p - 1];
      ASSERT_EQ(map.Backward(p).value_or(0), old) << "new position " << p;
      if (old != 0) {
        ASSERT_EQ(map.Forward(old), p);
      }
    }
    for (int64_t old = 1; old <= limit; ++old) {
      bool survives = std::find(model.begin(), model.end(), old) != model.end();
      ASSERT_EQ(map.Forward(old).has_value(), survives) << "old position " << old;
    }
  }
}

TEST(AxisMapTest, ForEachBackwardRun) {
  AxisMap map = AxisMap::Identity(20);
  map.Insert(3, 2);  // new 4,5 inserted
  map.Delete(10, 1);
  std::vector<std::tuple<int64_t, int64_t, int64_t>> runs;
  map.ForEachBackwardRun(
      2, 12, [&](int64_t b, int64_t e, int64_t o) { runs.emplace_back(b, e, o); });
  EXPECT_EQ(runs, (std::vector<std::tuple<int64_t, int64_t, int64_t>>{
                      {2, 3, 2}, {6, 9, 4}, {10, 12, 9}}));
}

TEST(RowColumnTransformTest, MapsCellsBothWays) {
  RowColumnTransform t;
  EXPECT_TRUE(t.IsIdentity());
  t.rows().Insert(1, 1);
  t.columns().Delete(2, 1);
  EXPECT_EQ(t.Forward({2, 3}), (CellRef{3, 2}));
  EXPECT_EQ(t.Forward({2, 2}), std::nullopt);  // its column was deleted
  EXPECT_EQ(t.Backward({3, 2}), (CellRef{2, 3}));
  EXPECT_EQ(t.Backward({2, 2}), std::nullopt);  // its row is new
  EXPECT_EQ(t.piece_count(), 4u);
  t.DeleteAll();
  EXPECT_EQ(t.Forward({1, 1}), std::nullopt);
  EXPECT_EQ(t.piece_count(), 0u);
}

}  // namespace
}  // namespace sheetlog
