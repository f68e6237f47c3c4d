#include "tessera/blocks/metadata_reader.hpp"

#include <cmath>

namespace tessera::blocks {

namespace {

bool absent(MetaType t) { return t == MetaType::none || t == MetaType::null; }

}  // namespace

std::string MetadataReader::where(std::string_view key) const {
  return store_.source() + ": metadata '" + full(key) + "'";
}

bool MetadataReader::has(std::string_view key) const { return !absent(store_.metadata().type(full(key))); }

Status MetadataReader::integer(std::string_view key, int64_t& out, int64_t min, std::optional<int64_t> fallback) const {
  const Metadata& m = store_.metadata();
  const std::string k = full(key);
  if (absent(m.type(k))) {
    if (!fallback) return CorruptData(where(key) + " is required but missing");
    out = *fallback;
    return Status::Ok();
  }
  const auto v = m.get_int(k);
  if (!v || *v < min)
    return CorruptData(where(key) + (min > 0 ? " must be a positive integer" : " must be a non-negative integer"));
  out = *v;
  return Status::Ok();
}

Status MetadataReader::real(std::string_view key, double& out) const {
  const Metadata& m = store_.metadata();
  const std::string k = full(key);
  if (absent(m.type(k))) return Status::Ok();
  const auto v = m.get_real(k);
  // config.json may spell Infinity and NaN (model/hf_json.hpp); no
  // hyper-parameter read this way (epsilons, RoPE bases, scales) is one.
  if (!v || !std::isfinite(*v)) return CorruptData(where(key) + " must be a finite number");
  out = *v;
  return Status::Ok();
}

Status MetadataReader::boolean(std::string_view key, bool& out) const {
  const Metadata& m = store_.metadata();
  const std::string k = full(key);
  if (absent(m.type(k))) return Status::Ok();
  const auto v = m.get_bool(k);
  if (!v) return CorruptData(where(key) + " must be true or false");
  out = *v;
  return Status::Ok();
}

std::optional<std::string_view> MetadataReader::string(std::string_view key) const {
  return store_.metadata().get_string(full(key));
}

}  // namespace tessera::blocks
