// RetentionCutoffSeq: how far back the retention policy keeps a log (seed 003). What
// may actually go is EventLog::Truncate's decision (tested in event_log_test); this is
// only the policy's arithmetic.
#include <gtest/gtest.h>

#include "src/ops/retention.h"

namespace sheetlog {
namespace {

constexpr int64_t kDaySeconds = 24 * 3600;

// Four segments of 10 entries each, created at day 0, 10, 20 and 30.
std::vector<SegmentInfo> FourSegments() {
  std::vector<SegmentInfo> segments;
  for (int64_t num = 0; num < 4; ++num) {
    SegmentInfo s;
    s.num = num;
    s.first_seq = num * 10;
    s.created = num * 10 * kDaySeconds;
    segments.push_back(s);
  }
  return segments;
}

TEST(RetentionPolicyTest, OffKeepsEverything) {
  EXPECT_EQ(RetentionCutoffSeq(FourSegments(), 100 * kDaySeconds, RetentionOptions{}), 0);
}

TEST(RetentionPolicyTest, RetainSegmentsKeepsTheNewestN) {
  RetentionOptions options;
  options.retain_segments = 1;
  EXPECT_EQ(RetentionCutoffSeq(FourSegments(), 0, options), 30);
  options.retain_segments = 3;
  EXPECT_EQ(RetentionCutoffSeq(FourSegments(), 0, options), 10);
  options.retain_segments = 4;
  EXPECT_EQ(RetentionCutoffSeq(FourSegments(), 0, options), 0);
  options.retain_segments = 9;
  EXPECT_EQ(RetentionCutoffSeq(FourSegments(), 0, options), 0);
}

TEST(RetentionPolicyTest, RetainDaysKeepsEverySegmentWithARecentEntry) {
  RetentionOptions options;
  options.retain_days = 15;
  // At day 36 the horizon is day 21: segment 1 ended at day 20 (segment 2's creation),
  // segment 2 ended at day 30, after the horizon: segments 2 and 3 stay.
  EXPECT_EQ(RetentionCutoffSeq(FourSegments(), 36 * kDaySeconds, options), 20);
  // At day 35 the horizon is day 20 exactly: segment 1's last entry may be from day 20.
  EXPECT_EQ(RetentionCutoffSeq(FourSegments(), 35 * kDaySeconds, options), 10);
  // Long after: only the newest segment is left to keep (Truncate never drops it).
  EXPECT_EQ(RetentionCutoffSeq(FourSegments(), 1000 * kDaySeconds, options), 30);
}

TEST(RetentionPolicyTest, BothLimitsKeepWhatEitherKeeps) {
  RetentionOptions options;
  options.retain_segments = 1;
  options.retain_days = 15;
  EXPECT_EQ(RetentionCutoffSeq(FourSegments(), 36 * kDaySeconds, options), 20);
  options.retain_segments = 3;
  options.retain_days = 1;
  EXPECT_EQ(RetentionCutoffSeq(FourSegments(), 36 * kDaySeconds, options), 10);
}

}  // namespace
}  // namespace sheetlog
