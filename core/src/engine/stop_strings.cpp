#include "engine/stop_strings.hpp"

#include <algorithm>

namespace tessera {

StopStrings::StopStrings(std::vector<std::string> stops) {
  for (auto& s : stops)
    if (!s.empty()) stops_.push_back(std::move(s));
}

StopStrings::Pushed StopStrings::push(std::string_view piece) {
  Pushed out;
  if (stopped_) {
    out.stopped = true;
    return out;
  }
  if (stops_.empty()) {
    out.released = std::string(piece);
    return out;
  }
  held_.append(piece);
  // The earliest match wins; at one position, any stop string is as good.
  size_t first = std::string::npos;
  for (const auto& s : stops_) first = std::min(first, held_.find(s));
  if (first != std::string::npos) {
    out.released = held_.substr(0, first);
    out.stopped = stopped_ = true;
    held_.clear();
    return out;
  }
  // Hold back the longest suffix of the text that is a proper prefix of some
  // stop string: only it can still grow into a match.
  size_t keep = 0;
  for (const auto& s : stops_) {
    for (size_t n = std::min(s.size() - 1, held_.size()); n > keep; --n) {
      if (std::string_view(held_).substr(held_.size() - n) == std::string_view(s).substr(0, n)) {
        keep = n;
        break;
      }
    }
  }
  out.released = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return out;
}

std::string StopStrings::flush() {
  std::string rest;
  rest.swap(held_);
  return stopped_ ? std::string() : rest;
}

}  // namespace tessera
