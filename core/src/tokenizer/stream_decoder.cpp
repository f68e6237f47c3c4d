#include "tokenizer/stream_decoder.hpp"

#include "tokenizer/utf8.hpp"

namespace tessera::tok {
namespace {
constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD
}

std::string StreamDecoder::push(int32_t id) {
  std::string piece = tok_->token_to_piece(id, render_special_);
  if (piece.empty()) return {};
  if (at_start_) {
    // decode() of one id applies the same rules as a whole decode, including
    // the SPM leading-space removal that only the first non-empty piece gets
    // (even when nothing is left of it afterwards).
    const int32_t ids[1] = {id};
    piece = tok_->decode(ids, render_special_);
    at_start_ = false;
  }
  pending_ += piece;
  return take_complete();
}

std::string StreamDecoder::take_complete() {
  std::string out;
  std::string_view rest = pending_;
  while (!rest.empty()) {
    const Utf8Scan scan = utf8_scan(rest);
    out.append(rest.substr(0, scan.valid_bytes));
    rest.remove_prefix(scan.valid_bytes);
    if (rest.empty() || scan.incomplete_tail) break;
    out.append(kReplacement);  // certainly invalid: waiting cannot fix it
    rest.remove_prefix(1);
  }
  pending_ = std::string(rest);
  return out;
}

std::string StreamDecoder::flush() {
  std::string out = utf8_sanitize(pending_);
  reset();
  return out;
}

void StreamDecoder::reset() {
  pending_.clear();
  at_start_ = true;
}

}  // namespace tessera::tok
