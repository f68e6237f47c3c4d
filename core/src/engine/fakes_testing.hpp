// fakes_testing.hpp: plain stand-ins for the plugins the engine drives, so
// that the scheduler's parts are tested alone: a memory that only keeps
// lengths and block counts, a strategy that reads a script, a tokenizer of
// bytes.
#pragma once

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/request.hpp"
#include "tessera/decoding.hpp"
#include "tessera/sequence_memory.hpp"
#include "tokenizer/byte_level.hpp"
#include "tokenizer/tokenizer.hpp"

namespace tessera::testing {

// Blocks of `block_size` tokens out of `n_blocks`; no data. With `recurrent`,
// the memory behaves as a recurrent model's does: truncate is unsupported and
// each sequence carries a state (here: the sum of the token counts appended)
// that only checkpoints can take back.
class FakeMemory final : public SequenceMemory {
 public:
  FakeMemory(int32_t block_size, int32_t n_blocks, int64_t max_context, bool recurrent = false)
      : block_size_(block_size), n_blocks_(n_blocks), max_context_(max_context), recurrent_(recurrent) {}

  Status configure(const SequenceStateSpec&) noexcept override { return Status::Ok(); }
  int32_t prefix_granularity() const noexcept override { return granularity; }
  Result<SeqId> create_sequence() noexcept override {
    if (static_cast<int32_t>(seqs_.size()) >= max_sequences) return Status(OutOfMemory("fake: no sequence free"));
    const SeqId id = next_++;
    seqs_[id] = {};
    return id;
  }
  void release(SeqId seq) noexcept override {
    seqs_.erase(seq);
    ++releases;
  }
  Status append_slots(SeqId seq, int32_t n) noexcept override {
    auto it = seqs_.find(seq);
    if (it == seqs_.end()) return NotFound("fake: no sequence");
    const int32_t blocks = blocks_for(it->second.length + n) - static_cast<int32_t>(it->second.table.size());
    if (blocks > free_blocks()) return OutOfMemory("fake: no block free");
    for (int32_t b = 0; b < blocks; ++b) it->second.table.push_back(next_block_++);
    it->second.length += n;
    it->second.state += n;
    return Status::Ok();
  }
  Result<SeqId> fork(SeqId) noexcept override { return Status(Unsupported("fake")); }
  Status truncate(SeqId seq, int32_t new_length) noexcept override {
    if (recurrent_) return Unsupported("fake: recurrent");
    auto it = seqs_.find(seq);
    if (it == seqs_.end() || new_length > it->second.length) return InvalidArgument("fake: bad truncate");
    it->second.length = new_length;
    it->second.table.resize(static_cast<size_t>(blocks_for(new_length)));
    ++truncations;
    return Status::Ok();
  }
  int32_t length(SeqId seq) const noexcept override {
    auto it = seqs_.find(seq);
    return it == seqs_.end() ? 0 : it->second.length;
  }
  std::span<const int32_t> block_table(SeqId seq) const noexcept override {
    auto it = seqs_.find(seq);
    return it == seqs_.end() ? std::span<const int32_t>{} : std::span<const int32_t>(it->second.table);
  }
  KvLayerView layer(int32_t) noexcept override { return {}; }
  RecurrentStateView state(SeqId, int32_t) noexcept override { return {}; }
  int64_t max_sequence_tokens() const noexcept override {
    return std::min<int64_t>(max_context_, static_cast<int64_t>(n_blocks_) * block_size_);
  }
  bool can_hold(std::span<const MemoryDemand> demands) const noexcept override {
    int64_t free = free_blocks();
    for (const MemoryDemand& d : demands) {
      const int64_t held = d.seq < 0 ? 0 : static_cast<int64_t>(block_table(d.seq).size());
      free -= std::max<int64_t>(0, blocks_for(d.tokens) - held);
    }
    return free >= 0;
  }
  MemoryStats stats() const noexcept override {
    MemoryStats s;
    s.blocks_total = n_blocks_;
    s.blocks_used = n_blocks_ - free_blocks();
    return s;
  }
  Result<CheckpointId> checkpoint(SeqId seq) noexcept override {
    auto it = seqs_.find(seq);
    if (it == seqs_.end()) return Status(NotFound("fake: no sequence"));
    checkpoints_[next_checkpoint_] = {seq, it->second.length, it->second.state};
    ++checkpoints_taken;
    return next_checkpoint_++;
  }
  Status restore(SeqId seq, CheckpointId id) noexcept override {
    auto c = checkpoints_.find(id);
    auto it = seqs_.find(seq);
    if (c == checkpoints_.end() || it == seqs_.end() || c->second.seq != seq) return NotFound("fake: no checkpoint");
    it->second.length = c->second.length;
    it->second.state = c->second.state;
    it->second.table.resize(static_cast<size_t>(blocks_for(c->second.length)));
    ++restores;
    return Status::Ok();
  }
  void drop_checkpoint(SeqId, CheckpointId id) noexcept override { checkpoints_.erase(id); }

  int64_t fake_state(SeqId seq) const { return seqs_.at(seq).state; }
  size_t live_checkpoints() const { return checkpoints_.size(); }
  int32_t max_sequences = 1000;
  int32_t granularity = 0;  // prefix_granularity()
  int truncations = 0, restores = 0, releases = 0, checkpoints_taken = 0;

 private:
  struct Sequence {
    int32_t length = 0;
    int64_t state = 0;
    std::vector<int32_t> table;
  };
  struct Saved {
    SeqId seq;
    int32_t length;
    int64_t state;
  };
  int32_t blocks_for(int64_t tokens) const { return static_cast<int32_t>((tokens + block_size_ - 1) / block_size_); }
  int32_t free_blocks() const {
    int32_t used = 0;
    for (const auto& [id, s] : seqs_) used += static_cast<int32_t>(s.table.size());
    return n_blocks_ - used;
  }

  int32_t block_size_, n_blocks_;
  int64_t max_context_;
  bool recurrent_;
  std::map<SeqId, Sequence> seqs_;
  std::map<CheckpointId, Saved> checkpoints_;
  SeqId next_ = 0;
  int32_t next_block_ = 0;
  CheckpointId next_checkpoint_ = 0;
};

// Picks, at each row, the argmax of the row (like greedy), and counts its calls.
class ArgmaxStrategy final : public DecodingStrategy {
 public:
  Status step(DecodingContext& ctx, std::vector<int32_t>& out) noexcept override {
    ++steps;
    const auto row = ctx.logits();
    out.push_back(static_cast<int32_t>(std::max_element(row.begin(), row.end()) - row.begin()));
    return Status::Ok();
  }
  int steps = 0;
};

// A byte-level tokenizer of the 256 bytes plus an end token (id 256); with
// `bos_first`, a BOS token (id 257) that encode() puts first.
inline tok::Tokenizer byte_tokenizer(bool bos_first = false) {
  tok::TokenizerSpec s;
  s.source = "bytes";
  s.kind = tok::TokenizerKind::bpe;
  s.pre = "gpt-2";
  for (int b = 0; b < 256; ++b) s.tokens.push_back({tok::byte_to_symbol(static_cast<uint8_t>(b))});
  s.tokens.push_back({"<end>", 0.0f, tok::TokenType::control});
  s.eos_id = 256;
  if (bos_first) {
    s.tokens.push_back({"<bos>", 0.0f, tok::TokenType::control});
    s.bos_id = 257;
    s.add_bos = true;
  }
  return std::move(tok::Tokenizer::create(std::move(s))).value();
}

// A request of `prompt` tokens, admitted nowhere yet, as Scheduler::submit makes it.
inline std::unique_ptr<Request> make_request(size_t index, std::vector<int32_t> prompt, int64_t max_tokens,
                                             const tok::Tokenizer& tokenizer) {
  auto r = std::make_unique<Request>();
  r->index = index;
  r->request.max_tokens = max_tokens;
  r->request.sampling.temperature = 0;
  r->outcome.index = index;
  r->outcome.result.prompt_ids = prompt;
  r->outcome.result.metrics.prompt_tokens = static_cast<int64_t>(prompt.size());
  r->ctx = std::make_unique<RequestDecodingContext>(prompt, r->request.sampling);
  r->stream = std::make_unique<tok::StreamDecoder>(tokenizer);
  return r;
}

}  // namespace tessera::testing
