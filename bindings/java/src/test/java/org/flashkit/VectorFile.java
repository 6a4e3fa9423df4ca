// SPDX-License-Identifier: Apache-2.0
package org.flashkit;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** Reader of the shared test vectors (tests/vectors/README.md, format FKV1). */
final class VectorFile {
  /** One array: float64 or int32 data, row-major, with its shape. */
  static final class Array {
    final long[] shape;
    final double[] f64; // null for int32
    final int[] i32; // null for float64

    Array(long[] shape, double[] f64, int[] i32) {
      this.shape = shape;
      this.f64 = f64;
      this.i32 = i32;
    }

    boolean isInt() {
      return i32 != null;
    }

    int size() {
      return isInt() ? i32.length : f64.length;
    }

    double scalar() {
      if (shape.length != 0) throw new IllegalStateException("not a scalar");
      return isInt() ? i32[0] : f64[0];
    }
  }

  /** A MANIFEST line. */
  static final class Case {
    final String name;
    final String op;

    Case(String name, String op) {
      this.name = name;
      this.op = op;
    }
  }

  private VectorFile() {}

  static Path dir() {
    String d = System.getProperty("flashkit.vectors.dir");
    if (d == null) throw new IllegalStateException("set -Dflashkit.vectors.dir=<repo>/tests/vectors");
    return Path.of(d);
  }

  static List<Case> manifest() throws IOException {
    List<Case> cases = new ArrayList<>();
    for (String line : Files.readAllLines(dir().resolve("MANIFEST"), StandardCharsets.US_ASCII)) {
      line = line.strip();
      if (line.isEmpty() || line.startsWith("#")) continue;
      String[] parts = line.split("\\s+");
      if (parts.length != 2) throw new IOException("bad MANIFEST line: " + line);
      cases.add(new Case(parts[0], parts[1]));
    }
    return cases;
  }

  static Map<String, Array> load(String caseName) throws IOException {
    return parse(Files.readAllBytes(dir().resolve(caseName + ".fkv")));
  }

  static Map<String, Array> parse(byte[] bytes) throws IOException {
    ByteBuffer b = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
    byte[] magic = new byte[4];
    b.get(magic);
    if (!"FKV1".equals(new String(magic, StandardCharsets.US_ASCII))) {
      throw new IOException("not an FKV1 file");
    }
    long count = Integer.toUnsignedLong(b.getInt());
    Map<String, Array> out = new LinkedHashMap<>();
    for (long a = 0; a < count; ++a) {
      int nameLen = Short.toUnsignedInt(b.getShort());
      byte[] name = new byte[nameLen];
      b.get(name);
      int dtype = Byte.toUnsignedInt(b.get());
      int rank = Byte.toUnsignedInt(b.get());
      long[] shape = new long[rank];
      long n = 1;
      for (int r = 0; r < rank; ++r) {
        shape[r] = b.getLong();
        n *= shape[r];
      }
      Array arr;
      if (dtype == 0) {
        double[] d = new double[(int) n];
        for (int i = 0; i < n; ++i) d[i] = b.getDouble();
        arr = new Array(shape, d, null);
      } else if (dtype == 1) {
        int[] v = new int[(int) n];
        for (int i = 0; i < n; ++i) v[i] = b.getInt();
        arr = new Array(shape, null, v);
      } else {
        throw new IOException("unknown dtype code " + dtype);
      }
      out.put(new String(name, StandardCharsets.US_ASCII), arr);
    }
    if (b.hasRemaining()) throw new IOException("trailing bytes");
    return out;
  }
}
