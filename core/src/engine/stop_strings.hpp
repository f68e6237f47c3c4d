// stop_strings.hpp: ends a generation at the first of a set of strings (the
// OpenAI API's `stop`), without ever streaming a part of one.
//
// Text arrives piece by piece, and a stop string may span pieces ("\n\n"
// split over two tokens), so the matcher holds back the longest tail of the
// text that could still begin a stop string and releases it once it cannot.
// The text before a match is released; the match and all after it are not.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tessera {

class StopStrings {
 public:
  StopStrings() = default;
  // Empty strings are ignored (they would match before any text).
  explicit StopStrings(std::vector<std::string> stops);

  struct Pushed {
    std::string released;  // text now safe to show
    bool stopped = false;  // a stop string was found: nothing more is released
  };
  // Takes the next piece of generated text.
  Pushed push(std::string_view piece);
  // The generation ended otherwise: the text held back is released.
  std::string flush();

  bool empty() const { return stops_.empty(); }
  bool stopped() const { return stopped_; }

 private:
  std::vector<std::string> stops_;
  std::string held_;  // a tail that may begin a stop string
  bool stopped_ = false;
};

}  // namespace tessera
