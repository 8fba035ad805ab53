// What the C++ tests use to check ember's error messages.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "ember/support/error.h"

namespace ember {

// The message of the E (ember::Error or a subclass) that f throws; "<no error>" when it
// throws none.
template <class E = Error>
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "<no error>";
}

// A substring check with the whole text in the failure message (gmock is not required).
inline ::testing::AssertionResult Contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "'" << text << "' does not contain '" << part << "'";
}

}  // namespace ember
