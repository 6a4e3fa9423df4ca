//! Tensor views: borrowed DLPack descriptions of memory the caller owns.
//!
//! flashkit never takes ownership of tensor memory and never keeps a pointer after a call
//! returns. A [`Tensor`] is a read-only view (inputs), a [`TensorMut`] a writable one (outputs);
//! both hold the borrow of their slice for their lifetime `'a`, so the borrow checker keeps an
//! output from aliasing an input.
//!
//! Shapes and strides are in elements, strides `None` meaning compact row-major, as in DLPack.
//! Views over slices check, when built, that every element the shape and strides address lies
//! inside the slice; everything else (ranks, dtypes, contiguity the operation needs) is checked
//! by the C library, which reports it as an [`Error`](crate::Error).

use std::marker::PhantomData;
use std::os::raw::c_void;

use flashkit_sys as sys;

use crate::error::{Error, Result, Status};

/// Element type of a tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    /// IEEE binary32 (`{kDLFloat, 32, 1}`).
    F32,
    /// IEEE binary16 (`{kDLFloat, 16, 1}`), stored as `u16` bit patterns.
    F16,
    /// bfloat16 (`{kDLBfloat, 16, 1}`), stored as `u16` bit patterns.
    BF16,
    /// 32-bit signed integer (`{kDLInt, 32, 1}`): `cu_seqlens` index tensors.
    I32,
    /// OCP float8 e4m3fn (DLPack 1.1 code 10), stored as `u8` bit patterns: only
    /// [`crate::gemm_scaled`]'s `a` and `b` and [`crate::attention_fp8`]'s `q`, `k`, `v`
    /// accept it.
    F8E4M3FN,
    /// OCP float8 e5m2 (DLPack 1.1 code 12), stored as `u8` bit patterns.
    F8E5M2,
}

impl DType {
    /// Size of one element in bytes.
    pub fn size_bytes(self) -> usize {
        match self {
            DType::F32 | DType::I32 => 4,
            DType::F16 | DType::BF16 => 2,
            DType::F8E4M3FN | DType::F8E5M2 => 1,
        }
    }

    /// The DLPack data type.
    pub fn to_dlpack(self) -> sys::DLDataType {
        let (code, bits) = match self {
            DType::F32 => (sys::kDLFloat, 32),
            DType::F16 => (sys::kDLFloat, 16),
            DType::BF16 => (sys::kDLBfloat, 16),
            DType::I32 => (sys::kDLInt, 32),
            DType::F8E4M3FN => (sys::FK_DLPACK_FLOAT8_E4M3FN, 8),
            DType::F8E5M2 => (sys::FK_DLPACK_FLOAT8_E5M2, 8),
        };
        sys::DLDataType { code: code as u8, bits, lanes: 1 }
    }

    /// The dtype of a DLPack data type, if it is one of the above.
    pub fn from_dlpack(t: sys::DLDataType) -> Option<DType> {
        if t.lanes != 1 {
            return None;
        }
        match (u32::from(t.code), t.bits) {
            (sys::kDLFloat, 32) => Some(DType::F32),
            (sys::kDLFloat, 16) => Some(DType::F16),
            (sys::kDLBfloat, 16) => Some(DType::BF16),
            (sys::kDLInt, 32) => Some(DType::I32),
            (sys::FK_DLPACK_FLOAT8_E4M3FN, 8) => Some(DType::F8E4M3FN),
            (sys::FK_DLPACK_FLOAT8_E5M2, 8) => Some(DType::F8E5M2),
            _ => None,
        }
    }
}

/// Where a tensor's memory lives. Views over Rust slices are always [`Device::Cpu`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Device {
    /// Ordinary host memory (`kDLCPU`).
    Cpu,
    /// Page-locked host memory from `cudaMallocHost` (`kDLCUDAHost`).
    CudaHost,
    /// CUDA device memory on the given ordinal (`kDLCUDA`).
    Cuda(i32),
    /// CUDA managed memory, attached to the given ordinal (`kDLCUDAManaged`).
    CudaManaged(i32),
}

impl Device {
    fn to_dlpack(self) -> sys::DLDevice {
        let (device_type, device_id) = match self {
            Device::Cpu => (sys::kDLCPU, 0),
            Device::CudaHost => (sys::kDLCUDAHost, 0),
            Device::Cuda(id) => (sys::kDLCUDA, id),
            Device::CudaManaged(id) => (sys::kDLCUDAManaged, id),
        };
        sys::DLDevice { device_type, device_id }
    }
}

/// Rust element types a view can be built over directly. `f16`/`bf16` data goes through
/// [`Tensor::from_bits`] (a `u16` slice plus a dtype tag).
///
/// # Safety
/// `DTYPE` must describe the type's in-memory representation exactly.
pub unsafe trait Element: Copy + 'static {
    /// The dtype of this element type.
    const DTYPE: DType;
}
// SAFETY: f32 is IEEE binary32 and i32 a 32-bit two's-complement integer, as DLPack says.
unsafe impl Element for f32 {
    const DTYPE: DType = DType::F32;
}
// SAFETY: see above.
unsafe impl Element for i32 {
    const DTYPE: DType = DType::I32;
}

/// What a view describes, without the borrow.
#[derive(Clone, Debug)]
struct Parts {
    data: *mut c_void,
    device: Device,
    dtype: DType,
    shape: Vec<i64>,
    strides: Option<Vec<i64>>,
}

impl Parts {
    /// Checks the shape (and strides) against a slice of `len` elements.
    fn checked(
        data: *mut c_void,
        len: usize,
        dtype: DType,
        shape: &[i64],
        strides: Option<&[i64]>,
    ) -> Result<Parts> {
        let needed = extent(shape, strides)?;
        if needed > len as u128 {
            return Err(Error::local(
                Status::ShapeMismatch,
                format!(
                    "view with shape {shape:?} and strides {} addresses {needed} elements but \
                     the slice holds {len}",
                    strides.map_or("compact".to_string(), |s| format!("{s:?}"))
                ),
            ));
        }
        Ok(Parts {
            data,
            device: Device::Cpu,
            dtype,
            shape: shape.to_vec(),
            strides: strides.map(<[i64]>::to_vec),
        })
    }

    fn to_dlpack(&self) -> sys::DLTensor {
        sys::DLTensor {
            data: self.data,
            device: self.device.to_dlpack(),
            ndim: self.shape.len() as i32,
            dtype: self.dtype.to_dlpack(),
            // The C library only reads shape and strides (the DLTensor is `const`); the
            // pointers stay valid while the view, which owns them, is borrowed by the call.
            shape: self.shape.as_ptr() as *mut i64,
            strides: self.strides.as_ref().map_or(std::ptr::null_mut(), |s| s.as_ptr() as *mut i64),
            byte_offset: 0,
        }
    }
}

/// Number of elements from the first to one past the last element a shape/strides pair
/// addresses (0 when any extent is 0). Rejects what could reach outside `[0, that)`: negative
/// extents, negative strides of dimensions that step (extent > 1, in a view that is not
/// empty), a strides list of the wrong length, arithmetic overflow.
fn extent(shape: &[i64], strides: Option<&[i64]>) -> Result<u128> {
    let bad = |status: Status, msg: String| Err(Error::local(status, msg));
    if shape.len() > i32::MAX as usize {
        return bad(Status::ShapeMismatch, format!("rank {} is too large", shape.len()));
    }
    if let Some(&d) = shape.iter().find(|&&d| d < 0) {
        return bad(Status::ShapeMismatch, format!("shape {shape:?} has a negative extent {d}"));
    }
    // Strides are checked before the empty-view shortcut: the C library reads `ndim` strides
    // whatever the extents, so a shorter list would be read past its end.
    if let Some(strides) = strides {
        if strides.len() != shape.len() {
            return bad(
                Status::ShapeMismatch,
                format!("strides {strides:?} do not match the rank of shape {shape:?}"),
            );
        }
        // A dimension of extent 1 never steps (and an empty view addresses nothing): its stride
        // is not used, as in the C library, so any value passes there.
        let empty = shape.contains(&0);
        if let Some((_, &s)) = shape.iter().zip(strides).find(|&(&d, &s)| s < 0 && d > 1 && !empty)
        {
            return bad(
                Status::BadStrides,
                format!("strides {strides:?} have a negative stride {s}"),
            );
        }
    }
    if shape.contains(&0) {
        return Ok(0);
    }
    match strides {
        None => {
            let mut n: u128 = 1;
            for &d in shape {
                n = n.checked_mul(d as u128).ok_or_else(|| {
                    Error::local(Status::ShapeMismatch, format!("shape {shape:?} overflows"))
                })?;
            }
            Ok(n)
        }
        Some(strides) => {
            // Largest offset = sum (extent - 1) * stride; each i64 product fits in u128 but
            // the sum of several may not, so it is checked (a wrapped sum would let a short
            // slice pass for a huge view).
            let mut last: u128 = 0;
            for (&d, &s) in shape.iter().zip(strides) {
                if d == 1 {
                    continue; // its stride is unused (and may be negative)
                }
                last = last.checked_add((d as u128 - 1) * s as u128).ok_or_else(|| {
                    Error::local(
                        Status::ShapeMismatch,
                        format!("shape {shape:?} with strides {strides:?} overflows"),
                    )
                })?;
            }
            Ok(last + 1)
        }
    }
}

/// A read-only tensor view (an input).
///
/// Build one over a slice with [`Tensor::new`] (f32, i32), [`Tensor::from_bits`] (f16/bf16 bit
/// patterns in `u16`), or over raw (e.g. CUDA device) memory with the unsafe
/// [`Tensor::from_raw`].
#[derive(Clone, Debug)]
pub struct Tensor<'a> {
    parts: Parts,
    _borrow: PhantomData<&'a [u8]>,
}

/// A writable tensor view (an output). Built like [`Tensor`] but over `&mut` slices; operations
/// take it as `&mut TensorMut`. [`TensorMut::as_tensor`] re-borrows it as an input.
#[derive(Debug)]
pub struct TensorMut<'a> {
    parts: Parts,
    _borrow: PhantomData<&'a mut [u8]>,
}

// SAFETY: a Tensor is a shared borrow of memory plus owned metadata, like `&'a [T]`, which is
// Send and Sync for the element types allowed here (f32, i32, u16). For raw views the caller of
// the unsafe constructor vouched that the memory may be read by the library for `'a`, from
// whichever thread makes the call.
unsafe impl Send for Tensor<'_> {}
// SAFETY: see above; `&Tensor` only gives access to metadata and to read-only calls.
unsafe impl Sync for Tensor<'_> {}
// SAFETY: a TensorMut is an exclusive borrow, like `&'a mut [T]`, which is Send for these
// element types.
unsafe impl Send for TensorMut<'_> {}
// SAFETY: writes need `&mut TensorMut`; through `&TensorMut` only metadata can be read and a
// read-only `Tensor` re-borrowed, as with `&&mut [T]`.
unsafe impl Sync for TensorMut<'_> {}

macro_rules! view_common {
    () => {
        /// Extents, outermost first.
        pub fn shape(&self) -> &[i64] {
            &self.parts.shape
        }

        /// Strides in elements, or `None` for compact row-major.
        pub fn strides(&self) -> Option<&[i64]> {
            self.parts.strides.as_deref()
        }

        /// Element type.
        pub fn dtype(&self) -> DType {
            self.parts.dtype
        }

        /// Where the memory lives.
        pub fn device(&self) -> Device {
            self.parts.device
        }

        /// Number of elements (product of the extents), saturating at `i64::MAX` (a strided
        /// view with zero strides may have more elements than `i64` counts); 0 whenever an
        /// extent is 0, in whatever order the extents come.
        pub fn numel(&self) -> i64 {
            if self.parts.shape.contains(&0) {
                return 0;
            }
            self.parts.shape.iter().try_fold(1i64, |n, &d| n.checked_mul(d)).unwrap_or(i64::MAX)
        }

        /// The DLPack description of this view. Its `shape`/`strides` pointers point into the
        /// view: the `DLTensor` is valid only while the view is alive and unmoved.
        pub fn as_dlpack(&self) -> sys::DLTensor {
            self.parts.to_dlpack()
        }
    };
}

/// The one check a raw view can make: the library reads `ndim` strides.
fn check_raw_strides(shape: &[i64], strides: Option<&[i64]>) {
    if let Some(strides) = strides {
        assert_eq!(
            strides.len(),
            shape.len(),
            "flashkit: strides {strides:?} do not match the rank of shape {shape:?}"
        );
    }
}

/// `dtype` if it is one of the fp8 types `u8` bit patterns hold, else the error.
fn fp8_dtype(dtype: DType) -> Result<DType> {
    match dtype {
        DType::F8E4M3FN | DType::F8E5M2 => Ok(dtype),
        other => Err(Error::local(
            Status::DtypeMismatch,
            format!("u8 bit patterns hold F8E4M3FN or F8E5M2, not {other:?}"),
        )),
    }
}

fn bits_dtype(dtype: DType) -> Result<DType> {
    match dtype {
        DType::F16 | DType::BF16 => Ok(dtype),
        other => Err(Error::local(
            Status::DtypeMismatch,
            format!("u16 bit patterns hold f16 or bf16, not {other:?}"),
        )),
    }
}

impl<'a> Tensor<'a> {
    /// A compact row-major view of `data` with the given `shape`.
    ///
    /// # Errors
    /// [`Status::ShapeMismatch`] if a extent is negative or the shape needs more elements than
    /// `data` holds (a longer slice is fine: the view covers its start).
    pub fn new<T: Element>(data: &'a [T], shape: &[i64]) -> Result<Self> {
        Self::build(data.as_ptr() as *mut c_void, data.len(), T::DTYPE, shape, None)
    }

    /// A strided view of `data`: element `(i0, i1, ...)` is `data[i0 * strides[0] + ...]`.
    ///
    /// # Errors
    /// As [`Tensor::new`]; [`Status::BadStrides`] for a negative stride of a dimension that steps.
    pub fn with_strides<T: Element>(data: &'a [T], shape: &[i64], strides: &[i64]) -> Result<Self> {
        Self::build(data.as_ptr() as *mut c_void, data.len(), T::DTYPE, shape, Some(strides))
    }

    /// A compact view of f16 or bf16 values given as their `u16` bit patterns.
    ///
    /// # Errors
    /// [`Status::DtypeMismatch`] unless `dtype` is [`DType::F16`] or [`DType::BF16`]; otherwise
    /// as [`Tensor::new`].
    pub fn from_bits(data: &'a [u16], dtype: DType, shape: &[i64]) -> Result<Self> {
        Self::build(data.as_ptr() as *mut c_void, data.len(), bits_dtype(dtype)?, shape, None)
    }

    /// A strided view of f16 or bf16 bit patterns; see [`Tensor::from_bits`].
    pub fn from_bits_with_strides(
        data: &'a [u16],
        dtype: DType,
        shape: &[i64],
        strides: &[i64],
    ) -> Result<Self> {
        let dtype = bits_dtype(dtype)?;
        Self::build(data.as_ptr() as *mut c_void, data.len(), dtype, shape, Some(strides))
    }

    /// A compact view of fp8 values given as their `u8` bit patterns (`dtype`
    /// [`DType::F8E4M3FN`] or [`DType::F8E5M2`]).
    ///
    /// # Errors
    /// [`Status::DtypeMismatch`] for any other dtype; otherwise as [`Tensor::new`].
    pub fn from_fp8_bits(data: &'a [u8], dtype: DType, shape: &[i64]) -> Result<Self> {
        let dtype = fp8_dtype(dtype)?;
        Self::build(data.as_ptr() as *mut c_void, data.len(), dtype, shape, None)
    }

    /// A strided view of fp8 bit patterns (strides in elements, i.e. bytes), e.g. a slice of a
    /// larger fp8 matrix or a broadcast (stride 0) per-head K; checked against `data` like
    /// [`Tensor::with_strides`].
    ///
    /// # Errors
    /// [`Status::DtypeMismatch`] for a dtype other than [`DType::F8E4M3FN`] /
    /// [`DType::F8E5M2`]; otherwise as [`Tensor::with_strides`].
    pub fn from_fp8_bits_with_strides(
        data: &'a [u8],
        dtype: DType,
        shape: &[i64],
        strides: &[i64],
    ) -> Result<Self> {
        let dtype = fp8_dtype(dtype)?;
        Self::build(data.as_ptr() as *mut c_void, data.len(), dtype, shape, Some(strides))
    }

    /// A view of memory this crate cannot see: CUDA device or managed memory, pinned host
    /// memory, or any host pointer.
    ///
    /// # Panics
    /// If `strides` is given with a length other than `shape`'s (the library reads one stride
    /// per dimension).
    ///
    /// # Safety
    /// For `'a`, `data` must point to memory on `device` that holds every element the shape and
    /// strides address, aligned to the element size, not written by anyone while the library
    /// reads it. On the CUDA backend the library reads it asynchronously, on the launch's
    /// stream: the memory must stay valid until that work has finished.
    pub unsafe fn from_raw(
        data: *const c_void,
        device: Device,
        dtype: DType,
        shape: &[i64],
        strides: Option<&[i64]>,
    ) -> Self {
        check_raw_strides(shape, strides);
        Tensor {
            parts: Parts {
                data: data as *mut c_void,
                device,
                dtype,
                shape: shape.to_vec(),
                strides: strides.map(<[i64]>::to_vec),
            },
            _borrow: PhantomData,
        }
    }

    fn build(
        data: *mut c_void,
        len: usize,
        dtype: DType,
        shape: &[i64],
        strides: Option<&[i64]>,
    ) -> Result<Self> {
        Ok(Tensor {
            parts: Parts::checked(data, len, dtype, shape, strides)?,
            _borrow: PhantomData,
        })
    }

    view_common!();
}

impl<'a> TensorMut<'a> {
    /// A compact row-major writable view of `data`; see [`Tensor::new`].
    pub fn new<T: Element>(data: &'a mut [T], shape: &[i64]) -> Result<Self> {
        Self::build(data.as_mut_ptr() as *mut c_void, data.len(), T::DTYPE, shape, None)
    }

    /// A strided writable view; see [`Tensor::with_strides`].
    pub fn with_strides<T: Element>(
        data: &'a mut [T],
        shape: &[i64],
        strides: &[i64],
    ) -> Result<Self> {
        Self::build(data.as_mut_ptr() as *mut c_void, data.len(), T::DTYPE, shape, Some(strides))
    }

    /// A compact writable view of f16/bf16 bit patterns; see [`Tensor::from_bits`].
    pub fn from_bits(data: &'a mut [u16], dtype: DType, shape: &[i64]) -> Result<Self> {
        let dtype = bits_dtype(dtype)?;
        Self::build(data.as_mut_ptr() as *mut c_void, data.len(), dtype, shape, None)
    }

    /// A strided writable view of f16/bf16 bit patterns.
    pub fn from_bits_with_strides(
        data: &'a mut [u16],
        dtype: DType,
        shape: &[i64],
        strides: &[i64],
    ) -> Result<Self> {
        let dtype = bits_dtype(dtype)?;
        Self::build(data.as_mut_ptr() as *mut c_void, data.len(), dtype, shape, Some(strides))
    }

    /// A writable view of memory this crate cannot see; see [`Tensor::from_raw`].
    ///
    /// # Panics
    /// As [`Tensor::from_raw`].
    ///
    /// # Safety
    /// As [`Tensor::from_raw`], and for `'a` nothing else may read or write the memory while
    /// the library writes it (on CUDA: until the launch's stream has finished the work).
    pub unsafe fn from_raw(
        data: *mut c_void,
        device: Device,
        dtype: DType,
        shape: &[i64],
        strides: Option<&[i64]>,
    ) -> Self {
        check_raw_strides(shape, strides);
        TensorMut {
            parts: Parts {
                data,
                device,
                dtype,
                shape: shape.to_vec(),
                strides: strides.map(<[i64]>::to_vec),
            },
            _borrow: PhantomData,
        }
    }

    /// Re-borrows this output as an input view (to chain operations).
    pub fn as_tensor(&self) -> Tensor<'_> {
        Tensor { parts: self.parts.clone(), _borrow: PhantomData }
    }

    fn build(
        data: *mut c_void,
        len: usize,
        dtype: DType,
        shape: &[i64],
        strides: Option<&[i64]>,
    ) -> Result<Self> {
        Ok(TensorMut {
            parts: Parts::checked(data, len, dtype, shape, strides)?,
            _borrow: PhantomData,
        })
    }

    view_common!();
}

/// Pointer to an optional DLTensor (NULL for `None`).
pub(crate) fn opt_ptr(t: &Option<sys::DLTensor>) -> *const sys::DLTensor {
    t.as_ref().map_or(std::ptr::null(), |t| t as *const sys::DLTensor)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn views_check_their_slice() {
        let data = [0f32; 12];
        assert!(Tensor::new(&data, &[3, 4]).is_ok());
        assert!(Tensor::new(&data, &[2, 4]).is_ok());
        assert!(Tensor::new(&data, &[0, 100]).is_ok());
        let e = Tensor::new(&data, &[4, 4]).unwrap_err();
        assert_eq!(e.status(), Status::ShapeMismatch);
        assert!(e.message().starts_with("flashkit-rs: "));
        assert!(Tensor::with_strides(&data, &[3, 2], &[4, 1]).is_ok());
        assert!(Tensor::with_strides(&data, &[3, 2], &[5, 1]).is_ok()); // last element is data[11]
        assert!(Tensor::with_strides(&data, &[3, 2], &[6, 1]).is_err());
        assert!(Tensor::with_strides(&data, &[3, 2], &[4, -1]).is_err());
        assert!(Tensor::new(&data, &[-1, 4]).is_err());
        let bits = [0u16; 4];
        assert!(Tensor::from_bits(&bits, DType::BF16, &[4]).is_ok());
        assert_eq!(
            Tensor::from_bits(&bits, DType::F32, &[4]).unwrap_err().status(),
            Status::DtypeMismatch
        );
    }

    #[test]
    fn dlpack_description() {
        let data = [1i32, 2, 3];
        let t = Tensor::new(&data, &[3]).unwrap();
        let dl = t.as_dlpack();
        assert_eq!(dl.ndim, 1);
        assert_eq!(dl.dtype.code as u32, sys::kDLInt);
        assert_eq!(dl.dtype.bits, 32);
        assert_eq!(dl.device.device_type, sys::kDLCPU);
        assert!(dl.strides.is_null());
        assert_eq!(unsafe { *dl.shape }, 3);
        assert_eq!(DType::from_dlpack(DType::BF16.to_dlpack()), Some(DType::BF16));
    }
}
