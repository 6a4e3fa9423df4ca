// Catch2 v2 main, printing the random seed so a failure can be reproduced. The GPU suite
// exits with 77 (ctest's SKIP_RETURN_CODE) when no CUDA backend is available.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>

#include "test_util.hpp"

int main(int argc, char** argv) {
  std::printf("flashkit tests: FLASHKIT_TEST_SEED=%llu\n",
              static_cast<unsigned long long>(fktest::test_seed()));
#if defined(FLASHKIT_GPU_SUITE)
  fk_context_options_t opts;
  fk_context_options_init(&opts);
  opts.backend = FK_BACKEND_CUDA;
  fk_context_t* ctx = nullptr;
  if (fk_context_create(&opts, &ctx) != FK_SUCCESS) {
    std::printf("SKIP: no CUDA backend (%s)\n", fk_get_last_error_message());
    return 77;
  }
  fk_context_destroy(ctx);
#endif
  return Catch::Session().run(argc, argv);
}
