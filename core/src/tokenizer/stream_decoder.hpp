// tokenizer/stream_decoder.hpp: incremental detokenization for streamed output.
#pragma once

#include <cstdint>
#include <string>

#include "tokenizer/tokenizer.hpp"

namespace tessera::tok {

// Turns ids arriving one at a time into text that is always whole UTF-8: a
// character whose bytes are spread over several tokens (byte tokens, byte-level
// BPE pieces of an emoji) is returned once its last byte has arrived.
//
// Bytes that may still become a character are held back; at flush() whatever
// is still held is returned as U+FFFD (one per byte). A byte that can never
// start or continue a character (0xFF, a lead byte followed by ASCII) is
// replaced by U+FFFD as soon as that is certain, so output is never blocked.
// The concatenation of every push() and the final flush() equals
// utf8_sanitize(tokenizer.decode(all ids)).
//
// Not thread-safe (one decoder per sequence); the Tokenizer must outlive it.
class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tokenizer, bool render_special = false)
      : tok_(&tokenizer), render_special_(render_special) {}

  // Text completed by `id` (possibly empty).
  std::string push(int32_t id);
  // The rest of the text, ending the stream; the decoder can then be reused.
  std::string flush();
  // Forgets held bytes and starts a new stream.
  void reset();

 private:
  std::string take_complete();

  const Tokenizer* tok_;
  bool render_special_;
  bool at_start_ = true;  // SPM: the first text piece loses the space encode() added
  std::string pending_;   // bytes not yet returned: at most one unfinished character
};

}  // namespace tessera::tok
