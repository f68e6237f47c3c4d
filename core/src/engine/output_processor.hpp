// output_processor.hpp: the "update" part of a step: each request's rows of
// logits to its decoding strategy (a token, or the verification of its draft
// tokens), memory rolled back past rejected drafts, stop conditions, streamed
// text, metrics; and finishing requests.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "engine/step_planner.hpp"
#include "tessera/decoding.hpp"
#include "tokenizer/tokenizer.hpp"

namespace tessera {

// What one step produced, for the scheduler's statistics.
struct StepTotals {
  int64_t generated_tokens = 0;
  int64_t drafted_tokens = 0;
  int64_t accepted_tokens = 0;
};

class OutputProcessor {
 public:
  using TextCallback = std::function<void(size_t index, std::string_view text)>;
  using DoneCallback = std::function<void(const RequestOutcome&)>;
  // Explains logits that are not finite (NaN or infinite): an error naming
  // what in the model file is broken.
  using NonFiniteExplainer = std::function<Status()>;
  // Item i's rows of logits [n_logits, vocab] (StepExecutor::logits).
  using RowsOf = std::function<std::span<float>(size_t item)>;

  // `truncates`: rejected drafts are dropped with SequenceMemory::truncate;
  // otherwise the checkpoint the planner took is restored.
  OutputProcessor(SequenceMemory& memory, DecodingStrategy& strategy, const tok::Tokenizer& tokenizer,
                  int64_t context, bool truncates, NonFiniteExplainer explain_nonfinite)
      : memory_(memory), strategy_(strategy), tokenizer_(tokenizer), context_(context), truncates_(truncates),
        explain_nonfinite_(std::move(explain_nonfinite)) {}

  // Applies one executed step. Fails as a whole only when the model or a
  // plugin fails; a finished request leaves `requests.running`.
  Status apply(RequestTable& requests, const StepPlan& plan, const RowsOf& rows_of, const TextCallback& on_text,
               const DoneCallback& on_done, StepTotals& totals);

  // Ends a request: frees its memory, flushes its text, records its status.
  void finish(RequestTable& requests, Request& request, Status status, const DoneCallback& on_done);

 private:
  Status choose(const ScheduledRequest& item, std::span<float> logits);
  Status roll_back(Request& request, int32_t n_valid);
  // Commits the chosen tokens; the stop reason, or nullptr to go on.
  const char* commit(Request& request, const TextCallback& on_text, StepTotals& totals);

  SequenceMemory& memory_;
  DecodingStrategy& strategy_;
  const tok::Tokenizer& tokenizer_;
  int64_t context_;
  bool truncates_;
  NonFiniteExplainer explain_nonfinite_;
  std::vector<int32_t> chosen_;
};

// Whether every value is finite (no NaN, no infinity).
bool all_finite(std::span<const float> values);

}  // namespace tessera
