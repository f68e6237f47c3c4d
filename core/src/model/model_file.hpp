// model/model_file.hpp: the weight store: a GGUF file or a Hugging Face
// safetensors folder presented as one tessera::WeightStore.
//
// Tensors appear under their stored names with row-major shapes (GGUF's ne[]
// reversed) and a storage `format` ("f32", "f16", "bf16", "i8", "i32", "u8",
// "ggml.q4_0", "ggml.q4_1", "ggml.q8_0", "ggml.q4_k", "ggml.q5_k",
// "ggml.q6_k", ...); the metadata as the file holds it. What the names and
// keys mean is the architecture plugin's knowledge, not the core's. The data
// stays in the memory-mapped files, which live as long as the ModelFile;
// the exception is a GPTQ/AWQ folder's Linears, repacked at open into ggml
// blocks the ModelFile owns, under their weight names (model/hf_quantized.hpp).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "model/gguf.hpp"
#include "model/metadata.hpp"
#include "model/safetensors.hpp"
#include "tessera/status.hpp"
#include "tessera/weights.hpp"

namespace tessera {

// The `format` string of a stored dtype: plain types by name, ggml block types as "ggml.<name>".
std::string storage_format(DType dtype);

class ModelFile : public WeightStore {
 public:
  enum class Kind { gguf, safetensors };

  ModelFormat format() const noexcept override {
    return kind_ == Kind::gguf ? ModelFormat::gguf : ModelFormat::safetensors;
  }
  std::string_view architecture() const noexcept override { return architecture_; }
  const Metadata& metadata() const noexcept override { return *metadata_; }
  const TensorRef* find(std::string_view name) const noexcept override;
  std::span<const TensorRef> tensors() const noexcept override { return tensors_; }
  const std::string& source() const noexcept override { return source_; }

  Kind kind() const { return kind_; }
  // general.name, or a Hugging Face config's _name_or_path (else the folder's name), for display.
  const std::string& name() const { return name_; }
  // The GGUF file (tokenizer, chat template, raw metadata); nullptr for safetensors.
  const std::shared_ptr<const GgufFile>& gguf() const { return gguf_; }
  // For a safetensors folder: tokenizer.json / tokenizer_config.json paths, "" when absent.
  const std::string& tokenizer_json_path() const { return tokenizer_json_; }
  const std::string& tokenizer_config_path() const { return tokenizer_config_; }
  // Drops the resident pages of a tensor's data (MappedFile::release_resident):
  // for weights a plugin has copied into its own layout. Always safe, since a
  // later read maps them in again; a no-op for data not mapped from a file.
  void release_resident(const TensorRef& tensor) const;
  // For a weight repacked from a GPTQ checkpoint with act-order
  // (model/hf_quantized.hpp): its stored column j holds input channel
  // (*order)[j], so a Linear of it reads its input gathered in that order.
  // nullptr for every other tensor (columns in input order).
  const std::vector<int32_t>* input_order(std::string_view name) const noexcept;
  // "gptq 4-bit, group size 128" when the folder's Linears were repacked
  // from a GPTQ/AWQ checkpoint, else "".
  const std::string& repacked_from() const { return repacked_from_; }

 private:
  friend class ModelFileBuilder;
  Status add(TensorRef ref);

  Kind kind_ = Kind::gguf;
  std::string source_;
  std::string architecture_;
  std::string name_;
  std::unique_ptr<Metadata> metadata_;
  std::vector<TensorRef> tensors_;  // file order
  std::map<std::string, size_t, std::less<>> index_;
  std::shared_ptr<const GgufFile> gguf_;
  std::vector<std::shared_ptr<SafetensorsFile>> shards_;
  std::string tokenizer_json_;
  std::string tokenizer_config_;
  std::vector<std::vector<std::byte>> owned_;  // repacked tensors' data (TensorRef::data points here)
  std::map<std::string, std::vector<int32_t>, std::less<>> input_orders_;
  std::string repacked_from_;
};

// Opens a .gguf file or a safetensors folder (config.json + model.safetensors or
// sharded model-*.safetensors with model.safetensors.index.json), maps the data
// and runs validate_tensors. A file that is missing, unreadable or not a model
// file of either kind is corrupt_data or not_found, always naming the path.
Result<std::shared_ptr<ModelFile>> open_model(const std::string& path);

// What the formats promise, whatever the architecture: each tensor has 1 to 4
// dimensions, rows that are whole blocks of its type, and exactly the bytes
// its shape and type need. Messages name the source, the tensor and the numbers.
Status validate_tensors(const WeightStore& store);

}  // namespace tessera
