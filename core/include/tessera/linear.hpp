// tessera/linear.hpp: y = x·Wᵀ (+ b) for one stored weight, in whatever format it is stored.
//
// Made by a Quantizer for a weight of shape [out_features, in_features]. The
// implementation may keep pointers into the memory-mapped weights; it must not
// outlive the WeightStore it was made from. forward() may use OpenMP threads;
// calls on one Linear must not overlap (the engine runs one step at a time).
#pragma once

#include <cstdint>

#include "tessera/abi.hpp"
#include "tessera/status.hpp"

namespace tessera {

class Linear : public AbiObject {
 public:
  virtual int64_t in_features() const noexcept = 0;
  virtual int64_t out_features() const noexcept = 0;
  // x: [n_rows, in_features] f32, row-major; y: [n_rows, out_features] f32.
  virtual Status forward(const float* x, float* y, int64_t n_rows) noexcept = 0;
  // Bytes of weight data read by one forward (for roofline figures).
  virtual uint64_t weight_bytes() const noexcept = 0;

  // Optional: forward() in two halves, so a caller can run several Linears
  // that read the same x inside one parallel region: one thread fork and one
  // barrier for all of them instead of one each per Linear (the transformer
  // does this for Q/K/V and for gate/up; in decode those syncs are a visible
  // share of a token's time).
  //   prepare(x, n_rows): converts x for this Linear (a quantizer may quantize
  //     it into its own scratch) and remembers where to read; starts no threads.
  //   compute(y, begin, end): output columns [begin, end) of every row into y
  //     ([n_rows, out_features], bias included). After prepare() has returned,
  //     calls for disjoint ranges may run on different threads at once; begin
  //     and end are multiples of column_alignment() (or end = out_features);
  //     starts no threads.
  // x must stay unchanged until the last compute(). A Linear whose splits()
  // is false offers forward() only.
  virtual bool splits() const noexcept { return false; }
  virtual int64_t column_alignment() const noexcept { return 1; }
  virtual Status prepare(const float* /*x*/, int64_t /*n_rows*/) noexcept {
    return Unsupported("this Linear has no prepare/compute split");
  }
  virtual void compute(float* /*y*/, int64_t /*begin*/, int64_t /*end*/) noexcept {}
};

}  // namespace tessera
