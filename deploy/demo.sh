#!/bin/sh
# deploy/demo.sh: the main job on one machine. Starts gpudiffd (with the dashboard) on
# 127.0.0.1:8470, runs the seed case (shared/cases/lenet-11-821) through agents on the CPU
# backends (cpu, cpu64 and cpu with TF32 emulated on its GEMMs) and, when a GPU is present,
# on cuda with TF32 off and on; every agent uploads its run. Then it sets the float64 run as
# the baseline, prints the comparison that explains the seed's bug report, and leaves the
# daemon running for the dashboard.
#
# usage: deploy/demo.sh BUILD_DIR SHARED_DIR
# Environment: GPUDIFF_DEMO_DIR (default /tmp/gpudiff-demo) holds the database, the bundles
# and the daemon's log; GPUDIFF_DEMO_PORT (default 8470).
set -eu
build=$(cd "$1" && pwd)
shared=$(cd "$2" && pwd)
top=$(cd "$(dirname "$0")/.." && pwd)
dir=${GPUDIFF_DEMO_DIR:-/tmp/gpudiff-demo}
port=${GPUDIFF_DEMO_PORT:-8470}
url="http://127.0.0.1:$port"
seed="$shared/cases/lenet-11-821"
agent="$build/gpudiff-agent"
daemon="$build/gpudiffd"
[ -f "$seed/input.npz" ] || { echo "demo: the seed case is not in $seed" >&2; exit 1; }

mkdir -p "$dir"
if [ -f "$dir/gpudiffd.pid" ] && kill -0 "$(cat "$dir/gpudiffd.pid")" 2>/dev/null; then
    echo "demo: stopping the daemon of an earlier demo"
    kill "$(cat "$dir/gpudiffd.pid")"
    sleep 1
fi
rm -rf "$dir/runs" "$dir/gpudiff.db" "$dir/gpudiff.db-wal" "$dir/gpudiff.db-shm"
mkdir -p "$dir/runs"
db="$dir/gpudiff.db"
"$daemon" migrate --db "$db" >/dev/null
agent_token=$("$daemon" token create --role agent --label demo-agents --db "$db")
admin_token=$("$daemon" token create --role admin --label demo-admin --db "$db")
# What holds a TCP port on this machine, in words (ss names the process when it may).
port_holder() {
    holder=""
    command -v ss >/dev/null 2>&1 &&
        holder=$(ss -ltnpH "sport = :$1" 2>/dev/null | sed -n 's/.*users:((\(.*\)))/\1/p' |
            head -n 1)
    echo "${holder:-another program}"
}

# gpudiffd refuses to serve as root without --allow-root; the demo is often run as root.
root_flag=""
[ "$(id -u)" != 0 ] || root_flag=--allow-root
# setsid: the daemon outlives this script, for the dashboard.
setsid "$daemon" serve --db "$db" --listen "127.0.0.1:$port" --web-root "$top/web" \
    $root_flag >"$dir/gpudiffd.log" 2>&1 </dev/null &
pid=$!
echo "$pid" >"$dir/gpudiffd.pid"
for _ in $(seq 50); do
    kill -0 "$pid" 2>/dev/null || break
    grep -q "listening on" "$dir/gpudiffd.log" && break
    sleep 0.2
done
# Our daemon must be the one answering: alive, and its instance id (random per start, in
# its log) the one /healthz reports. Otherwise agents would upload to whatever holds the port.
if ! kill -0 "$pid" 2>/dev/null || ! grep -q "listening on" "$dir/gpudiffd.log"; then
    echo "demo: gpudiffd did not start; its log ($dir/gpudiffd.log) ends:" >&2
    tail -n 5 "$dir/gpudiffd.log" >&2
    if grep -q "cannot serve on" "$dir/gpudiffd.log"; then
        echo "demo: port $port is held by $(port_holder "$port"); stop it, or set" \
            "GPUDIFF_DEMO_PORT to a free port (GPUDIFF_DEMO_PORT=8471 deploy/setup.sh demo)" >&2
    fi
    exit 1
fi
instance=$(sed -n 's/.*starting (instance \([0-9a-f]*\),.*/\1/p' "$dir/gpudiffd.log" | head -n 1)
answer=$(curl -fsS "$url/healthz" 2>/dev/null || true)
case "$answer" in
*"\"instance\": \"$instance\""*) ;;
*)
    echo "demo: $url is not answered by the gpudiffd just started (pid $pid, instance" \
        "$instance) but by $(port_holder "$port"): ${answer:-no answer}" >&2
    echo "demo: stop that server, or set GPUDIFF_DEMO_PORT to a free port" >&2
    kill "$pid" 2>/dev/null || true
    exit 1 ;;
esac
echo "demo: gpudiffd (pid $pid, instance $instance) is serving $url (log: $dir/gpudiffd.log)"

run() {
    name=$1; shift
    echo
    echo "== gpudiff-agent run $*"
    GPUDIFF_TOKEN="$agent_token" "$agent" run --model "$top/tests/fixtures/models/lenet-11-821.json" \
        --weights-dir "$seed/initializer" --input "$seed/input.npz" --input-key inp \
        --out "$dir/runs/$name" --server "$url" "$@"
}
run cpu --backend cpu
run cpu64 --backend cpu64
run tf32 --backend cpu --emulate tf32
gpu=0
if "$agent" --version | grep -q cuda && command -v nvidia-smi >/dev/null 2>&1 &&
    nvidia-smi -L 2>/dev/null | grep -q GPU; then
    gpu=1
    run cuda-tf32-off --backend cuda --tf32 off
    run cuda-tf32-on --backend cuda --tf32 on
fi

id() { sed -n 's/^ *"id": "\([0-9a-f-]*\)".*/\1/p' "$dir/runs/$1/run.json" | head -n 1; }
curl -fsS -X POST "$url/api/v1/baseline?model=lenet-11-821" \
    -H "Authorization: Bearer $admin_token" -H 'Content-Type: application/json' \
    --data "{\"run\": \"$(id cpu64)\"}" >/dev/null

echo
echo "== gpudiff-agent diff cpu tf32 --truth cpu64: which layer starts it, why, who is right"
"$agent" diff "$dir/runs/cpu" "$dir/runs/tf32" --truth "$dir/runs/cpu64"
if [ "$gpu" = 1 ]; then
    echo
    echo "== the same on this GPU: cuda with TF32 off against on, the float64 run as truth"
    "$agent" diff "$dir/runs/cuda-tf32-off" "$dir/runs/cuda-tf32-on" --truth "$dir/runs/cpu64"
fi
echo
echo "demo: the dashboard:   $url/#/diff?a=$(id cpu)&b=$(id tf32)&truth=$(id cpu64)"
echo "demo: device matrix:   $url/#/matrix/lenet-11-821"
echo "demo: the daemon keeps running; stop it with: kill \$(cat $dir/gpudiffd.pid)"
