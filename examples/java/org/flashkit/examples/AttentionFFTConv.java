// flashkit from Java: causal attention and a causal FFT convolution on the CPU backend,
// printing the kernel variant each call runs and part of each result. A bad argument surfaces
// as a FlashkitException subclass carrying the library's message.
//
// Run (after building with -DFLASHKIT_BUILD_JAVA=ON):
//   java -Djava.library.path=<build>/bindings/java -cp <build>/bindings/java/flashkit.jar:\
//        <build>/bindings/java/flashkit-example.jar org.flashkit.examples.AttentionFFTConv
package org.flashkit.examples;

import java.nio.FloatBuffer;
import org.flashkit.AttentionParams;
import org.flashkit.Context;
import org.flashkit.DType;
import org.flashkit.FFTConvMode;
import org.flashkit.FFTConvPlan;
import org.flashkit.Flashkit;
import org.flashkit.FlashkitException;
import org.flashkit.Tensor;

public final class AttentionFFTConv {
  public static void main(String[] args) {
    System.out.println("flashkit " + Flashkit.version());
    final long B = 1, L = 4, H = 2, D = 8;
    try (Context ctx = Context.cpu();
         Tensor q = Tensor.allocate(DType.FLOAT32, B, L, H, D);
         Tensor k = Tensor.allocate(DType.FLOAT32, B, L, H, D);
         Tensor v = Tensor.allocate(DType.FLOAT32, B, L, H, D);
         Tensor out = Tensor.allocate(DType.FLOAT32, B, L, H, D)) {
      System.out.println("context: " + ctx.info());

      // Attention: (batch 1, seqlen 4, heads 2, head_dim 8), causal.
      FloatBuffer qf = q.floats(), kf = k.floats(), vf = v.floats();
      for (int i = 0; i < B * L * H * D; ++i) {
        qf.put((float) Math.sin(0.1 * i));
        kf.put((float) Math.cos(0.2 * i));
        vf.put((float) (i % 7) - 3.0f);
      }
      AttentionParams p = new AttentionParams().causal(true);
      System.out.println("attention variant: "
          + ctx.attentionSelectKernel(p, q, k, v, null, null, out, null));
      ctx.attention(p, q, k, v, out);
      float[] o = out.toFloatArray();
      for (int t = 0; t < L; ++t) {
        StringBuilder row = new StringBuilder("  out[0," + t + ",0,:4] =");
        for (int i = 0; i < 4; ++i) row.append(String.format(" %8.4f", o[(int) (t * H * D) + i]));
        System.out.println(row);
      }

      // FFT convolution: (batch 1, channels 2, seqlen 8), filter y[t] = u[t] + 0.5 u[t-1].
      final long CH = 2, CL = 8;
      FFTConvPlan.Options po = new FFTConvPlan.Options()
          .mode(FFTConvMode.CAUSAL).channels(CH).seqlen(CL);
      try (FFTConvPlan plan = ctx.createFFTConvPlan(po);
           Tensor u = Tensor.allocate(DType.FLOAT32, 1, CH, CL);
           Tensor filt = Tensor.allocate(DType.FLOAT32, CH, CL);
           Tensor y = Tensor.allocate(DType.FLOAT32, 1, CH, CL)) {
        FloatBuffer uf = u.floats(), ff = filt.floats();
        for (int i = 0; i < CH * CL; ++i) uf.put((float) (i % CL));
        for (int c = 0; c < CH; ++c) {
          ff.put((int) (c * CL), 1.0f);
          ff.put((int) (c * CL + 1), 0.5f);
        }
        System.out.println("fftconv variant: " + plan.selectKernel(u, filt, null, null, null, y)
            + " (fft_size " + plan.options().fftSize() + ")");
        plan.forward(u, filt, null, null, null, y);
        float[] yv = y.toFloatArray();
        for (int c = 0; c < CH; ++c) {
          StringBuilder row = new StringBuilder("  y[0," + c + ",:] =");
          for (int t = 0; t < CL; ++t) row.append(String.format(" %6.2f", yv[(int) (c * CL) + t]));
          System.out.println(row);
        }
        for (int t = 0; t < CL; ++t) {
          double want = t + 0.5 * (t > 0 ? t - 1 : 0);
          if (Math.abs(yv[t] - want) > 1e-3) {
            System.err.println("fftconv mismatch at t=" + t);
            System.exit(1);
          }
        }

        // A bad argument: y has the wrong shape for attention's output.
        try {
          ctx.attention(p, q, k, v, y);
          System.err.println("expected a FlashkitException");
          System.exit(1);
        } catch (FlashkitException e) {
          System.out.println("bad argument -> " + e.getClass().getSimpleName() + " ("
              + e.getStatus() + "): " + e.getMessage());
        }
      }
    }
  }
}
