#include "model/model_file.hpp"

#include <filesystem>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "model/hf_json.hpp"
#include "model/hf_quantized.hpp"


namespace tessera {

namespace fs = std::filesystem;

std::string storage_format(DType dtype) {
  const std::string name(dtype_name(dtype));
  return is_block_format(dtype) ? "ggml." + name : name;
}

void ModelFile::release_resident(const TensorRef& tensor) const {
  // Each mapping ignores a range outside it, so every file may be asked.
  if (gguf_) gguf_->release_resident(tensor.data, tensor.nbytes);
  for (const auto& shard : shards_) shard->release_resident(tensor.data, tensor.nbytes);
}

const std::vector<int32_t>* ModelFile::input_order(std::string_view name) const noexcept {
  auto it = input_orders_.find(name);
  return it == input_orders_.end() ? nullptr : &it->second;
}

const TensorRef* ModelFile::find(std::string_view name) const noexcept {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

Status ModelFile::add(TensorRef ref) {
  if (index_.count(ref.name) != 0)
    return CorruptData(fmt::format("{}: two tensors map to the name '{}'", source_, ref.name));
  index_.emplace(ref.name, tensors_.size());
  tensors_.push_back(std::move(ref));
  return Status::Ok();
}

namespace {

TensorRef ref_from_gguf(const GgufTensorInfo& t) {
  TensorRef r;
  r.name = t.name;
  r.dtype = t.dtype;
  r.format = storage_format(t.dtype);
  r.ndim = static_cast<int32_t>(t.dims.size());
  for (int i = 0; i < r.ndim; ++i) r.shape[i] = static_cast<int64_t>(t.dims[r.ndim - 1 - i]);  // ne[0] is innermost
  r.data = t.data;
  r.nbytes = t.nbytes;
  return r;
}

// What a Hugging Face config.json says the model is: architectures[0], or
// model_type in configs that omit the list.
std::string hf_architecture(const nlohmann::json& config) {
  if (auto it = config.find("architectures"); it != config.end() && it->is_array() && !it->empty() &&
                                              (*it)[0].is_string())
    return (*it)[0].get<std::string>();
  if (auto it = config.find("model_type"); it != config.end() && it->is_string()) return it->get<std::string>();
  return "";
}

}  // namespace

class ModelFileBuilder {
 public:
  // GPTQ/AWQ folders (model/hf_quantized.hpp): each packed Linear becomes one
  // block tensor under its weight name, owned by the ModelFile; the packed
  // tensors it replaces leave the store.
  static Status repack_quantized_linears(ModelFile& m, const nlohmann::json& config, const std::string& config_source) {
    try {
      return replace_packed_tensors(m, config, config_source);
    } catch (const std::bad_alloc&) {
      return OutOfMemory(m.source_ + ": out of memory while repacking the GPTQ/AWQ Linears");
    }
  }

  static Status replace_packed_tensors(ModelFile& m, const nlohmann::json& config, const std::string& config_source) {
    auto repacked = repack_hf_quantized(
        config, m.tensors_, [&m](std::string_view name) { return m.find(name); }, m.source_, config_source);
    if (!repacked.ok()) return repacked.status();
    if (repacked->method.empty()) return Status::Ok();
    const std::set<std::string, std::less<>> consumed(repacked->consumed.begin(), repacked->consumed.end());
    std::vector<TensorRef> kept;
    for (TensorRef& t : m.tensors_) {
      if (!consumed.contains(t.name)) kept.push_back(std::move(t));
    }
    m.tensors_.clear();
    m.index_.clear();
    for (TensorRef& t : kept) TESSERA_RETURN_IF_ERROR(m.add(std::move(t)));
    for (RepackedLinearWeight& w : repacked->weights) {
      TensorRef r;
      r.name = w.name;
      r.dtype = w.dtype;
      r.format = storage_format(w.dtype);
      r.ndim = 2;
      r.shape[0] = w.out_features;
      r.shape[1] = w.in_features;
      r.nbytes = w.blocks.size();
      m.owned_.push_back(std::move(w.blocks));
      r.data = m.owned_.back().data();
      if (!w.input_order.empty()) m.input_orders_.emplace(w.name, std::move(w.input_order));
      TESSERA_RETURN_IF_ERROR(m.add(std::move(r)));
    }
    m.repacked_from_ = fmt::format("{} {}-bit, {}", repacked->method, repacked->bits,
                                   repacked->group_size == -1 ? std::string("one group per row")
                                                              : fmt::format("group size {}", repacked->group_size));
    return Status::Ok();
  }

  static Result<std::shared_ptr<ModelFile>> gguf(const std::string& path) {
    auto file = GgufFile::open(path);
    if (!file.ok()) return file.status();
    auto m = std::shared_ptr<ModelFile>(new ModelFile());
    m->kind_ = ModelFile::Kind::gguf;
    m->source_ = path;
    m->gguf_ = file.value();
    m->architecture_ = m->gguf_->architecture();
    if (m->architecture_.empty()) return CorruptData(path + ": metadata 'general.architecture' is missing");
    m->name_ = m->gguf_->get_string("general.name").value_or("");
    m->metadata_ = std::make_unique<GgufMetadata>(m->gguf_);
    m->tensors_.reserve(m->gguf_->tensors().size());
    for (const auto& t : m->gguf_->tensors()) TESSERA_RETURN_IF_ERROR(m->add(ref_from_gguf(t)));
    // GPTQ groups GGUF's block types cannot hold (tessera quantize --format gptq).
    if (const auto text = m->gguf_->get_string(std::string(kGgufQuantizationConfigKey))) {
      const std::string where = fmt::format("{}: metadata '{}'", path, kGgufQuantizationConfigKey);
      nlohmann::json config;
      try {
        config = {{"quantization_config", nlohmann::json::parse(*text)}};
      } catch (const nlohmann::json::exception& e) {
        return CorruptData(fmt::format("{} is not JSON: {}", where, e.what()));
      }
      if (!config["quantization_config"].is_object()) return CorruptData(where + " is not a JSON object");
      TESSERA_RETURN_IF_ERROR(repack_quantized_linears(*m, config, where));
      if (m->repacked_from_.empty()) return CorruptData(where + " names no GPTQ or AWQ quantization");
    }
    return m;
  }

  static Result<std::shared_ptr<ModelFile>> safetensors(const std::string& dir) {
    const fs::path root(dir);
    const std::string config_path = (root / "config.json").string();
    auto config = read_hf_json(root / "config.json");
    if (!config.ok()) return config.status();
    if (!config->is_object()) return CorruptData(config_path + ": not a JSON object");
    auto shards = open_safetensors_checkpoint(dir);
    if (!shards.ok()) return shards.status();

    auto m = std::shared_ptr<ModelFile>(new ModelFile());
    m->kind_ = ModelFile::Kind::safetensors;
    m->source_ = dir;
    m->architecture_ = hf_architecture(*config);
    if (m->architecture_.empty())
      return CorruptData(config_path + ": neither 'architectures' nor 'model_type' says what model this is");
    m->name_ = config->value("_name_or_path", std::string());
    if (m->name_.empty()) m->name_ = root.filename().string();
    m->metadata_ = std::make_unique<JsonMetadata>(*config);
    m->shards_ = std::move(shards).value();
    for (const auto& shard : m->shards_) {
      for (const auto& t : shard->tensors()) {
        TensorRef r;
        r.name = t.name;
        r.dtype = t.dtype;
        r.format = storage_format(t.dtype);
        r.ndim = static_cast<int32_t>(t.shape.size());
        for (int i = 0; i < r.ndim; ++i) r.shape[i] = t.shape[i];
        r.data = t.data;
        r.nbytes = t.nbytes;
        TESSERA_RETURN_IF_ERROR(m->add(std::move(r)));
      }
    }
    TESSERA_RETURN_IF_ERROR(repack_quantized_linears(*m, *config, config_path));
    std::error_code ec;
    if (fs::exists(root / "tokenizer.json", ec)) m->tokenizer_json_ = (root / "tokenizer.json").string();
    if (fs::exists(root / "tokenizer_config.json", ec))
      m->tokenizer_config_ = (root / "tokenizer_config.json").string();
    return m;
  }
};

Result<std::shared_ptr<ModelFile>> open_model(const std::string& path) {
  std::error_code ec;
  Result<std::shared_ptr<ModelFile>> m = Internal("unset");
  if (fs::is_directory(path, ec)) {
    if (!fs::exists(fs::path(path) / "config.json", ec))
      return Unavailable(path + ": a model folder needs config.json (Hugging Face layout)");
    m = ModelFileBuilder::safetensors(path);
  } else if (!fs::exists(path, ec)) {
    return Unavailable(path + ": no such file or folder");
  } else {
    m = ModelFileBuilder::gguf(path);
  }
  if (!m.ok()) return m.status();
  TESSERA_RETURN_IF_ERROR(validate_tensors(*m.value()));
  return m;
}

Status validate_tensors(const WeightStore& store) {
  const std::string& src = store.source();
  for (const TensorRef& t : store.tensors()) {
    const auto info = dtype_info(t.dtype);
    if (t.ndim < 1 || t.ndim > kMaxDims || info.block_elems == 0)
      return CorruptData(fmt::format("{}: tensor '{}' has an invalid shape or type", src, t.name));
    if (t.cols() % info.block_elems != 0)
      return CorruptData(fmt::format("{}: tensor '{}': row length {} is not a multiple of the {} block size {}", src,
                                     t.name, t.cols(), dtype_name(t.dtype), info.block_elems));
    const uint64_t expected = dtype_row_bytes(t.dtype, static_cast<uint64_t>(t.cols())) *
                              static_cast<uint64_t>(t.rows());
    if (expected != t.nbytes)
      return CorruptData(fmt::format("{}: tensor '{}' holds {} bytes but its shape and type need {}", src, t.name,
                                     t.nbytes, expected));
  }
  return Status::Ok();
}

}  // namespace tessera
