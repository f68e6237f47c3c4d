// batch_run.hpp: `tessera run` with several requests, run concurrently.
#pragma once

#include <string>
#include <vector>

#include "engine/session.hpp"

namespace tessera::cli {

struct BatchOptions {
  int32_t max_batch_tokens = 512;
  std::string output;        // JSONL, one line per request ("" = none)
  std::string metrics_json;  // aggregate metrics ("" = none)
  bool quiet = false;
};

// Prints each request's text to stdout in submission order, a summary to
// stderr; returns the exit code (1 when any request failed).
int run_batch(Session& session, std::vector<GenerationRequest> requests, const BatchOptions& options);

}  // namespace tessera::cli
