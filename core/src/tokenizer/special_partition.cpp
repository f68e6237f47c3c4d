#include "tokenizer/special_partition.hpp"

#include <cctype>

namespace tessera::tok {
namespace {

bool is_space(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

// Splits one raw fragment at every occurrence of token `id`, appending to `out`.
void split_fragment(std::string_view raw, int32_t id, const SpecToken& tok, std::vector<Fragment>& out) {
  const std::string_view needle = tok.text;
  while (!raw.empty()) {
    const size_t at = raw.find(needle);
    if (at == std::string_view::npos) break;
    std::string_view left = raw.substr(0, at);
    if (tok.lstrip) {
      while (!left.empty() && is_space(left.back())) left.remove_suffix(1);
    }
    if (!left.empty()) out.push_back({-1, left});
    out.push_back({id, {}});
    raw.remove_prefix(at + needle.size());
    if (tok.rstrip) {
      while (!raw.empty() && is_space(raw.front())) raw.remove_prefix(1);
    }
  }
  if (!raw.empty()) out.push_back({-1, raw});
}

}  // namespace

std::vector<Fragment> partition_special(std::string_view text, const Vocab& vocab,
                                        const std::vector<int32_t>& specials) {
  std::vector<Fragment> fragments;
  if (text.empty()) return fragments;
  fragments.push_back({-1, text});
  for (const int32_t id : specials) {
    const SpecToken& tok = vocab.token(id);
    if (tok.text.empty()) continue;
    std::vector<Fragment> next;
    next.reserve(fragments.size());
    for (const auto& f : fragments) {
      if (f.token >= 0 || f.text.find(tok.text) == std::string_view::npos) {
        next.push_back(f);
      } else {
        split_fragment(f.text, id, tok, next);
      }
    }
    fragments = std::move(next);
  }
  return fragments;
}

}  // namespace tessera::tok
