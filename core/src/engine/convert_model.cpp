#include "engine/convert_model.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <span>

#include <fmt/format.h>

#include "engine/architecture_choice.hpp"
#include "io/output_path.hpp"
#include "io/read_file.hpp"
#include "model/gguf_writer.hpp"
#include "tessera/half.hpp"
#include "tokenizer/gguf_keys.hpp"
#include "tokenizer/tokenizer.hpp"

namespace tessera {
namespace {

namespace fs = std::filesystem;

// GGUF row h*D + 2i + s <- stored row h*D + s*D/2 + i, for each of `heads`
// heads of D rows; every row is `row_bytes` bytes, whatever its type.
std::vector<std::byte> interleave_halves(const TensorRef& t, int64_t heads) {
  const auto rows = static_cast<size_t>(t.shape[0]);
  const size_t row_bytes = t.nbytes / rows;
  const size_t d = rows / static_cast<size_t>(heads);
  const auto* in = static_cast<const std::byte*>(t.data);
  std::vector<std::byte> out(t.nbytes);
  for (size_t h = 0; h < static_cast<size_t>(heads); ++h)
    for (size_t i = 0; i < d / 2; ++i)
      for (size_t s = 0; s < 2; ++s)
        std::memcpy(out.data() + (h * d + 2 * i + s) * row_bytes, in + (h * d + s * d / 2 + i) * row_bytes, row_bytes);
  return out;
}

// f16 or bf16 values as f32: llama.cpp's converter stores one-dimensional
// tensors (norms, biases) as f32, and its CPU operations that add or multiply
// them into f32 activations take no f16/bf16 operand.
std::vector<std::byte> widened_to_f32(std::span<const std::byte> stored, DType type) {
  const size_t n = stored.size() / sizeof(uint16_t);
  std::vector<std::byte> out(n * sizeof(float));
  for (size_t i = 0; i < n; ++i) {
    uint16_t bits;
    std::memcpy(&bits, stored.data() + i * sizeof bits, sizeof bits);
    const float value = type == DType::f16 ? f16_to_f32(bits) : bf16_to_f32(bits);
    std::memcpy(out.data() + i * sizeof value, &value, sizeof value);
  }
  return out;
}

// llama.cpp's general.file_type of a float file: that of its weight matrices' type.
uint32_t float_file_type(const std::map<DType, uint64_t>& matrix_bytes) {
  DType most = DType::f32;
  uint64_t largest = 0;
  for (const auto& [type, bytes] : matrix_bytes)
    if (bytes > largest) most = type, largest = bytes;
  if (most == DType::f16) return 1;    // MOSTLY_F16
  if (most == DType::bf16) return 32;  // MOSTLY_BF16
  return 0;                            // ALL_F32
}

Result<tok::TokenizerSpec> folder_tokenizer(const ModelFile& model) {
  if (model.tokenizer_json_path().empty())
    return Unsupported(model.source() + ": the folder has no tokenizer.json, and a GGUF file needs its tokenizer");
  auto text = read_file(model.tokenizer_json_path(), "tokenizer file");
  if (!text.ok()) return text.status();
  std::string config;
  if (!model.tokenizer_config_path().empty()) {
    auto config_text = read_file(model.tokenizer_config_path(), "tokenizer config file");
    if (!config_text.ok()) return config_text.status();
    config = std::move(config_text).value();
  }
  auto spec = tok::tokenizer_spec_from_hf_json(*text, config, model.tokenizer_json_path());
  if (!spec.ok()) return spec.status();
  // Special ids tokenizer_config.json does not name: config.json's, as
  // llama.cpp's converter takes them (Qwen2.5: bos_token_id 151643).
  const auto n = static_cast<int64_t>(spec->tokens.size());
  for (const auto& [key, id] : {std::pair{"bos_token_id", &spec->bos_id}, std::pair{"eos_token_id", &spec->eos_id}})
    if (const auto v = model.metadata().get_int(key); !*id && v && *v >= 0 && *v < n) *id = static_cast<int32_t>(*v);
  return spec;
}

// What the core checks of a plugin's plan before it reads bytes by it.
Status check_plan(const ModelFile& model, const GgufTensorPlan& plan, const TensorRef* t) {
  if (t == nullptr)
    return Internal(fmt::format("{}: the architecture plugin placed '{}', which the folder does not hold",
                                model.source(), plan.source));
  if (t->ndim < 1 || t->shape[0] <= 0)
    return CorruptData(fmt::format("{}: tensor '{}' has no rows", model.source(), t->name));
  if (plan.interleave_heads < 0 || (plan.interleave_heads > 0 && (plan.interleave_heads > t->shape[0] ||
                                                                   t->shape[0] % (2 * plan.interleave_heads) != 0)))
    return CorruptData(fmt::format("{}: {} has {} rows, not {} heads of an even size", model.source(), t->name,
                                   t->shape[0], plan.interleave_heads));
  return Status::Ok();
}

}  // namespace

Result<ConvertReport> write_gguf_form(const ModelFile& model, const Architecture& architecture,
                                      const std::string& path) {
  const auto start = std::chrono::steady_clock::now();
  if (model.kind() != ModelFile::Kind::safetensors)
    return InvalidArgument(model.source() + " is a GGUF file already");
  if (!model.repacked_from().empty())
    return Unsupported(fmt::format("{}: a {} checkpoint; its weights were repacked into GGUF blocks at load, and "
                                   "writing those out is not supported (convert the float checkpoint instead)",
                                   model.source(), model.repacked_from()));
  if (!provides(architecture, 7))
    return Unsupported(fmt::format("the architecture plugin serving {} was built for ABI 3.{}; describing a model as "
                                   "GGUF needs 3.7",
                                   model.source(), architecture.abi_minor()));
  GgufLayout layout;
  if (Status s = architecture.gguf_layout(model, layout); !s.ok()) {
    if (s.message().starts_with(model.source())) return s;
    return Status(s.code(), fmt::format("{}: {}", model.source(), s.message()));
  }
  auto tokenizer = folder_tokenizer(model);
  if (!tokenizer.ok()) return tokenizer.status();

  ConvertReport report;
  report.architecture = layout.architecture;
  report.notes = layout.notes;
  GgufWriter writer;
  writer.set_string("general.architecture", layout.architecture);
  writer.set_string("general.name", model.name());
  for (const GgufKeyValue& kv : layout.metadata)
    std::visit([&](const auto& v) { writer.set(kv.key, GgufValue(v)); }, kv.value);
  std::vector<const TensorRef*> sources;  // the stored tensor of each plan, checked
  int64_t vocab_rows = 0;
  for (const GgufTensorPlan& plan : layout.tensors) {
    sources.push_back(model.find(plan.source));
    TESSERA_RETURN_IF_ERROR(check_plan(model, plan, sources.back()));
    if (plan.name == "token_embd.weight") vocab_rows = sources.back()->shape[0];
  }
  if (vocab_rows == 0)
    return Internal(fmt::format("{}: the architecture plugin placed no token_embd.weight", model.source()));
  TESSERA_RETURN_IF_ERROR(tok::write_gguf_tokenizer(*tokenizer, vocab_rows, writer));

  std::map<DType, uint64_t> matrix_bytes;
  int widened = 0;
  for (size_t i = 0; i < layout.tensors.size(); ++i) {
    const GgufTensorPlan& plan = layout.tensors[i];
    const TensorRef* t = sources[i];
    std::vector<uint64_t> dims(t->shape.begin(), t->shape.begin() + t->ndim);
    std::reverse(dims.begin(), dims.end());  // GGUF: innermost first
    std::span<const std::byte> bytes(static_cast<const std::byte*>(t->data), t->nbytes);
    std::vector<std::byte> owned;  // the bytes when they are not the stored ones
    if (plan.interleave_heads > 0) {
      owned = interleave_halves(*t, plan.interleave_heads);
      bytes = owned;
    }
    DType type = t->dtype;
    if (t->ndim == 1 && (type == DType::f16 || type == DType::bf16)) {
      owned = widened_to_f32(bytes, type);
      bytes = owned;
      type = DType::f32;
      ++widened;
    }
    if (owned.empty()) {
      TESSERA_RETURN_IF_ERROR(writer.add_tensor_view(plan.name, type, std::move(dims), bytes));
    } else {
      TESSERA_RETURN_IF_ERROR(writer.add_tensor(plan.name, type, std::move(dims), bytes));
    }
    ++report.types[std::string(dtype_name(type))];
    report.tensor_bytes += bytes.size();
    if (t->ndim == 2) matrix_bytes[type] += bytes.size();
  }
  if (widened > 0)
    report.notes.push_back(fmt::format("{} one-dimensional tensors (norms, biases) written as f32, as llama.cpp's "
                                       "converter writes them",
                                       widened));
  writer.set_u32("general.file_type", float_file_type(matrix_bytes));
  writer.set_string("tessera.converted_from", "Hugging Face safetensors");
  TESSERA_RETURN_IF_ERROR(writer.write(path));
  std::error_code ec;
  report.output_file_bytes = fs::file_size(path, ec);
  if (ec) return Unavailable(fmt::format("{}: written, but its size cannot be read: {}", path, ec.message()));
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

Result<ConvertReport> convert_model(const ConvertJob& job, const PluginRegistry& registry) {
  std::error_code ec;
  if (job.input.empty() || job.output.empty()) return InvalidArgument("convert needs an input folder and an output path");
  if (!fs::is_directory(job.input, ec))
    return InvalidArgument(fmt::format("{}: not a folder; tessera convert reads Hugging Face folders (config.json, "
                                       "*.safetensors, tokenizer.json)",
                                       job.input));
  TESSERA_RETURN_IF_ERROR(check_output_path(job.output, job.force));
  auto model = open_model(job.input);
  if (!model.ok()) return model.status();
  auto found = find_architecture(registry, (*model)->architecture());
  if (!found.ok()) return found.status();
  return write_gguf_form(**model, *found->architecture, job.output);
}

}  // namespace tessera
