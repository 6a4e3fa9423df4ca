// SPDX-License-Identifier: Apache-2.0
package org.flashkit;

/**
 * Per-call launch settings ({@code fk_launch_t}): a CUDA stream and optional caller workspace,
 * as raw addresses. Calls without a Launch use the context's defaults (the default stream and
 * library-managed scratch). Ignored on the CPU backend. Immutable.
 */
public final class Launch {
  private final long stream;
  private final long workspace;
  private final long workspaceBytes;

  private Launch(long stream, long workspace, long workspaceBytes) {
    this.stream = stream;
    this.workspace = workspace;
    this.workspaceBytes = workspaceBytes;
  }

  /**
   * Enqueue on {@code stream} ({@code fk_launch_t.stream}), with library-managed scratch. On the
   * CUDA backend the stream must belong to the context's device, and a call returns before its
   * work finishes.
   *
   * @param stream a {@code cudaStream_t} (the native pointer value, as a long); 0 is the
   *     default (legacy) stream. Ignored on the CPU backend
   * @return a launch on that stream without a workspace
   */
  public static Launch onStream(long stream) {
    return new Launch(stream, 0, 0);
  }

  /**
   * A copy that uses caller scratch memory on the context's device ({@code fk_launch_t.workspace}).
   * A call takes its temporary buffers from it first (256-byte aligned pieces); what does not
   * fit is allocated stream-ordered, so a small or absent workspace is never an error. The
   * {@code ...WorkspaceSize} methods of {@link Context} and {@link FFTConvPlan} give the bytes
   * with which a call allocates nothing. It must not overlap any tensor of the call
   * ({@link InvalidArgumentException}, status INVALID_ARGUMENT, "launch.workspace: overlaps
   * ...") nor be used by other work until the call's kernels have finished on the stream.
   *
   * @param address the workspace's device address in bytes (a native pointer value, e.g.
   *     {@link Tensor#address()} of a device buffer); any alignment; 0 for none
   * @param bytes its size in bytes; 0 when {@code address} is 0 (else the call throws
   *     {@link InvalidArgumentException}, status NULL_POINTER); {@code address + bytes} must not
   *     wrap around the address space (INVALID_ARGUMENT)
   * @return a launch on this launch's stream with that workspace
   * @throws IllegalArgumentException if {@code bytes} is negative
   */
  public Launch withWorkspace(long address, long bytes) {
    if (bytes < 0) throw new IllegalArgumentException("workspace bytes: negative");
    return new Launch(stream, address, bytes);
  }

  /**
   * The stream.
   *
   * @return the {@code cudaStream_t} value; 0 for the default stream
   */
  public long stream() {
    return stream;
  }

  /**
   * The workspace's address.
   *
   * @return the workspace's device address in bytes; 0 for none
   */
  public long workspace() {
    return workspace;
  }

  /**
   * The workspace's size.
   *
   * @return the workspace size in bytes; 0 for none
   */
  public long workspaceBytes() {
    return workspaceBytes;
  }

  /** The native layer's encoding: null or {stream, workspace, workspace_bytes}. */
  static long[] encode(Launch l) {
    return l == null ? null : new long[] {l.stream, l.workspace, l.workspaceBytes};
  }
}
