#!/bin/bash
# Device check of the bwrap sandbox (docs/hygiene.md): copy this script, /usr/bin/bwrap
# (with its libraries under lib/ if the device has no bubblewrap), server/harness/harness.py
# and examples/tanh_activation/{candidate_fixed,reference}.py into one folder, then run it
# there with $OUT set. Same arguments as server/src/llm/sandbox.rs builds.
cd "$(dirname "$0")"
HERE=$PWD
export LD_LIBRARY_PATH=$HERE/lib
BWRAP=$(command -v bwrap || echo $HERE/bwrap)
PY=$(command -v python3)
echo "bwrap: $BWRAP; python: $PY; user: $(id -u)"; ls /dev | grep -i nvidia | tr '\n' ' '; echo
$BWRAP --ro-bind / / --dev /dev --unshare-net true && echo "bwrap starts" || { echo "bwrap cannot start"; cat /proc/sys/kernel/unprivileged_userns_clone 2>/dev/null; cat /proc/sys/user/max_user_namespaces; }
SB=$(mktemp -d /tmp/kernel-lsp-sandbox-XXXX); mkdir -p $SB/triton
DEVS=""; for n in /dev/nvidia* /dev/dri; do [ -e "$n" ] && DEVS="$DEVS --dev-bind $n $n"; done
cat > $SB/python-in-bwrap.sh <<W
#!/bin/sh
exec $BWRAP --ro-bind / / --dev /dev --proc /proc --tmpfs /dev/shm $DEVS --bind $SB $SB --unshare-net --unshare-ipc --die-with-parent --new-session --setenv HOME $SB --setenv TMPDIR $SB --setenv TRITON_CACHE_DIR $SB/triton --setenv XDG_CACHE_HOME $SB --setenv LD_LIBRARY_PATH "" -- $PY "\$@"
W
chmod +x $SB/python-in-bwrap.sh
ARGS="run --candidate $HERE/candidate_fixed.py --reference $HERE/reference.py --atol 1e-2 --rtol 1e-2 --trials 5 --warmup 10 --repeats 50"
for mode in plain bwrap; do
  if [ $mode = plain ]; then P=$PY; else P=$SB/python-in-bwrap.sh; fi
  s=$(date +%s%N); $P $HERE/harness.py $ARGS > $OUT/$mode.jsonl 2> $OUT/$mode.err; e=$(date +%s%N)
  echo "$mode wall $(( (e - s) / 1000000 )) ms"
done
$SB/python-in-bwrap.sh -c "
import socket, torch
def t(f):
    try: f(); return 'ok'
    except Exception as e: return type(e).__name__+': '+str(e)[:60]
print('write /tmp:', t(lambda: open('/tmp/x_klsp','w')))
print('write sandbox:', t(lambda: open('$SB/x','w')))
print('socket 8.8.8.8:53:', t(lambda: socket.create_connection(('8.8.8.8',53),timeout=2)))
print('cuda:', torch.cuda.is_available(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else '')
" 2>&1
echo "---- table"
for mode in plain bwrap; do
  python3 -c "
import json,sys
r=[json.loads(l) for l in open('$OUT/$mode.jsonl') if l.startswith('{')]
r=[x for x in r if x.get('type')=='result'][-1]
print('$mode', 'mode=',r.get('mode'),'correct=',r.get('correct'),'speedup=',r.get('speedup'),'ref_ms=',r.get('ref_ms'),'new_ms=',r.get('new_ms'),'err=',(r.get('error') or {}).get('message','')[:120])
"
done
