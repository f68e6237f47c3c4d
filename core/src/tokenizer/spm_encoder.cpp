#include "tokenizer/spm_encoder.hpp"

#include <queue>
#include <string>

#include "tokenizer/utf8.hpp"

namespace tessera::tok {
namespace {

struct SpmPiece {
  std::string_view text;
  int prev, next;
};

struct SpmMerge {
  float score;
  int left, right;
  size_t size;  // bytes of the merged text: a changed size means the candidate is stale
};

struct WorseFirst {
  bool operator()(const SpmMerge& a, const SpmMerge& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

class SpmSession {
 public:
  SpmSession(const Vocab& vocab, std::optional<int32_t> unk) : vocab_(vocab), unk_(unk) {}

  void encode(std::string_view text, std::vector<int32_t>& out) {
    // One symbol per UTF-8 character: symbols_: [n_chars]
    for (size_t i = 0; i < text.size();) {
      const size_t len = std::min(utf8_sequence_length(static_cast<uint8_t>(text[i])), text.size() - i);
      const int index = static_cast<int>(symbols_.size());
      symbols_.push_back({text.substr(i, len), index - 1, i + len == text.size() ? -1 : index + 1});
      i += len;
    }
    for (int i = 1; i < static_cast<int>(symbols_.size()); ++i) consider(i - 1, i);

    while (!queue_.empty()) {
      const SpmMerge c = queue_.top();
      queue_.pop();
      SpmPiece& l = symbols_[c.left];
      SpmPiece& r = symbols_[c.right];
      if (l.text.empty() || r.text.empty() || l.text.size() + r.text.size() != c.size) continue;
      l.text = std::string_view(l.text.data(), c.size);
      r.text = {};
      l.next = r.next;
      if (r.next >= 0) symbols_[r.next].prev = c.left;
      consider(l.prev, c.left);
      consider(c.left, l.next);
    }
    for (int i = symbols_.empty() ? -1 : 0; i != -1; i = symbols_[i].next) emit(symbols_[i].text, out);
  }

 private:
  void consider(int left, int right) {
    if (left < 0 || right < 0) return;
    const std::string_view merged(symbols_[left].text.data(), symbols_[left].text.size() + symbols_[right].text.size());
    const auto id = vocab_.find(merged);
    if (!id) return;
    queue_.push({vocab_.token(*id).score, left, right, merged.size()});
  }

  // A final piece is either a merge result (always a token) or a single
  // character; a character that is not a token falls back to its bytes.
  void emit(std::string_view text, std::vector<int32_t>& out) const {
    if (const auto id = vocab_.find(text)) {
      out.push_back(*id);
      return;
    }
    for (char c : text) {
      if (const auto id = spm_byte_token(vocab_, static_cast<uint8_t>(c))) {
        out.push_back(*id);
      } else if (unk_) {
        out.push_back(*unk_);
      }
    }
  }

  const Vocab& vocab_;
  std::optional<int32_t> unk_;
  std::vector<SpmPiece> symbols_;
  std::priority_queue<SpmMerge, std::vector<SpmMerge>, WorseFirst> queue_;
};

}  // namespace

std::optional<int32_t> spm_byte_token(const Vocab& vocab, uint8_t byte) {
  static const char* hex = "0123456789ABCDEF";
  const char name[6] = {'<', '0', 'x', hex[byte >> 4], hex[byte & 15], '>'};
  if (const auto id = vocab.find(std::string_view(name, 6))) return id;
  const char raw = static_cast<char>(byte);
  return vocab.find(std::string_view(&raw, 1));
}

void spm_encode(const Vocab& vocab, std::string_view text, std::optional<int32_t> unk_id, std::vector<int32_t>& out) {
  SpmSession(vocab, unk_id).encode(text, out);
}

}  // namespace tessera::tok
