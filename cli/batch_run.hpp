// batch_run.hpp: `tessera run` with several requests, run concurrently.
#pragma once

#include <string>
#include <vector>

#include "engine/session.hpp"
#include "output_file.hpp"

namespace tessera::cli {

struct BatchOptions {
  int32_t max_batch_tokens = 512;
  const OutputFile* output = nullptr;        // JSONL, one line per request (null = none)
  const OutputFile* metrics_json = nullptr;  // aggregate metrics (null = none)
  bool quiet = false;
  ParamValues speculative;  // the pipeline's [speculative], for the summary
};

// Prints each request's text to stdout in submission order, a summary to
// stderr; returns the exit code (1 when any request failed).
int run_batch(Session& session, std::vector<GenerationRequest> requests, const BatchOptions& options);

}  // namespace tessera::cli
