// omp_wait.hpp: the OpenMP wait setting in force, for reports.
//
// libgomp reads OMP_WAIT_POLICY and GOMP_SPINCOUNT once, when it is loaded;
// between parallel regions its threads spin that long, then sleep. It moves
// decode speed on a shared machine by 2x or more, so `tessera bench` and
// `tessera --version` print it (thread_governor.hpp says how the engine
// copes with busy cores whatever the setting).
#pragma once

#include <string>

namespace tessera {

// "OMP_WAIT_POLICY=passive", "GOMP_SPINCOUNT=1000", both, or "libgomp default".
std::string omp_wait_setting();

}  // namespace tessera
