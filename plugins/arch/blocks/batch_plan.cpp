#include "tessera/blocks/batch_plan.hpp"

#include <algorithm>
#include <string>

namespace tessera::blocks {

Status check_layer_range(std::string_view who, int32_t first, int32_t last, int64_t n_layer, const float* hidden) {
  if (first < 0 || first > last || last > n_layer)
    return InvalidArgument(std::string(who) + ": layers [" + std::to_string(first) + ", " + std::to_string(last) +
                           ") of a model of " + std::to_string(n_layer));
  if (hidden == nullptr) return InvalidArgument(std::string(who) + ": forward_layers() needs the hidden states");
  return Status::Ok();
}

Status BatchPlan::plan(const Batch& batch, const SequenceMemory& memory, const BatchLimits& limits) {
  const int64_t n_rows = static_cast<int64_t>(batch.tokens.size());
  if (n_rows == 0 || batch.seqs.empty()) return InvalidArgument("batch: empty batch");
  if (n_rows > INT32_MAX) return InvalidArgument("batch: batch of " + std::to_string(n_rows) + " tokens is too large");
  // Said, not inferred from block_size: a cache reporting blocks of 0 to a
  // model with attention layers is an error, not a model without them.
  const bool attention_layers = limits.attention_layers;
  if (attention_layers && limits.block_size < 1)
    return InvalidArgument("batch: the KV cache reports block size " + std::to_string(limits.block_size));

  row_pos.assign(static_cast<size_t>(n_rows), -1);
  row_seq.assign(static_cast<size_t>(n_rows), -1);
  tables.clear();
  attention.clear();
  logit_rows.clear();
  max_position = -1;

  for (size_t s = 0; s < batch.seqs.size(); ++s) {
    const BatchSeq& bs = batch.seqs[s];
    // Messages are built only on failure: a decode step must not allocate.
    const auto who = [&bs] { return "batch: sequence " + std::to_string(bs.seq) + ": "; };
    for (size_t t = 0; t < s; ++t)
      if (batch.seqs[t].seq == bs.seq) return InvalidArgument(who() + "appears twice in one batch");
    if (bs.n_tokens <= 0) return InvalidArgument(who() + "has " + std::to_string(bs.n_tokens) + " tokens in the batch");
    if (bs.n_past < 0) return InvalidArgument(who() + "has negative n_past " + std::to_string(bs.n_past));
    if (bs.n_logits < 0 || bs.n_logits > bs.n_tokens)
      return InvalidArgument(who() + "asks logits for " + std::to_string(bs.n_logits) + " of its " +
                             std::to_string(bs.n_tokens) + " tokens");
    if (bs.token_offset < 0 || static_cast<int64_t>(bs.token_offset) + bs.n_tokens > n_rows)
      return InvalidArgument(who() + "tokens [" + std::to_string(bs.token_offset) + ", +" +
                             std::to_string(bs.n_tokens) + ") lie outside the batch of " +
                             std::to_string(n_rows) + " tokens");
    const int64_t end = static_cast<int64_t>(bs.n_past) + bs.n_tokens;
    if (end > limits.max_context)
      return InvalidArgument(who() + "would reach " + std::to_string(end) +
                             " tokens, beyond the model's context of " + std::to_string(limits.max_context));
    if (memory.length(bs.seq) < end)
      return InvalidArgument(who() + "the memory holds " + std::to_string(memory.length(bs.seq)) +
                             " slots but the batch needs " + std::to_string(end) +
                             " (reserve them with append_slots first)");
    const std::span<const int32_t> table = attention_layers ? memory.block_table(bs.seq) : std::span<const int32_t>{};
    if (attention_layers && static_cast<int64_t>(table.size()) * limits.block_size < end)
      return Internal(who() + "block table covers " + std::to_string(table.size()) + " blocks of " +
                      std::to_string(limits.block_size) + ", fewer than its " +
                      std::to_string(end) + " slots");

    for (int32_t i = 0; i < bs.n_tokens; ++i) {
      const size_t r = static_cast<size_t>(bs.token_offset + i);
      if (row_seq[r] != -1)
        return InvalidArgument(who() + "batch token " + std::to_string(r) + " is claimed by two sequences");
      const TokenId tok = batch.tokens[r];
      if (tok < 0 || tok >= limits.vocab)
        return InvalidArgument(who() + "token id " + std::to_string(tok) + " is outside the vocabulary of " +
                               std::to_string(limits.vocab));
      row_seq[r] = static_cast<int32_t>(s);
      row_pos[r] = bs.n_past + i;
    }
    max_position = std::max(max_position, static_cast<int32_t>(end - 1));
    if (attention_layers) {
      tables.push_back(table);
      attention.push_back(AttentionSeq{table, bs.n_past, bs.n_tokens, bs.token_offset});
    }
    for (int32_t i = bs.n_tokens - bs.n_logits; i < bs.n_tokens; ++i) logit_rows.push_back(bs.token_offset + i);
  }
  for (int64_t r = 0; r < n_rows; ++r)
    if (row_seq[static_cast<size_t>(r)] == -1)
      return InvalidArgument("batch: batch token " + std::to_string(r) + " belongs to no sequence");
  return Status::Ok();
}

}  // namespace tessera::blocks
