#include "backend/cpu/huge_pages.hpp"

#include <charconv>

#include "io/read_file.hpp"

namespace tessera {
namespace {

// A /proc or /sys file's text, or "" where there is none (not Linux, no THP).
std::string read_text(const char* path) {
  auto text = read_file(path, "kernel file");
  return text.ok() ? std::move(text).value() : std::string();
}

}  // namespace

uint64_t parse_anon_huge_pages(std::string_view smaps_text) {
  constexpr std::string_view kKey = "AnonHugePages:";
  for (size_t at = smaps_text.find(kKey); at != std::string_view::npos; at = smaps_text.find(kKey, at + 1)) {
    if (at != 0 && smaps_text[at - 1] != '\n') continue;  // a line's start only
    size_t i = at + kKey.size();
    while (i < smaps_text.size() && smaps_text[i] == ' ') ++i;
    uint64_t kib = 0;
    const auto [end, ec] = std::from_chars(smaps_text.data() + i, smaps_text.data() + smaps_text.size(), kib);
    if (ec != std::errc() || end == smaps_text.data() + i) return 0;
    if (kib > (UINT64_MAX >> 10)) return 0;
    return kib << 10;
  }
  return 0;
}

std::string parse_thp_mode(std::string_view enabled_text) {
  const size_t open = enabled_text.find('[');
  if (open == std::string_view::npos) return {};
  const size_t close = enabled_text.find(']', open);
  if (close == std::string_view::npos) return {};
  return std::string(enabled_text.substr(open + 1, close - open - 1));
}

uint64_t anon_huge_page_bytes() { return parse_anon_huge_pages(read_text("/proc/self/smaps_rollup")); }

std::string transparent_huge_pages_mode() {
  return parse_thp_mode(read_text("/sys/kernel/mm/transparent_hugepage/enabled"));
}

}  // namespace tessera
