// huge_pages.hpp: whether this process's memory sits on transparent huge pages.
//
// The ggml plugin asks for 2 MiB pages for its repacked weights
// (plugins/quant/ggml/weight_arena.hpp), and decode is 15-20% faster when the
// kernel grants them. It grants them only when THP is "always" or "madvise",
// so `tessera bench` reports both facts beside the decode figure.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tessera {

// Bytes of this process's anonymous memory on huge pages (AnonHugePages of
// /proc/self/smaps_rollup); 0 where that file is absent or unreadable.
uint64_t anon_huge_page_bytes();
// The THP mode in force ("always", "madvise" or "never", the bracketed word of
// /sys/kernel/mm/transparent_hugepage/enabled); "" where it cannot be read.
std::string transparent_huge_pages_mode();

// The parsers behind them, for tests: the AnonHugePages line of smaps text
// (in kB), and the bracketed word of the `enabled` file.
uint64_t parse_anon_huge_pages(std::string_view smaps_text);
std::string parse_thp_mode(std::string_view enabled_text);

}  // namespace tessera
