#include "engine/draft_vocabulary.hpp"

#include <algorithm>
#include <numeric>

#include "io/read_file.hpp"

namespace tessera {

std::vector<int32_t> most_used_tokens(const tok::Tokenizer& tokenizer, std::string_view text, int64_t size) {
  const int32_t vocab = tokenizer.vocab_size();
  std::vector<int32_t> ids(static_cast<size_t>(vocab));
  std::iota(ids.begin(), ids.end(), 0);
  if (size >= vocab) return ids;
  size = std::max<int64_t>(size, 0);

  std::vector<int64_t> count(static_cast<size_t>(vocab), 0);
  for (int32_t id : tokenizer.encode(text, /*add_bos=*/false, /*parse_special=*/false))
    if (id >= 0 && id < vocab) ++count[static_cast<size_t>(id)];
  std::stable_sort(ids.begin(), ids.end(),
                   [&](int32_t a, int32_t b) { return count[static_cast<size_t>(a)] > count[static_cast<size_t>(b)]; });
  std::vector<int32_t> kept(ids.begin(), ids.begin() + size);
  for (int32_t id = 0; id < vocab; ++id) {
    const tok::TokenType type = tokenizer.token_type(id);
    if (type == tok::TokenType::control || type == tok::TokenType::user_defined) kept.push_back(id);
  }
  std::sort(kept.begin(), kept.end());
  kept.erase(std::unique(kept.begin(), kept.end()), kept.end());
  return kept;
}

Result<std::vector<int32_t>> most_used_tokens_in_file(const tok::Tokenizer& tokenizer,
                                                      const std::filesystem::path& path, int64_t size) {
  auto text = read_file(path, "the draft vocabulary's text");
  if (!text.ok()) return text.status();
  return most_used_tokens(tokenizer, *text, size);
}

}  // namespace tessera
