#!/usr/bin/env bash
# Timestamps (epoch seconds) of what a level1_batch.sh stage does, polled every 0.1 s, for the
# start-up of the one-GPU batch's second call: when the batch process appears, when its
# `harness.py serve` worker processes appear, and each change of the results file's line count
# and of the .err's line count. Usage: watch.sh NAME OUTFILE (NAME: one_gpu or two_gpus).
name=$1; out=$2; W=${W:-/tmp/level1}
pb=; pw=; pl=; pe=
end=$(( ${EPOCHREALTIME%.*} + 595 ))
echo "start $EPOCHREALTIME" > "$out"
while [ "${EPOCHREALTIME%.*}" -lt "$end" ]; do
  b=$(pgrep -f 'kernel-lsp bench --batc[h]' | tr '\n' ' ')
  w=$(pgrep -f 'harnes[s]-[0-9a-f]*[.]py serve' | tr '\n' ' ')
  l=$( { wc -l < "$W/$name.jsonl"; } 2>/dev/null )
  e=$( { wc -l < "$W/$name.err"; } 2>/dev/null )
  [ "$b" != "$pb" ] && echo "$EPOCHREALTIME batch [$b]" >> "$out" && pb=$b
  [ "$w" != "$pw" ] && echo "$EPOCHREALTIME worker [$w]" >> "$out" && pw=$w
  [ "$l" != "$pl" ] && echo "$EPOCHREALTIME lines $l" >> "$out" && pl=$l
  [ "$e" != "$pe" ] && echo "$EPOCHREALTIME err $e" >> "$out" && pe=$e
  sleep 0.1
done
