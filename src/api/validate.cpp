#include "api/validate.h"

#include <cinttypes>
#include <cstdio>
#include <cstring>

namespace flashkit {

fk_status_t check_context(const fk_context_t* ctx) {
  if (!ctx) return set_error(FK_ERROR_NULL_POINTER, "context: NULL handle");
  return FK_SUCCESS;
}

// A DLPack dtype in words for messages: "float64", "int8", "bfloat16", "float8_e4m3fn", ...
struct DtypeWords {
  char text[48];
};
static DtypeWords dtype_words(DLDataType dt) {
  DtypeWords w;
  const unsigned bits = dt.bits, code = dt.code;
  switch (code) {
    case kDLInt: std::snprintf(w.text, sizeof w.text, "int%u", bits); break;
    case kDLUInt: std::snprintf(w.text, sizeof w.text, "uint%u", bits); break;
    case kDLFloat: std::snprintf(w.text, sizeof w.text, "float%u", bits); break;
    case kDLBfloat: std::snprintf(w.text, sizeof w.text, "bfloat%u", bits); break;
    case kDLComplex: std::snprintf(w.text, sizeof w.text, "complex%u", bits); break;
    case kDLOpaqueHandle: std::snprintf(w.text, sizeof w.text, "an opaque handle type"); break;
    default:
      if (code == 6) {  // kDLBool (DLPack >= 0.8)
        std::snprintf(w.text, sizeof w.text, "bool");
      } else if (code == FK_DLPACK_FLOAT8_E4M3FN) {
        std::snprintf(w.text, sizeof w.text, "float8_e4m3fn");
      } else if (code == FK_DLPACK_FLOAT8_E5M2) {
        std::snprintf(w.text, sizeof w.text, "float8_e5m2");
      } else {
        std::snprintf(w.text, sizeof w.text, "DLPack type code %u (%u bits)", code, bits);
      }
  }
  return w;
}

// DLPack's name of a device type, so a message reads "kDLCUDA (2)" rather than a bare number.
// Switches on the integer so that types newer than the installed dlpack.h are named too.
static void device_type_words(int32_t dev, char* buf, size_t n) {
  const char* name = nullptr;
  switch (dev) {
    case 1: name = "kDLCPU"; break;
    case 2: name = "kDLCUDA"; break;
    case 3: name = "kDLCUDAHost"; break;
    case 4: name = "kDLOpenCL"; break;
    case 7: name = "kDLVulkan"; break;
    case 8: name = "kDLMetal"; break;
    case 9: name = "kDLVPI"; break;
    case 10: name = "kDLROCM"; break;
    case 11: name = "kDLROCMHost"; break;
    case 12: name = "kDLExtDev"; break;
    case 13: name = "kDLCUDAManaged"; break;
    case 14: name = "kDLOneAPI"; break;
    case 15: name = "kDLWebGPU"; break;
    case 16: name = "kDLHexagon"; break;
    default: break;
  }
  if (name)
    std::snprintf(buf, n, "%s (%d)", name, static_cast<int>(dev));
  else
    std::snprintf(buf, n, "device type %d", static_cast<int>(dev));
}

static fk_status_t decode_dtype(const char* name, DLDataType dt, Accept accept, DType* out) {
  if (dt.lanes == 0) {
    return set_error(FK_ERROR_DTYPE_MISMATCH, "%s: malformed dtype (lanes 0); flashkit takes lanes 1", name);
  }
  if (dt.lanes != 1) {
    return set_error(FK_ERROR_DTYPE_MISMATCH, "%s: vector dtypes (lanes %u) are not supported",
                     name, static_cast<unsigned>(dt.lanes));
  }
  const bool allow_int32 = accept == Accept::Int32;
  if (accept == Accept::Float32) {
    if (dt.code == kDLFloat && dt.bits == 32) { *out = DType::F32; return FK_SUCCESS; }
    return set_error(FK_ERROR_DTYPE_MISMATCH, "%s: dtype is %s, must be fp32 (float32)", name,
                     dtype_words(dt).text);
  }
  if (!allow_int32) {
    if (dt.code == kDLFloat && dt.bits == 32) { *out = DType::F32; return FK_SUCCESS; }
    if (dt.code == kDLFloat && dt.bits == 16) { *out = DType::F16; return FK_SUCCESS; }
    if (dt.code == kDLBfloat && dt.bits == 16) { *out = DType::BF16; return FK_SUCCESS; }
  }
  if (dt.code == kDLInt && dt.bits == 32 && allow_int32) { *out = DType::I32; return FK_SUCCESS; }
  if (dt.code == FK_DLPACK_FLOAT8_E4M3FN || dt.code == FK_DLPACK_FLOAT8_E5M2) {
    if (dt.bits != 8) {
      return set_error(FK_ERROR_DTYPE_MISMATCH, "%s: fp8 type code %u with %u bits (must be 8)",
                       name, static_cast<unsigned>(dt.code), static_cast<unsigned>(dt.bits));
    }
    if (accept == Accept::FloatOrFp8) {
      *out = dt.code == FK_DLPACK_FLOAT8_E4M3FN ? DType::F8E4M3 : DType::F8E5M2;
      return FK_SUCCESS;
    }
    return set_error(FK_ERROR_NOT_SUPPORTED,
                     "%s: fp8 (%s) is not accepted here; fp8 inputs go to fk_gemm_scaled's a and b "
                     "and to fk_attention_fp8_forward's q, k and v",
                     name, dtype_words(dt).text);
  }
  if (allow_int32) {
    return set_error(FK_ERROR_DTYPE_MISMATCH, "%s: dtype is %s, must be int32", name,
                     dtype_words(dt).text);
  }
  return set_error(FK_ERROR_DTYPE_MISMATCH,
                   accept == Accept::FloatOrFp8
                       ? "%s: dtype is %s, must be fp32, fp16, bf16, float8_e4m3fn (DLPack code "
                         "10) or float8_e5m2 (code 12)"
                       : "%s: dtype is %s, must be fp32, fp16 or bf16",
                   name, dtype_words(dt).text);
}

fk_status_t to_view(const fk_context_t* ctx, const char* name, const DLTensor* t,
                    TensorView* out, Accept accept) {
  if (!t) return set_error(FK_ERROR_NULL_POINTER, "%s: NULL tensor", name);
  if (t->ndim < 0 || t->ndim > kMaxRank) {
    return set_error(FK_ERROR_SHAPE_MISMATCH, "%s: rank %d is not supported (at most %d)", name,
                     t->ndim, kMaxRank);
  }
  if (t->ndim > 0 && !t->shape) return set_error(FK_ERROR_NULL_POINTER, "%s: shape is NULL", name);
  TensorView v;
  v.rank = t->ndim;
  // The product of the non-zero extents must fit in 64 bits too: an empty tensor such as
  // (2^32, 0, 2^32) would otherwise let the entry points' products of extents (nblocks * p,
  // batch * seqlen, ...) wrap around to values that match other arguments.
  int64_t numel = 1, nonzero = 1;
  for (int i = 0; i < v.rank; ++i) {
    if (t->shape[i] < 0) {
      return set_error(FK_ERROR_SHAPE_MISMATCH, "%s: dimension %d has negative extent %" PRId64,
                       name, i, static_cast<int64_t>(t->shape[i]));
    }
    v.shape[i] = t->shape[i];
    if (v.shape[i] != 0 && __builtin_mul_overflow(nonzero, v.shape[i], &nonzero)) {
      return set_error(FK_ERROR_SHAPE_MISMATCH,
                       "%s: extents multiply past 2^63 (element count overflows 64 bits)", name);
    }
    numel *= v.shape[i];  // cannot overflow: numel is 0 or equal to nonzero
  }
  // Data before dtype: an empty (zero-initialised) DLTensor is reported as missing data.
  if (!t->data && numel > 0) return set_error(FK_ERROR_NULL_POINTER, "%s: data is NULL", name);
  FK_RETURN_IF_ERROR(decode_dtype(name, t->dtype, accept, &v.dtype));
  // Compact row-major strides when the producer gives none (DLPack convention). The stride of
  // a dimension of extent 0 or 1, or of any dimension of an empty tensor, addresses nothing:
  // producers leave arbitrary values there (NumPy, PyTorch), so it is normalised, not checked.
  int64_t compact = 1;
  for (int i = v.rank - 1; i >= 0; --i) {
    if (t->strides && (v.shape[i] <= 1 || numel == 0)) {
      v.stride[i] = compact;
    } else if (t->strides) {
      if (t->strides[i] < 0) {
        return set_error(FK_ERROR_BAD_STRIDES,
                         "%s: dimension %d has negative stride %" PRId64
                         " (negative strides are not supported)",
                         name, i, static_cast<int64_t>(t->strides[i]));
      }
      v.stride[i] = t->strides[i];
    } else {
      v.stride[i] = compact;
    }
    compact *= v.shape[i] > 0 ? v.shape[i] : 1;
  }
  // The addressed span must fit comfortably in 64 bits (indexing is int64 everywhere).
  int64_t total = 0;  // bytes from the first to one past the last addressed element
  if (numel > 0) {
    int64_t span = 0, term = 0;
    bool overflow = false;
    for (int i = 0; i < v.rank && !overflow; ++i) {
      overflow |= __builtin_mul_overflow(v.shape[i] - 1, v.stride[i], &term);
      overflow |= __builtin_add_overflow(span, term, &span);
    }
    // span + 1 can itself overflow (span == INT64_MAX), which would wrap a 1-byte type's total.
    overflow |= __builtin_add_overflow(span, int64_t(1), &span);
    overflow |= __builtin_mul_overflow(span, static_cast<int64_t>(dtype_bytes(v.dtype)), &total);
    if (overflow || total > (int64_t(1) << 62)) {
      return set_error(FK_ERROR_SHAPE_MISMATCH,
                       "%s: extents and strides address more than 2^62 bytes", name);
    }
  }
  // data + byte_offset, and the end of what the view addresses, must be real addresses: no
  // wrap around the address space, and not NULL when there is something to address (a wrap
  // to exactly 0 would otherwise pass the NULL check above and be written through).
  char* base = static_cast<char*>(t->data);
  if (base) {
    uintptr_t addr = 0, end = 0;
    if (__builtin_add_overflow(reinterpret_cast<uintptr_t>(base),
                               static_cast<uintptr_t>(t->byte_offset), &addr) ||
        (numel > 0 && addr == 0)) {
      return set_error(FK_ERROR_NULL_POINTER,
                       "%s: data %p + byte_offset %llu is not an address (it wraps around the "
                       "address space)",
                       name, t->data, static_cast<unsigned long long>(t->byte_offset));
    }
    if (numel > 0) {
      const uintptr_t nbytes = static_cast<uintptr_t>(total);
      if (__builtin_add_overflow(addr, nbytes, &end)) {
        return set_error(FK_ERROR_NULL_POINTER,
                         "%s: data + byte_offset %p plus the %llu bytes the view addresses wraps "
                         "around the address space",
                         name, reinterpret_cast<void*>(addr),
                         static_cast<unsigned long long>(nbytes));
      }
    }
    base = reinterpret_cast<char*>(addr);
  }
  // No allocation is 2^62 bytes long: an offset past that is not an offset into one (it would
  // otherwise pass the wrap test above on a low data pointer). After that test, which names
  // the wrap when there is one.
  if (t->byte_offset > (uint64_t(1) << 62)) {
    return set_error(FK_ERROR_INVALID_ARGUMENT,
                     "%s: byte_offset %llu is larger than 2^62 bytes, so it does not point "
                     "into an allocation",
                     name, static_cast<unsigned long long>(t->byte_offset));
  }
  if (base && reinterpret_cast<uintptr_t>(base) % dtype_bytes(v.dtype) != 0) {
    return set_error(FK_ERROR_MISALIGNED,
                     "%s: data + byte_offset (%p) is not aligned to its element size (%d bytes)",
                     name, static_cast<void*>(base), dtype_bytes(v.dtype));
  }
  v.data = base;
  // Devices.
  // The raw 32-bit code, not an enum load: a caller (a binding, another framework) may put any
  // number there, and a value outside DLDeviceType's enumerators is undefined behaviour to
  // read as the enum in C++ (UBSan's -fsanitize=enum flags it).
  static_assert(sizeof(DLDeviceType) == sizeof(int32_t), "DLPack's device type is 32 bits");
  int32_t dev;
  std::memcpy(&dev, &t->device.device_type, sizeof dev);
  if (ctx->backend == FK_BACKEND_CPU) {
    if (dev != kDLCPU && dev != kDLCUDAHost) {
      char where[48];
      device_type_words(dev, where, sizeof where);
      return set_error(FK_ERROR_WRONG_DEVICE,
                       "%s: tensor is on %s but the context is on the CPU backend "
                       "(needs kDLCPU or kDLCUDAHost memory)",
                       name, where);
    }
    v.device = Device::Host;
  } else {
    if (dev != kDLCUDA && dev != kDLCUDAManaged) {
      char where[48];
      device_type_words(dev, where, sizeof where);
      return set_error(FK_ERROR_WRONG_DEVICE,
                       "%s: tensor is on %s but the context is on CUDA device %d "
                       "(needs kDLCUDA or kDLCUDAManaged memory)",
                       name, where, ctx->device_ordinal);
    }
    if (t->device.device_id != ctx->device_ordinal) {
      return set_error(FK_ERROR_WRONG_DEVICE,
                       "%s: tensor is on CUDA device %d but the context is on CUDA device %d",
                       name, t->device.device_id, ctx->device_ordinal);
    }
    v.device = Device::Cuda;
    v.device_id = t->device.device_id;
  }
  *out = v;
  return FK_SUCCESS;
}

fk_status_t to_opt_view(const fk_context_t* ctx, const char* name, const DLTensor* t,
                        OptTensor* out, Accept accept) {
  out->valid = false;
  if (!t) return FK_SUCCESS;
  FK_RETURN_IF_ERROR(to_view(ctx, name, t, &out->t, accept));
  out->valid = true;
  return FK_SUCCESS;
}

namespace {

// [first byte, one past the last byte] a view addresses; empty for an empty view.
struct ByteRange {
  uintptr_t lo = 0, hi = 0;
};

ByteRange byte_range(const TensorView& t) {
  ByteRange r;
  if (t.numel() == 0 || !t.data) return r;
  int64_t span = 0;
  for (int i = 0; i < t.rank; ++i) span += (t.shape[i] - 1) * t.stride[i];
  r.lo = reinterpret_cast<uintptr_t>(t.data);
  r.hi = r.lo + static_cast<uintptr_t>((span + 1) * dtype_bytes(t.dtype));
  return r;
}

bool same_view(const TensorView& a, const TensorView& b) {
  if (a.data != b.data || a.dtype != b.dtype || a.rank != b.rank) return false;
  for (int i = 0; i < a.rank; ++i)
    if (a.shape[i] != b.shape[i] || (a.shape[i] > 1 && a.stride[i] != b.stride[i])) return false;
  return true;
}

}  // namespace

fk_status_t expect_no_self_overlap(const char* name, const TensorView& t) {
  if (t.numel() <= 1) return FK_SUCCESS;
  int dims[kMaxRank];
  int n = 0;
  for (int i = 0; i < t.rank; ++i)
    if (t.shape[i] > 1) dims[n++] = i;
  // Insertion sort by stride (n <= 4).
  for (int i = 1; i < n; ++i)
    for (int j = i; j > 0 && t.stride[dims[j]] < t.stride[dims[j - 1]]; --j) {
      int tmp = dims[j];
      dims[j] = dims[j - 1];
      dims[j - 1] = tmp;
    }
  int64_t covered = 0;  // largest offset reachable with the smaller-stride dimensions
  for (int k = 0; k < n; ++k) {
    const int d = dims[k];
    if (t.stride[d] <= covered) {
      return set_error(FK_ERROR_BAD_STRIDES,
                       "%s: an output must not write two elements to one address, but "
                       "dimension %d (extent %" PRId64 ", stride %" PRId64
                       ") reaches addresses the dimensions with smaller or equal strides "
                       "already cover",
                       name, d, t.shape[d], t.stride[d]);
    }
    covered += (t.shape[d] - 1) * t.stride[d];
  }
  return FK_SUCCESS;
}

fk_status_t expect_disjoint(const char* out_name, const TensorView& out,
                            std::initializer_list<NamedView> inputs) {
  const ByteRange o = byte_range(out);
  if (o.lo == o.hi) return FK_SUCCESS;
  for (const NamedView& in : inputs) {
    if (!in.view) continue;
    const ByteRange r = byte_range(*in.view);
    if (r.lo == r.hi || r.hi <= o.lo || o.hi <= r.lo) continue;
    if (in.same_ok && same_view(out, *in.view)) continue;
    return set_error(FK_ERROR_INVALID_ARGUMENT,
                     "%s: overlaps %s in memory (outputs must not share memory with inputs or with each "
                     "other%s)",
                     out_name, in.name, in.same_ok ? " unless they are the exact same view" : "");
  }
  return FK_SUCCESS;
}

fk_status_t expect_workspace_disjoint(const fk_launch_t& launch,
                                      std::initializer_list<NamedView> tensors) {
  if (!launch.workspace || launch.workspace_bytes == 0) return FK_SUCCESS;
  const uintptr_t lo = reinterpret_cast<uintptr_t>(launch.workspace);
  const uintptr_t hi = lo + static_cast<uintptr_t>(launch.workspace_bytes);
  for (const NamedView& t : tensors) {
    if (!t.view) continue;
    const ByteRange r = byte_range(*t.view);
    if (r.lo == r.hi || r.hi <= lo || hi <= r.lo) continue;
    return set_error(FK_ERROR_INVALID_ARGUMENT,
                     "launch.workspace: overlaps %s in memory (the call's scratch would overwrite "
                     "it)",
                     t.name);
  }
  return FK_SUCCESS;
}

fk_status_t expect_rank(const char* name, const TensorView& t, int rank, const char* dims) {
  if (t.rank != rank) {
    return set_error(FK_ERROR_SHAPE_MISMATCH, "%s: expected rank %d %s, got rank %d", name, rank,
                     dims, t.rank);
  }
  return FK_SUCCESS;
}

fk_status_t expect_last_contiguous(const char* name, const TensorView& t, const char* dim) {
  if (t.rank == 0) return FK_SUCCESS;
  const int last = t.rank - 1;
  if (t.shape[last] > 1 && t.stride[last] != 1) {
    return set_error(FK_ERROR_BAD_STRIDES,
                     "%s: the last dimension (%s) must be contiguous (stride 1), got stride %" PRId64,
                     name, dim, t.stride[last]);
  }
  return FK_SUCCESS;
}

fk_status_t expect_compact(const char* name, const TensorView& t) {
  if (t.numel() == 0) return FK_SUCCESS;  // no element to address: any strides are compact
  int64_t expected = 1;
  for (int i = t.rank - 1; i >= 0; --i) {
    if (t.shape[i] > 1 && t.stride[i] != expected) {
      return set_error(FK_ERROR_BAD_STRIDES,
                       "%s: must be compact row-major; dimension %d has stride %" PRId64
                       ", expected %" PRId64,
                       name, i, t.stride[i], expected);
    }
    expected *= t.shape[i];
  }
  return FK_SUCCESS;
}

fk_status_t expect_float(const char* name, const TensorView& t) {
  if (t.dtype == DType::I32) {
    return set_error(FK_ERROR_DTYPE_MISMATCH, "%s: dtype must be fp32, fp16 or bf16, got int32",
                     name);
  }
  return FK_SUCCESS;
}

fk_status_t expect_same_dtype(const char* name, const TensorView& t, const char* other_name,
                              const TensorView& other) {
  if (t.dtype != other.dtype) {
    return set_error(FK_ERROR_DTYPE_MISMATCH, "%s: dtype %s differs from %s's dtype %s", name,
                     dtype_name(t.dtype), other_name, dtype_name(other.dtype));
  }
  return FK_SUCCESS;
}

fk_status_t expect_dim(const char* name, const TensorView& t, int dim, const char* dim_name,
                       int64_t expected, const char* expected_from) {
  if (t.shape[dim] != expected) {
    return set_error(FK_ERROR_SHAPE_MISMATCH, "%s: %s is %" PRId64 " but %s gives %" PRId64, name,
                     dim_name, t.shape[dim], expected_from, expected);
  }
  return FK_SUCCESS;
}

fk_status_t expect_shape(const char* name, const TensorView& t, std::initializer_list<DimRule> dims,
                         const char* expected_from) {
  int dim = 0;
  for (const DimRule& d : dims) {
    if (dim < t.rank && t.shape[dim] != d.expected) {
      char layout[160] = "(", want[160] = "(", got[160] = "(";
      int i = 0;
      for (const DimRule& e : dims) {
        const char* sep = i + 1 < static_cast<int>(dims.size()) ? ", " : ")";
        std::snprintf(layout + std::strlen(layout), sizeof layout - std::strlen(layout), "%s%s", e.name, sep);
        std::snprintf(want + std::strlen(want), sizeof want - std::strlen(want), "%" PRId64 "%s", e.expected, sep);
        std::snprintf(got + std::strlen(got), sizeof got - std::strlen(got), "%" PRId64 "%s",
                      i < t.rank ? t.shape[i] : int64_t(0), sep);
        ++i;
      }
      return set_error(FK_ERROR_SHAPE_MISMATCH,
                       "%s: %s is %" PRId64 " but %s gives %" PRId64 "; expected %s = %s, got %s", name,
                       d.name, t.shape[dim], expected_from, d.expected, layout, want, got);
    }
    ++dim;
  }
  return FK_SUCCESS;
}

fk_status_t load_launch(const fk_launch_t* user, fk_launch_t* out) {
  fk_launch_init(out);
  FK_RETURN_IF_ERROR(load_struct("launch", user, out));
  if (out->flags != 0) {
    return set_error(FK_ERROR_INVALID_ARGUMENT, "launch: flags must be 0, got %u",
                     static_cast<unsigned>(out->flags));
  }
  if (!out->workspace && out->workspace_bytes != 0) {
    return set_error(FK_ERROR_NULL_POINTER,
                     "launch: workspace is NULL but workspace_bytes is %llu",
                     static_cast<unsigned long long>(out->workspace_bytes));
  }
  // The range [workspace, workspace + workspace_bytes) must not wrap: the overlap checks
  // (expect_workspace_disjoint) compare its ends.
  uintptr_t end = 0;
  if (out->workspace &&
      __builtin_add_overflow(reinterpret_cast<uintptr_t>(out->workspace),
                             static_cast<uintptr_t>(out->workspace_bytes), &end)) {
    return set_error(FK_ERROR_INVALID_ARGUMENT,
                     "launch: workspace %p + workspace_bytes %llu wraps around the address space",
                     out->workspace, static_cast<unsigned long long>(out->workspace_bytes));
  }
  return FK_SUCCESS;
}

void log_variant(const char* op, const char* variant) {
  log_message(FK_LOG_DEBUG, "%s: running %s", op, variant);
}

}  // namespace flashkit

extern "C" fk_status_t fk_launch_init(fk_launch_t* launch) {
  if (!launch) return flashkit::set_error(FK_ERROR_NULL_POINTER, "launch: NULL");
  std::memset(launch, 0, sizeof *launch);
  launch->struct_size = sizeof *launch;
  return FK_SUCCESS;
}
