// tessera/metadata.hpp: a model file's raw metadata, as the file holds it.
//
// The core reads files; it does not interpret them. An architecture plugin
// reads its own hyper-parameters from here: a GGUF file's key/values
// ("llama.block_count", "tokenizer.ggml.tokens"), or a Hugging Face folder's
// config.json with nested objects flattened to dotted keys
// ("num_hidden_layers", "rope_scaling.factor", "text_config.hidden_size";
// an array of objects as "key.0.field"). Arrays of numbers, booleans and
// strings stay arrays.
//
// Thread-safety: read-only; safe to share between threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "tessera/abi.hpp"

namespace tessera {

enum class MetaType : uint32_t {
  none = 0,     // absent
  integer = 1,  // any integer width (GGUF u8..i64, JSON integers)
  real = 2,     // f32/f64, JSON numbers with a fraction or exponent
  boolean = 3,
  string = 4,
  array = 5,
  null = 6,     // JSON null
};

class Metadata : public AbiObject {
 public:
  // Every key, in the file's order: key(0) .. key(size() - 1).
  virtual size_t size() const noexcept = 0;
  virtual std::string_view key(size_t index) const noexcept = 0;

  virtual MetaType type(std::string_view key) const noexcept = 0;
  // nullopt when absent or of another type. get_real also reads integers;
  // get_int reads an unsigned value only when it fits int64.
  virtual std::optional<int64_t> get_int(std::string_view key) const noexcept = 0;
  virtual std::optional<double> get_real(std::string_view key) const noexcept = 0;
  virtual std::optional<bool> get_bool(std::string_view key) const noexcept = 0;
  virtual std::optional<std::string_view> get_string(std::string_view key) const noexcept = 0;

  // Arrays: their length (0 when absent or not an array), the type of their
  // elements (none when empty or mixed), and element `index` as above.
  virtual size_t array_length(std::string_view key) const noexcept = 0;
  virtual MetaType element_type(std::string_view key) const noexcept = 0;
  virtual std::optional<int64_t> get_int(std::string_view key, size_t index) const noexcept = 0;
  virtual std::optional<double> get_real(std::string_view key, size_t index) const noexcept = 0;
  virtual std::optional<std::string_view> get_string(std::string_view key, size_t index) const noexcept = 0;

  bool contains(std::string_view key) const noexcept { return type(key) != MetaType::none; }
};

}  // namespace tessera
