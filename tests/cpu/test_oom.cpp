// Out of memory on the CPU backend: an allocation that fails mid-call must give
// FK_ERROR_OUT_OF_MEMORY with every output untouched. This test binary replaces the global
// operator new (the library's allocations resolve to it too), and a scope can arm it to fail
// the n-th allocation of one exact size; unarmed it is plain malloc.
#include <atomic>
#include <cstdlib>
#include <new>

#include "cpu_test_helpers.hpp"

namespace {

std::atomic<size_t> g_fail_size{0};   // 0: not armed
std::atomic<long> g_fail_countdown{0};  // the allocation of that size that fails, counting 1..
std::atomic<long> g_failed{0};

// Fails the n-th allocation of exactly `size` bytes made while in scope (any thread).
struct FailNthAllocation {
  FailNthAllocation(size_t size, long n) {
    g_failed = 0;
    g_fail_countdown = n;
    g_fail_size = size;
  }
  ~FailNthAllocation() { g_fail_size = 0; }
};

}  // namespace

void* operator new(size_t n) {
  const size_t armed = g_fail_size.load(std::memory_order_relaxed);
  if (armed != 0 && n == armed && g_fail_countdown.fetch_sub(1) == 1) {
    ++g_failed;
    throw std::bad_alloc();
  }
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
// The other replaceable forms go through the two above, so that every new and delete of this
// binary meet one allocator (an AddressSanitizer build otherwise pairs its own nothrow new with
// the free() above: alloc-dealloc-mismatch at exit, in Catch's registry).
void* operator new(size_t n, const std::nothrow_t&) noexcept {
  try {
    return ::operator new(n);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](size_t n) { return ::operator new(n); }
void* operator new[](size_t n, const std::nothrow_t& t) noexcept { return ::operator new(n, t); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }

namespace {

using fktest::DT;
using fktest::HostTensor;

// x (256, 1024) as 1024 blocks of 1 x 1 (blockdiag) or through two factors of 32 blocks of
// 32 x 32 (monarch), 2 threads: 16 work items of 16 tokens, several per worker. Each worker's
// scratch rows are 16 x 1024 floats (65536 bytes); failing the 3rd such allocation hits the
// second worker's scratch, which the kernels once allocated per chunk, after the first worker
// had already stored rows of out.
TEST_CASE("cpu oom: blockdiag_linear and monarch leave out untouched", "[cpu][monarch][oom]") {
  auto rng = fkcpu::rng_for(1900);
  const int64_t tokens = 256, n = 1024;
  const size_t scratch_bytes = size_t(16 * n) * sizeof(float);
  HostTensor x(DT::F32, {tokens, n}), out(DT::F32, {tokens, n});
  x.fill_normal(rng);
  fk_monarch_params_t prm;
  fk_monarch_params_init(&prm);
  SECTION("blockdiag_linear") {
    HostTensor w(DT::F32, {n, 1, 1});
    w.fill_normal(rng);
    for (long nth : {1, 2, 3, 4}) {
      out.poison();
      fk_status_t st;
      {
        FailNthAllocation fail(scratch_bytes, nth);
        st = fk_blockdiag_linear(fkcpu::cpu_context(2), nullptr, &prm, &x, &w, nullptr, &out);
      }
      INFO("allocation " << nth << ": " << fk_get_last_error_message());
      REQUIRE(g_failed == 1);
      CHECK(st == FK_ERROR_OUT_OF_MEMORY);
      CHECK(out.all_poison());
    }
    // Unarmed, the same call works (and its values are checked elsewhere).
    CHECK(fk_blockdiag_linear(fkcpu::cpu_context(2), nullptr, &prm, &x, &w, nullptr, &out) ==
          FK_SUCCESS);
  }
  SECTION("monarch") {
    HostTensor w1(DT::F32, {32, 32, 32}), w2(DT::F32, {32, 32, 32});
    w1.fill_normal(rng, 1.0 / std::sqrt(32.0));
    w2.fill_normal(rng, 1.0 / std::sqrt(32.0));
    for (long nth : {1, 3, 5, 7}) {
      out.poison();
      fk_status_t st;
      {
        FailNthAllocation fail(scratch_bytes, nth);
        st = fk_monarch(fkcpu::cpu_context(2), nullptr, &prm, &x, &w1, &w2, nullptr, &out);
      }
      INFO("allocation " << nth << ": " << fk_get_last_error_message());
      REQUIRE(g_failed == 1);
      CHECK(st == FK_ERROR_OUT_OF_MEMORY);
      CHECK(out.all_poison());
    }
  }
}

}  // namespace
