#include "tokenizer/bpe_encoder.hpp"

#include <queue>

#include "tokenizer/utf8.hpp"

namespace tessera::tok {
namespace {

struct Symbol {
  int32_t id;            // token id, or -1 for a character that is not a token
  std::string_view text;
  int prev, next;        // doubly linked list over live symbols
  bool alive = true;
};

struct Candidate {
  int32_t rank;
  int left, right;
  int32_t left_id, right_id;  // ids at push time: a changed id means the candidate is stale
  int32_t result;
};

struct LaterFirst {
  bool operator()(const Candidate& a, const Candidate& b) const {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
  }
};

}  // namespace

void bpe_encode_word(const Vocab& vocab, std::string_view word, bool ignore_merges, std::vector<int32_t>& out) {
  if (word.empty()) return;
  if (ignore_merges) {
    if (const auto id = vocab.find(word)) {
      out.push_back(*id);
      return;
    }
  }

  // One symbol per UTF-8 character: symbols: [n_chars]
  std::vector<Symbol> symbols;
  symbols.reserve(word.size());
  for (size_t i = 0; i < word.size();) {
    const size_t len = std::min(utf8_sequence_length(static_cast<uint8_t>(word[i])), word.size() - i);
    const auto text = word.substr(i, len);
    const int index = static_cast<int>(symbols.size());
    symbols.push_back({vocab.find(text).value_or(-1), text, index - 1, -1});
    if (index > 0) symbols[index - 1].next = index;
    i += len;
  }

  std::priority_queue<Candidate, std::vector<Candidate>, LaterFirst> queue;
  const auto consider = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    const auto& l = symbols[left];
    const auto& r = symbols[right];
    if (l.id < 0 || r.id < 0) return;
    if (const auto m = vocab.merge(l.id, r.id)) queue.push({m->rank, left, right, l.id, r.id, m->result});
  };
  for (int i = 1; i < static_cast<int>(symbols.size()); ++i) consider(i - 1, i);

  while (!queue.empty()) {
    const Candidate c = queue.top();
    queue.pop();
    Symbol& l = symbols[c.left];
    Symbol& r = symbols[c.right];
    if (!l.alive || !r.alive || l.next != c.right || l.id != c.left_id || r.id != c.right_id) continue;
    l.id = c.result;
    l.text = std::string_view(l.text.data(), l.text.size() + r.text.size());
    r.alive = false;
    l.next = r.next;
    if (r.next >= 0) symbols[r.next].prev = c.left;
    consider(l.prev, c.left);
    consider(c.left, l.next);
  }

  for (int i = 0; i >= 0 && i < static_cast<int>(symbols.size()); i = symbols[i].next) {
    const Symbol& s = symbols[i];
    if (s.id >= 0) {
      out.push_back(s.id);
      continue;
    }
    // Not a token: try each byte on its own (a vocabulary may spell raw bytes).
    for (char byte : s.text) {
      if (const auto id = vocab.find(std::string_view(&byte, 1))) out.push_back(*id);
    }
  }
}

}  // namespace tessera::tok
