#!/bin/bash
# Carry the XLA compilation cache (kit.sh's JAX_COMPILATION_CACHE_DIR) from one lease to the next,
# within the device tool's limits: a file back from $OUT may be 16 MiB and all of them 64 MiB; a
# call carries at most 64 MiB of tree (the ~16 MiB repo included). Campaign 10's cache was 64,604 KiB,
# campaign 11's 62,508 KiB raw and 54.6 MB gzipped, so it travels in up to 4 parts of 15 MiB and in
# two carry folders (.dk5, .dk6) of two parts each.
#
#   bash benchmarks/device/jaxcache.sh pack PARENT OUT   (device, learning.sh collect, after the results
#        are in OUT) PARENT/jaxcache -> OUT/jaxcache.tgz.part_aa.. + OUT/jaxcache.tgz.nparts; skipped, with
#        a line why, when it would not fit in 4 parts or in the 63 MiB that OUT may hold beside what is
#        already there (the results must come back whatever the cache does)
#   bash benchmarks/device/jaxcache.sh place FILES_AT    (here) the parts -> .dk5 (aa, ab), .dk6 (ac, ad),
#        each with the nparts file; carry .dk5 and .dk6 in one kit call each
#   bash benchmarks/device/jaxcache.sh unpack K          (device, kit.sh) once every part of K is there:
#        join, untar into K/jaxcache, mark K/jaxcache/.unpacked; a part missing: says which, does nothing
set -uo pipefail
OUT_MIB=${OUT_MIB:-63} PART=${PART:-15m}   # OUT_MIB: what OUT may hold in all; PART: the split size (tests: smaller)
case ${1:-} in
pack)
  parent=${2:?PARENT}; out=${3:?OUT}
  [ -d "$parent/jaxcache" ] || { echo "jaxcache: none in $parent"; exit 0; }
  kb=$(du -sk "$parent/jaxcache" | cut -f1)
  tmp=$(mktemp -d); tar czf $tmp/jaxcache.tgz -C "$parent" jaxcache
  zb=$(stat -c %s $tmp/jaxcache.tgz)
  used=$(du -sb "$out" | cut -f1); room=$((OUT_MIB * 1048576 - used))
  mkdir $tmp/parts && split -b $PART -a 2 $tmp/jaxcache.tgz $tmp/parts/jaxcache.tgz.part_
  n=$(ls $tmp/parts | wc -l)
  if [ "$zb" -le "$room" ] && [ "$n" -le 4 ]; then   # kit.sh copies .dk5 and .dk6: two parts each
    mv $tmp/parts/* "$out/" && echo $n > "$out/jaxcache.tgz.nparts"
    echo "jaxcache KiB $kb, tgz bytes $zb packed in $n parts"
  else
    echo "jaxcache KiB $kb, tgz bytes $zb in $n parts: not packed (room in OUT $room bytes, at most 4 parts)"
  fi
  rm -rf $tmp ;;
place)
  src=${2:?FILES_AT}
  [ -f "$src/jaxcache.tgz.nparts" ] || { echo "no jaxcache.tgz.nparts in $src"; exit 1; }
  rm -rf .dk5 .dk6; i=0
  for p in "$src"/jaxcache.tgz.part_*; do
    d=.dk$((5 + i / 2)); mkdir -p $d; cp "$p" "$src/jaxcache.tgz.nparts" $d/; i=$((i + 1))
  done
  du -sh .dk5 .dk6 2>/dev/null | tr '\n' ' '; echo ;;
unpack)
  K=${2:?K}
  [ -f "$K/jaxcache.tgz.nparts" ] || exit 0
  [ -f "$K/jaxcache/.unpacked" ] && exit 0
  want=$(cat "$K/jaxcache.tgz.nparts"); have=$(ls "$K"/jaxcache.tgz.part_* 2>/dev/null | wc -l)
  if [ "$have" -lt "$want" ]; then echo "jaxcache: $have of $want parts here, carry the rest (.dk5, .dk6)"; exit 0; fi
  mkdir -p "$K/jaxcache"
  cat "$K"/jaxcache.tgz.part_* | tar xzf - -C "$K" && touch "$K/jaxcache/.unpacked" \
    && echo "jaxcache: $(ls "$K/jaxcache" | wc -l) entries unpacked" ;;
*)
  echo "usage: jaxcache.sh pack PARENT OUT | place FILES_AT | unpack K"; exit 2 ;;
esac
