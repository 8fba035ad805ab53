// ember's two kinds of error (docs/principles.md, principle 6), and the user error for bad data.
//
// ember::Error is a user error: the message says what happened, why, and what to do.
// ember::InternalError is ember's own bug: the message says so and asks for a report.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace ember {

struct Error : std::runtime_error {
  explicit Error(const std::string& msg) : std::runtime_error(msg) {}
};

// A user error found in the data at run time (an index out of range, an integer division by
// zero): the run stops and its outputs are discarded. Its own type so that callers can tell
// bad data (to report to the user) from a failure of ember (the torch backend falls back).
struct DataError : Error {
  using Error::Error;
};

struct InternalError : std::runtime_error {
  explicit InternalError(const std::string& msg)
      : std::runtime_error("ember internal error: " + msg +
                           " (this is a bug in ember; please report it)") {}
};

}  // namespace ember

// Throws ember::Error with a streamed message when `cond` is false:
//   EMBER_CHECK(a.rank() == b.rank(), "add: ranks differ: " << a.rank() << " vs " << b.rank());
#define EMBER_CHECK(cond, msg)                          \
  do {                                                  \
    if (!(cond)) {                                      \
      std::ostringstream ember_check_os_;               \
      ember_check_os_ << msg;                           \
      throw ::ember::Error(ember_check_os_.str());      \
    }                                                   \
  } while (0)

// Throws ember::Error unconditionally with a streamed message.
#define EMBER_THROW(msg)                         \
  do {                                           \
    std::ostringstream ember_throw_os_;          \
    ember_throw_os_ << msg;                      \
    throw ::ember::Error(ember_throw_os_.str()); \
  } while (0)

// Throws ember::InternalError when an invariant of ember itself does not hold.
#define EMBER_ASSERT(cond, msg)                                                        \
  do {                                                                                 \
    if (!(cond)) {                                                                     \
      std::ostringstream ember_assert_os_;                                             \
      ember_assert_os_ << msg << " [" << __FILE__ << ":" << __LINE__ << ", " #cond "]"; \
      throw ::ember::InternalError(ember_assert_os_.str());                            \
    }                                                                                  \
  } while (0)
