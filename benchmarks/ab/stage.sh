# Sourced by the A/B scripts here (run from the repository root on the device machine):
# ab_stage unpacks .device/lib and builds .device-b/lib, the same library directory with the
# library in .device-b/lib.so.gz under the same file names, then prints the GPU line.
ab_stage() {
  local z real
  for z in .device/lib/*.gz; do [ -f "$z" ] && gunzip -kf "$z"; done
  rm -rf .device-b/lib && cp -a .device/lib .device-b/lib
  real=$(readlink -f .device/lib/libflashkit.so)
  gunzip -c .device-b/lib.so.gz > ".device-b/lib/$(basename "$real")"
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
}
# ab_rounds FUNC: calls FUNC SIDE ROUND LIB for the sides in the order A B B A (drift within
# the call weighs on both alike), where LIB is .device-b's library for A and .device's for B,
# with a "== round R, SIDE (LIB)" line before each.
ab_rounds() {
  local round side lib order
  for round in 1 2; do
    order="A B"
    [ "$round" = 2 ] && order="B A"
    for side in $order; do
      lib=.device/lib/libflashkit.so
      [ "$side" = A ] && lib=.device-b/lib/libflashkit.so
      echo "== round $round, $side ($lib)"
      "$1" "$side" "$round" "$lib"
    done
  done
}
