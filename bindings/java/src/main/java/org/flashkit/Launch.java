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

  /** Enqueue on {@code stream} (a {@code cudaStream_t} address; 0 is the default stream). */
  public static Launch onStream(long stream) {
    return new Launch(stream, 0, 0);
  }

  /** A copy that uses caller scratch memory on the context's device. */
  public Launch withWorkspace(long address, long bytes) {
    if (bytes < 0) throw new IllegalArgumentException("workspace bytes: negative");
    return new Launch(stream, address, bytes);
  }

  public long stream() {
    return stream;
  }

  public long workspace() {
    return workspace;
  }

  public long workspaceBytes() {
    return workspaceBytes;
  }

  /** The native layer's encoding: null or {stream, workspace, workspace_bytes}. */
  static long[] encode(Launch l) {
    return l == null ? null : new long[] {l.stream, l.workspace, l.workspaceBytes};
  }
}
