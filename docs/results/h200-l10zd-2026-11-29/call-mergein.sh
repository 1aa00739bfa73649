#!/usr/bin/env bash
# Lesson 10: the chunks merged inside the kernel at every token count (l10_merge_here() always 1)
# against the tree (the merge kernel from 2 tokens at dim 128), batch 16 and 64, 4k and 32k keys,
# 1-8 tokens, dim 128, bf16 cache; four bench processes, tree and variant in turn.
set -u
L=$OUT/logs; mkdir -p $L
exec > >(tee $L/mergein-call.log) 2>&1
date; t0=$(date +%s); export PATH=/usr/local/cuda/bin:$PATH
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null
( cmake --build build-gpu -j 8 --target attn_lessons 2>&1 | grep -E "error" ) & p1=$!
rm -rf /tmp/var && mkdir -p /tmp/var && tar --exclude=./build-gpu --exclude=./build --exclude=./.gpu --exclude=./.peers --exclude=./.carry --exclude=./.git -cf - . | (cd /tmp/var && tar xf -)
python3 - <<'P'
f='/tmp/var/lessons/10_serving_decode/merge_device.cuh'; s=open(f).read()
a='static inline __host__ __device__ int l10_merge_here(int heads, int kv_heads, int max_q) {\n'
assert a in s; s=s.replace(a, a+'  if (heads > 0) return 1; /* variant: always inside */\n'); open(f,'w').write(s)
P
( cd /tmp/var && cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DATTN_ARCHS=90 >/dev/null && cmake --build build -j 8 --target attn_lessons 2>&1 | grep -E "error" ) & p2=$!
wait $p1; wait $p2; echo "built $(( $(date +%s) - t0 )) s"
A="--batches 16,64 --kvs 4096,32768 --tokens 1,2,4,8 --dims 128 --no-fp8 --rounds 3"
for run in tree var tree2 var2; do
  case $run in tree*) lib=build-gpu/lib/libattn_lessons.so;; *) lib=/tmp/var/build/lib/libattn_lessons.so;; esac
  PYTHONUNBUFFERED=1 timeout 150 python3 bench/lesson10_peers.py --lib $lib $A --out /tmp/m-$run > $L/mergein-$run.log 2>&1
  echo "$run rc $? $(( $(date +%s) - t0 )) s"; cp /tmp/m-$run/peers-lesson10.csv $L/mergein-$run.csv 2>/dev/null
done
grep -hE "MISMATCH|rror" $L/mergein-*.log | head -5
echo "all $(( $(date +%s) - t0 )) s"
