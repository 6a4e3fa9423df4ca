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
