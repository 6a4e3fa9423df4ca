// A small fork-join parallel_for for the CPU backend (std::thread, no OpenMP, no pool).
//
// Work is handed out dynamically in chunks from an atomic counter, because the CPU kernels'
// items are uneven (causal attention rows, varlen sequences of different lengths). The calling
// thread works too, so a failure to start a thread only costs parallelism, never correctness.
// An exception thrown by the body (std::bad_alloc from a scratch buffer) is carried to the
// caller and rethrown there after every worker has joined; kernels turn it into a status.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace flashkit {
namespace cpu {

// Calls body(begin, end, worker) over disjoint ranges covering [0, n), with `worker` in
// [0, workers) identifying the calling worker (for per-worker scratch). `workers` is the
// number of workers actually used: min(num_threads, chunks), at least 1; query it up front
// with parallel_workers() to size scratch. `grain` is the smallest chunk worth handing out.
template <class Body>
void parallel_for(int64_t n, int num_threads, int64_t grain, Body&& body);

// The number of workers parallel_for(n, num_threads, grain, ...) will use.
inline int parallel_workers(int64_t n, int num_threads, int64_t grain) {
  if (n <= 0) return 1;
  grain = std::max<int64_t>(grain, 1);
  const int64_t chunks_min = (n + grain - 1) / grain;
  return int(std::max<int64_t>(1, std::min<int64_t>(std::max(num_threads, 1), chunks_min)));
}

template <class Body>
void parallel_for(int64_t n, int num_threads, int64_t grain, Body&& body) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  const int workers = parallel_workers(n, num_threads, grain);
  if (workers == 1) {
    body(int64_t(0), n, 0);
    return;
  }
  // About four chunks per worker balances uneven items without much counter traffic.
  const int64_t chunk = std::max<int64_t>(grain, n / (int64_t(workers) * 4));
  std::atomic<int64_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error;
  std::mutex error_mutex;

  auto run = [&](int worker) {
    try {
      while (!failed.load(std::memory_order_relaxed)) {
        const int64_t begin = next.fetch_add(chunk, std::memory_order_relaxed);
        if (begin >= n) break;
        body(begin, std::min(n, begin + chunk), worker);
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!error) error = std::current_exception();
      failed.store(true, std::memory_order_relaxed);
    }
  };

  std::vector<std::thread> threads;
  try {
    threads.reserve(size_t(workers - 1));
    for (int w = 1; w < workers; ++w) threads.emplace_back(run, w);
  } catch (...) {
    // Could not start (all) threads: the ones running plus this one finish the work.
  }
  run(0);
  for (auto& t : threads) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace cpu
}  // namespace flashkit
