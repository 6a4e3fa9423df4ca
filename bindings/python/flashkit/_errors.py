"""flashkit's exception classes (defined in the SWIG module so the C layer raises them too).

Every failed call raises the class of its status category, with the sentence from
``fk_get_last_error_message()`` naming the argument and the rule it broke:

================================  =============  ===========================================
class                             status codes   raised for
================================  =============  ===========================================
``InvalidArgumentError``          100-199        shape, dtype, strides, device, alignment,
  (also a ``ValueError``)                        value out of range
``NotSupportedError``             200-299        a valid request this build/device cannot
                                                 serve (dropout, ALiBi, fp8, autograd, no CUDA)
``OutOfMemoryError``              300-399        host/device allocation failed (no workspace
  (also a ``MemoryError``)                       size is refused)
``DeviceError``                   400-499        CUDA runtime/driver error, launch failure
``InternalError``                 500-599        a flashkit bug
================================  =============  ===========================================
"""

from .capi import (  # noqa: F401
    DeviceError,
    FlashkitError,
    InternalError,
    InvalidArgumentError,
    NotSupportedError,
    OutOfMemoryError,
    error_for_status,
)
