// Status's detail: for the operator, never the client's message, kept through
// Annotate and shown by ToString.
#include "emulator/status.h"

#include <gtest/gtest.h>

namespace sheetlog {
namespace {

TEST(StatusTest, TheDetailStaysOutOfTheMessageAndThroughAnnotate) {
  const Status status = Unavailable("the PostgreSQL table store is unreachable")
                            .WithDetail("the PostgreSQL database at host=/run/pg");
  EXPECT_EQ(status.code(), StatusCode::kUnavailable);
  EXPECT_EQ(status.message(), "the PostgreSQL table store is unreachable");
  EXPECT_EQ(status.detail(), "the PostgreSQL database at host=/run/pg");
  const Status annotated = status.Annotate("appending");
  EXPECT_EQ(annotated.message(), "appending: the PostgreSQL table store is unreachable");
  EXPECT_EQ(annotated.detail(), status.detail());
  EXPECT_EQ(annotated.ToString(),
            "Unavailable: appending: the PostgreSQL table store is unreachable "
            "[the PostgreSQL database at host=/run/pg]");
  EXPECT_EQ(NotFound("x").ToString(), "NotFound: x");
  EXPECT_TRUE(NotFound("x").detail().empty());
}

}  // namespace
}  // namespace sheetlog
