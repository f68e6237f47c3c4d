// Fuzzes the reading of a Hugging Face folder's JSON (model/hf_json.hpp:
// Python's Infinity/NaN tokens, transformers' {"__float__": ...}, the depth
// bound) and the flattening of config.json into metadata keys
// (model/metadata.hpp). No crash, no unbounded recursion, and every key the
// metadata lists has a value.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "model/hf_json.hpp"
#include "model/metadata.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tessera;
  auto parsed = parse_hf_json(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.json");
  if (!parsed.ok()) return 0;
  const JsonMetadata meta(*parsed);
  for (size_t i = 0; i < meta.size(); ++i) {
    // Flattening lists only values it can type (objects become dotted keys).
    const std::string_view key = meta.key(i);
    if (meta.type(key) == MetaType::none) {
      std::fprintf(stderr, "listed key '%.*s' has no value\n", static_cast<int>(key.size()), key.data());
      std::abort();
    }
    for (size_t k = 0; k < meta.array_length(key) && k < 4; ++k) (void)meta.get_real(key, k);
  }
  return 0;
}
