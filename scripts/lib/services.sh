# shellcheck shell=bash
#
# scripts/lib/services.sh - private Postgres / Redis (later: Kafka) instances
# for ptslog development, tests and CI.
#
# Source this file (bash only); it defines functions and sets no shell options.
#
#   start_services      start Postgres + Redis + Kafka (tansu), export URLs
#   start_postgres      private Postgres on 127.0.0.1:$PTSLOG_PG_PORT
#   start_redis         private Redis    on 127.0.0.1:$PTSLOG_REDIS_PORT
#   start_kafka         private tansu broker on 127.0.0.1:$PTSLOG_KAFKA_PORT
#                       (its settings are in the Kafka section below)
#   start_s3            private S3-protocol server (s3s-fs) on 127.0.0.1:$PTSLOG_S3_PORT
#                       (its settings are in the S3 section below)
#   stop_services       stop the private instances (data is kept)
#   services_status     print what is running where
#   print_service_env   print `export ...` lines (for eval)
#   ensure_apt_packages install missing Debian packages (apt-get update once)
#   ensure_cargo        make sure cargo is on PATH
#
# Every function returns non-zero (with a message on stderr) on failure and
# never calls `exit`, so the file can also be sourced by an interactive shell.
#
# Configuration (environment, all optional):
#   PTSLOG_DATA_DIR          data folder               (default <repo>/.data)
#   PTSLOG_PG_PORT           Postgres port             (default 55432)
#   PTSLOG_PG_DB             application database      (default ptslog)
#   PTSLOG_PG_DIR            Postgres base dir (holds data/ and postgres.log);
#                            default $PTSLOG_DATA_DIR/pg, or
#                            /tmp/ptslog-pg-<hash> when the postgres OS user
#                            cannot reach $PTSLOG_DATA_DIR (running as root)
#   PTSLOG_PG_BINDIR         Postgres binaries         (default: autodetect)
#   PTSLOG_PG_OS_USER        OS user running Postgres when we are root
#                            (default postgres)
#   PTSLOG_REDIS_PORT        Redis port                (default 56379)
#   PTSLOG_SERVICE_TIMEOUT   seconds to wait for readiness (default 60)
#
# Exported after start:
#   DATABASE_URL             postgres://postgres@127.0.0.1:<port>/ptslog
#   PTSLOG_TEST_DATABASE_URL postgres://postgres@127.0.0.1:<port>/postgres
#   PTSLOG_TEST_PG_SSLROOTCERT the private CA of the instance's TLS certificate (with openssl)
#   REDIS_URL                redis://127.0.0.1:<port>
#   PTSLOG_TEST_REDIS_URL    redis://127.0.0.1:<port>

if [ -z "${BASH_VERSION:-}" ]; then
    echo "scripts/lib/services.sh requires bash" >&2
    # shellcheck disable=SC2317
    return 1 2>/dev/null || exit 1
fi

# ---------------------------------------------------------------------------
# generic helpers
# ---------------------------------------------------------------------------

ptslog_log() { printf '[ptslog] %s\n' "$*" >&2; }
ptslog_err() { printf '[ptslog] ERROR: %s\n' "$*" >&2; }

# _ptslog_tail FILE [N] - print the last N lines of a log file to stderr.
_ptslog_tail() {
    local f=$1 n=${2:-40}
    if [ -r "$f" ]; then
        printf '[ptslog] ---- last %s lines of %s ----\n' "$n" "$f" >&2
        tail -n "$n" "$f" >&2 || true
        printf '[ptslog] ---- end of %s ----\n' "$f" >&2
    else
        printf '[ptslog] (log file %s does not exist)\n' "$f" >&2
    fi
}

# _ptslog_rotate_log FILE - keep logs from growing forever across restarts.
_ptslog_rotate_log() {
    local f=$1 size
    [ -f "$f" ] || return 0
    size=$(stat -c %s "$f" 2>/dev/null || echo 0)
    if [ "$size" -gt $((50 * 1024 * 1024)) ]; then
        mv -f "$f" "$f.old" || true
    fi
}

# Repository root = two levels above this file.
PTSLOG_ROOT=${PTSLOG_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}

# _ptslog_init_paths - compute (and create) the data folder, set defaults.
_ptslog_init_paths() {
    PTSLOG_DATA_DIR=${PTSLOG_DATA_DIR:-$PTSLOG_ROOT/.data}
    PTSLOG_PG_PORT=${PTSLOG_PG_PORT:-55432}
    PTSLOG_PG_DB=${PTSLOG_PG_DB:-ptslog}
    PTSLOG_PG_OS_USER=${PTSLOG_PG_OS_USER:-postgres}
    PTSLOG_REDIS_PORT=${PTSLOG_REDIS_PORT:-56379}
    PTSLOG_SERVICE_TIMEOUT=${PTSLOG_SERVICE_TIMEOUT:-60}
    if ! mkdir -p "$PTSLOG_DATA_DIR"; then
        ptslog_err "cannot create data folder $PTSLOG_DATA_DIR"
        return 1
    fi
    # make it absolute
    PTSLOG_DATA_DIR=$(cd "$PTSLOG_DATA_DIR" && pwd) || return 1
    export PTSLOG_DATA_DIR
}

_ptslog_is_root() { [ "$(id -u)" -eq 0 ]; }

# _ptslog_privileged CMD... - run CMD as root (directly, or via sudo -n).
_ptslog_privileged() {
    if _ptslog_is_root; then
        "$@"
    elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
        sudo -n "$@"
    else
        ptslog_err "need root to run: $* (not root and no password-less sudo)"
        return 1
    fi
}

# _ptslog_with_lock CMD... - run CMD while holding $PTSLOG_DATA_DIR/.services.lock
# so that concurrent `scripts/test` runs don't race on initdb / startup.
# fd 9 is the lock; daemons are started via _ptslog_spawn so they don't keep it.
_ptslog_with_lock() {
    local rc=0
    if ! command -v flock >/dev/null 2>&1; then
        "$@"
        return
    fi
    exec 9>"$PTSLOG_DATA_DIR/.services.lock" || return 1
    if ! flock -w 300 9; then
        exec 9>&-
        ptslog_err "timed out waiting for $PTSLOG_DATA_DIR/.services.lock"
        return 1
    fi
    "$@" || rc=$?
    flock -u 9 || true
    exec 9>&-
    return "$rc"
}

# _ptslog_spawn CMD... - run CMD (which starts a daemon) with stdin from
# /dev/null and every fd above 2 closed, so the daemon does not keep our lock
# or some pipe of the caller (e.g. a CI runner's) open forever.
_ptslog_spawn() {
    (
        for fdp in /proc/self/fd/*; do
            fd=${fdp##*/}
            case $fd in 0 | 1 | 2 | *[!0-9]*) continue ;; esac
            eval "exec $fd>&-" 2>/dev/null || true
        done
        "$@" </dev/null # may be a shell function, so no exec
    )
}

# ---------------------------------------------------------------------------
# packages / toolchain
# ---------------------------------------------------------------------------

_PTSLOG_APT_UPDATED=${_PTSLOG_APT_UPDATED:-0}

# ensure_apt_packages PKG... - apt-get install the packages that are missing.
ensure_apt_packages() {
    local missing=() p
    for p in "$@"; do
        if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
            missing+=("$p")
        fi
    done
    [ "${#missing[@]}" -eq 0 ] && return 0
    if ! command -v apt-get >/dev/null 2>&1; then
        ptslog_err "missing packages: ${missing[*]} (no apt-get here - install them manually)"
        return 1
    fi
    ptslog_log "installing missing packages: ${missing[*]}"
    if [ "$_PTSLOG_APT_UPDATED" != 1 ]; then
        _ptslog_privileged env DEBIAN_FRONTEND=noninteractive apt-get update -q || {
            ptslog_err "apt-get update failed"
            return 1
        }
        _PTSLOG_APT_UPDATED=1
    fi
    _ptslog_privileged env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -q --no-install-recommends "${missing[@]}" || {
        ptslog_err "apt-get install ${missing[*]} failed"
        return 1
    }
}

# ensure_cargo - make sure `cargo` is on PATH (sources ~/.cargo/env if needed).
ensure_cargo() {
    local envf d
    if ! command -v cargo >/dev/null 2>&1; then
        for envf in "${CARGO_HOME:-$HOME/.cargo}/env" "$HOME/.cargo/env" /usr/local/cargo/env; do
            if [ -f "$envf" ]; then
                # shellcheck disable=SC1090
                . "$envf"
                break
            fi
        done
    fi
    if ! command -v cargo >/dev/null 2>&1; then
        for d in "${CARGO_HOME:-$HOME/.cargo}/bin" /usr/local/cargo/bin; do
            if [ -x "$d/cargo" ]; then
                PATH="$d:$PATH"
                export PATH
                break
            fi
        done
    fi
    if ! command -v cargo >/dev/null 2>&1; then
        ptslog_err "cargo not found. Install the Rust toolchain (>= 1.80) with rustup:"
        ptslog_err "  curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y"
        ptslog_err "  . \"\$HOME/.cargo/env\""
        ptslog_err "(Debian's apt 'cargo' package is too old for this workspace.)"
        return 1
    fi
}

# ---------------------------------------------------------------------------
# Postgres
# ---------------------------------------------------------------------------

_pg_bindir_ok() { [ -n "$1" ] && [ -x "$1/initdb" ] && [ -x "$1/pg_ctl" ] && [ -x "$1/postgres" ]; }

# _pg_find_bindir - set _PG_BIN to a directory containing initdb/pg_ctl/postgres.
# Honours PTSLOG_PG_BINDIR; if the cluster in $_PG_DATA already exists, the
# binaries of its major version are required.
_pg_find_bindir() {
    local d want_ver="" have_ver cands=()
    if [ -n "${PTSLOG_PG_BINDIR:-}" ]; then
        if _pg_bindir_ok "$PTSLOG_PG_BINDIR"; then
            _PG_BIN=$PTSLOG_PG_BINDIR
            return 0
        fi
        ptslog_err "PTSLOG_PG_BINDIR=$PTSLOG_PG_BINDIR does not contain initdb/pg_ctl/postgres"
        return 1
    fi
    if [ -n "${_PG_DATA:-}" ] && [ -r "$_PG_DATA/PG_VERSION" ]; then
        want_ver=$(cat "$_PG_DATA/PG_VERSION")
    fi
    [ -n "$want_ver" ] && cands+=("/usr/lib/postgresql/$want_ver/bin")
    if command -v pg_config >/dev/null 2>&1; then
        cands+=("$(pg_config --bindir 2>/dev/null || true)")
    fi
    # newest /usr/lib/postgresql/*/bin first
    while IFS= read -r d; do
        cands+=("$d")
    done < <(printf '%s\n' /usr/lib/postgresql/*/bin | grep -v '\*' | sort -rV)
    cands+=(/usr/local/pgsql/bin)
    d=$(command -v initdb 2>/dev/null || true)
    [ -n "$d" ] && cands+=("$(dirname "$d")")
    for d in "${cands[@]}"; do
        _pg_bindir_ok "$d" || continue
        if [ -n "$want_ver" ]; then
            have_ver=$("$d/postgres" --version 2>/dev/null | sed -E 's/^[^0-9]*([0-9]+).*/\1/')
            if [ "$have_ver" != "$want_ver" ]; then
                ptslog_err "the cluster in $_PG_DATA is PostgreSQL $want_ver, but only $d ($have_ver) is available;"
                ptslog_err "stop it and remove $_PG_BASE to re-initialise (or set PTSLOG_PG_BINDIR)"
                return 1
            fi
        fi
        _PG_BIN=$d
        return 0
    done
    return 1
}

# _pg_ensure_installed - find the binaries, apt-get install postgresql if needed.
_pg_ensure_installed() {
    if _pg_find_bindir 2>/dev/null; then return 0; fi
    if [ -n "${PTSLOG_PG_BINDIR:-}" ]; then _pg_find_bindir; return 1; fi
    ptslog_log "PostgreSQL server binaries not found - installing the 'postgresql' package"
    # Debian 12's postgresql-15 ships contrib (pg_trgm, btree_gin).
    ensure_apt_packages postgresql || return 1
    if ! _pg_find_bindir; then
        ptslog_err "PostgreSQL installed but initdb/pg_ctl still not found (set PTSLOG_PG_BINDIR)"
        return 1
    fi
}

# _pg_as_owner CMD... - run CMD as the OS user owning the cluster, from /.
_pg_as_owner() {
    if _ptslog_is_root; then
        if command -v runuser >/dev/null 2>&1; then
            (cd / && runuser -u "$PTSLOG_PG_OS_USER" -- "$@")
        else
            local q
            q=$(printf '%q ' "$@")
            (cd / && su "$PTSLOG_PG_OS_USER" -s /bin/sh -c "$q")
        fi
    else
        (cd / && "$@")
    fi
}

# _pg_choose_dir - set _PG_BASE / _PG_DATA / _PG_LOG.
_pg_choose_dir() {
    local base
    if [ -n "${PTSLOG_PG_DIR:-}" ]; then
        base=$PTSLOG_PG_DIR
    elif ! _ptslog_is_root; then
        base=$PTSLOG_DATA_DIR/pg
    else
        if ! id -u "$PTSLOG_PG_OS_USER" >/dev/null 2>&1; then
            ptslog_log "creating system user $PTSLOG_PG_OS_USER"
            useradd --system --user-group --no-create-home --home-dir /var/lib/postgresql \
                --shell /bin/bash "$PTSLOG_PG_OS_USER" || {
                ptslog_err "cannot create OS user $PTSLOG_PG_OS_USER"
                return 1
            }
        fi
        # The data folder is ours: make it traversable. Its parents are not
        # touched - if they are closed (e.g. /root is 0700) we fall back to /tmp.
        chmod o+x "$PTSLOG_DATA_DIR" 2>/dev/null || true
        if _pg_as_owner test -x "$PTSLOG_DATA_DIR" 2>/dev/null; then
            base=$PTSLOG_DATA_DIR/pg
        else
            base=/tmp/ptslog-pg-$(printf '%s' "$PTSLOG_DATA_DIR" | sha256sum | cut -c1-12)
            if [ "${_PTSLOG_FALLBACK_LOGGED:-}" != "$base" ]; then
                ptslog_log "user $PTSLOG_PG_OS_USER cannot reach $PTSLOG_DATA_DIR; Postgres lives in $base"
                _PTSLOG_FALLBACK_LOGGED=$base
            fi
            if [ ! -e "$PTSLOG_DATA_DIR/pg" ] && [ ! -L "$PTSLOG_DATA_DIR/pg" ]; then
                ln -s "$base" "$PTSLOG_DATA_DIR/pg" 2>/dev/null || true
            fi
        fi
    fi
    _PG_BASE=$base
    _PG_DATA=$base/data
    _PG_LOG=$base/postgres.log
}

# _pg_prepare_base - create the base dir with the right owner/permissions.
_pg_prepare_base() {
    mkdir -p "$_PG_BASE" || { ptslog_err "cannot create $_PG_BASE"; return 1; }
    if _ptslog_is_root; then
        local owner
        owner=$(stat -c %U "$_PG_BASE")
        if [ "$owner" != "$PTSLOG_PG_OS_USER" ]; then
            case $_PG_BASE in
            /tmp/*)
                if [ "$owner" != root ]; then
                    ptslog_err "$_PG_BASE is owned by '$owner' (expected root or $PTSLOG_PG_OS_USER); refusing to use it"
                    return 1
                fi
                ;;
            esac
            chown -R "$PTSLOG_PG_OS_USER:" "$_PG_BASE" || return 1
        fi
        chmod 0755 "$_PG_BASE" || return 1
    fi
}

# _pg_conf_text - the settings we enforce (written to $PGDATA/ptslog.conf).
_pg_conf_text() {
    local sock=$_PG_DATA shm_kb dsm=posix
    # Unix socket path must fit in sun_path (107 bytes); otherwise TCP only.
    if [ $((${#sock} + 20)) -gt 107 ]; then sock=""; fi
    # A small /dev/shm (docker default: 64MB) breaks parallel queries.
    shm_kb=$(df -Pk /dev/shm 2>/dev/null | awk 'NR==2 {print $2}')
    if [ -z "$shm_kb" ] || [ "$shm_kb" -lt 1048576 ]; then dsm=mmap; fi
    cat <<EOF
# Managed by scripts/lib/services.sh - rewritten on every start, do not edit.
listen_addresses = '127.0.0.1'
port = $PTSLOG_PG_PORT
unix_socket_directories = '$sock'
max_connections = 300
shared_buffers = 256MB
dynamic_shared_memory_type = $dsm
wal_level = logical
max_wal_senders = 64
max_replication_slots = 64
fsync = on
synchronous_commit = on
# Checkpoints keep up to 1 GB of old WAL segments to reuse instead of deleting them: Postgres
# zero-fills and fsyncs each new 16 MB segment while every commit waits (docs/operations.md).
min_wal_size = 1GB
max_wal_size = 2GB
full_page_writes = on
timezone = 'UTC'
log_timezone = 'UTC'
logging_collector = off
log_line_prefix = '%m [%p] %q%u@%d '
EOF
    # TLS with the private CA of _pg_ensure_tls (clients that do not ask for TLS are unaffected).
    if [ -f "$_PG_DATA/server.crt" ] && [ -f "$_PG_DATA/server.key" ]; then
        printf "ssl = on\nssl_cert_file = 'server.crt'\nssl_key_file = 'server.key'\n"
    fi
}

# _pg_ensure_tls - a private CA ($_PG_BASE/tls/ca.crt) and a server certificate it signed for
# localhost and 127.0.0.1, copied into the data dir, so tests can connect with
# sslmode=verify-full&sslrootcert=$PTSLOG_TEST_PG_SSLROOTCERT. Without openssl: no TLS, no error.
_pg_ensure_tls() {
    local dir=$_PG_BASE/tls
    if ! command -v openssl >/dev/null 2>&1; then
        ptslog_log "openssl not found - the private Postgres serves without TLS"
        return 0
    fi
    if [ ! -f "$dir/server.crt" ] || [ ! -f "$dir/ca.crt" ]; then
        mkdir -p "$dir" && chmod 0755 "$dir" || return 1
        (
            cd "$dir" || exit 1
            umask 077
            openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
                -keyout ca.key -out ca.crt -days 3650 -subj "/CN=ptslog private test CA" &&
                openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
                    -keyout server.key -out server.csr -subj "/CN=localhost" &&
                printf '%s\n' "subjectAltName=DNS:localhost,IP:127.0.0.1" "basicConstraints=CA:FALSE" \
                    "keyUsage=digitalSignature,keyEncipherment" "extendedKeyUsage=serverAuth" >server.ext &&
                openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
                    -out server.crt -days 3650 -extfile server.ext
        ) >"$_PG_BASE/tls.log" 2>&1 || {
            ptslog_err "creating the Postgres TLS certificate failed"
            _ptslog_tail "$_PG_BASE/tls.log"
            return 1
        }
        chmod 0644 "$dir/ca.crt" "$dir/server.crt"
    fi
    if ! cmp -s "$dir/server.crt" "$_PG_DATA/server.crt" 2>/dev/null; then
        cp "$dir/server.crt" "$dir/server.key" "$_PG_DATA/" || return 1
        chmod 0600 "$_PG_DATA/server.key"
        if _ptslog_is_root; then chown "$PTSLOG_PG_OS_USER:" "$_PG_DATA/server.crt" "$_PG_DATA/server.key"; fi
    fi
}

_pg_is_ours_running() {
    [ -f "$_PG_DATA/PG_VERSION" ] && _pg_as_owner "$_PG_BIN/pg_ctl" -D "$_PG_DATA" status >/dev/null 2>&1
}

_pg_ready() {
    "$_PG_BIN/pg_isready" -q -h 127.0.0.1 -p "$PTSLOG_PG_PORT" -U postgres -d postgres -t 2 >/dev/null 2>&1
}

_pg_psql() {
    "$_PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PTSLOG_PG_PORT" -U postgres "$@"
}

# _pg_wait_ready - poll until Postgres accepts connections.
_pg_wait_ready() {
    local i
    for ((i = 0; i < PTSLOG_SERVICE_TIMEOUT * 2; i++)); do
        if _pg_ready && _pg_psql -d postgres -tAc 'select 1' >/dev/null 2>&1; then
            return 0
        fi
        sleep 0.5
    done
    ptslog_err "Postgres did not become ready on 127.0.0.1:$PTSLOG_PG_PORT within ${PTSLOG_SERVICE_TIMEOUT}s"
    _ptslog_tail "$_PG_LOG"
    return 1
}

_pg_initdb() {
    local locale=C
    if locale -a 2>/dev/null | grep -qiE '^c\.utf-?8$'; then locale=C.UTF-8; fi
    ptslog_log "initialising Postgres cluster in $_PG_DATA"
    if ! _pg_as_owner "$_PG_BIN/initdb" -D "$_PG_DATA" -U postgres --auth=trust \
        --encoding=UTF8 --locale="$locale" >"$_PG_BASE/initdb.log" 2>&1; then
        ptslog_err "initdb failed"
        _ptslog_tail "$_PG_BASE/initdb.log"
        return 1
    fi
    # trust for local sockets and loopback TCP (incl. replication)
    cat >"$_PG_DATA/pg_hba.conf" <<'EOF'
# Managed by scripts/lib/services.sh (private development/test instance).
# TYPE  DATABASE     USER  ADDRESS        METHOD
local   all          all                  trust
host    all          all   127.0.0.1/32   trust
host    all          all   ::1/128        trust
local   replication  all                  trust
host    replication  all   127.0.0.1/32   trust
host    replication  all   ::1/128        trust
EOF
    printf "\n# ptslog private instance settings\ninclude_if_exists = 'ptslog.conf'\n" >>"$_PG_DATA/postgresql.conf"
    if _ptslog_is_root; then chown "$PTSLOG_PG_OS_USER:" "$_PG_DATA/pg_hba.conf" "$_PG_DATA/postgresql.conf"; fi
}

_pg_write_conf() {
    _pg_conf_text >"$_PG_DATA/ptslog.conf" || return 1
    if _ptslog_is_root; then chown "$PTSLOG_PG_OS_USER:" "$_PG_DATA/ptslog.conf"; fi
    chmod 0600 "$_PG_DATA/ptslog.conf"
}

_pg_export_env() {
    DATABASE_URL=postgres://postgres@127.0.0.1:$PTSLOG_PG_PORT/$PTSLOG_PG_DB
    PTSLOG_TEST_DATABASE_URL=postgres://postgres@127.0.0.1:$PTSLOG_PG_PORT/postgres
    export DATABASE_URL PTSLOG_TEST_DATABASE_URL PTSLOG_PG_PORT
    if [ -n "$_PG_DATA" ] && [ -f "$_PG_DATA/server.crt" ] && [ -f "$_PG_BASE/tls/ca.crt" ]; then
        PTSLOG_TEST_PG_SSLROOTCERT=$_PG_BASE/tls/ca.crt
        export PTSLOG_TEST_PG_SSLROOTCERT
    fi
}

_start_postgres_locked() {
    local pg_ctl=$_PG_BIN/pg_ctl

    if [ -f "$_PG_DATA/PG_VERSION" ]; then _pg_ensure_tls || return 1; fi
    if _pg_is_ours_running; then
        # Reuse; but restart if the enforced settings changed (e.g. new port).
        if [ "$(_pg_conf_text)" != "$(cat "$_PG_DATA/ptslog.conf" 2>/dev/null)" ]; then
            ptslog_log "Postgres settings changed - restarting the private instance"
            _pg_write_conf || return 1
            if ! _ptslog_spawn _pg_as_owner "$pg_ctl" -D "$_PG_DATA" -l "$_PG_LOG" -w \
                -t "$PTSLOG_SERVICE_TIMEOUT" -m fast restart >/dev/null; then
                ptslog_err "Postgres restart failed"
                _ptslog_tail "$_PG_LOG"
                return 1
            fi
        else
            ptslog_log "Postgres already running ($_PG_DATA, port $PTSLOG_PG_PORT) - reusing it"
        fi
    elif _pg_ready; then
        ptslog_log "something already serves Postgres on 127.0.0.1:$PTSLOG_PG_PORT (not $_PG_DATA) - reusing it"
    else
        if [ ! -f "$_PG_DATA/PG_VERSION" ]; then
            if [ -d "$_PG_DATA" ] && [ -n "$(ls -A "$_PG_DATA" 2>/dev/null)" ]; then
                ptslog_err "$_PG_DATA exists but is not a Postgres cluster; remove it"
                return 1
            fi
            _pg_initdb || return 1
            _pg_ensure_tls || return 1
        fi
        _pg_write_conf || return 1
        _ptslog_rotate_log "$_PG_LOG"
        if _ptslog_is_root; then
            touch "$_PG_LOG" || return 1
            chown "$PTSLOG_PG_OS_USER:" "$_PG_LOG" || return 1
        fi
        ptslog_log "starting Postgres on 127.0.0.1:$PTSLOG_PG_PORT (data $_PG_DATA, log $_PG_LOG)"
        if ! _ptslog_spawn _pg_as_owner "$pg_ctl" -D "$_PG_DATA" -l "$_PG_LOG" -w \
            -t "$PTSLOG_SERVICE_TIMEOUT" start >/dev/null; then
            ptslog_err "Postgres failed to start (port $PTSLOG_PG_PORT in use by something else?)"
            _ptslog_tail "$_PG_LOG"
            return 1
        fi
    fi

    _pg_wait_ready || return 1

    local wal
    wal=$(_pg_psql -d postgres -tAc 'show wal_level' 2>/dev/null || true)
    if [ "$wal" != logical ]; then
        ptslog_log "WARNING: Postgres on port $PTSLOG_PG_PORT has wal_level=$wal (expected logical)"
    fi
    local ext
    ext=$(_pg_psql -d postgres -tAc "select count(*) from pg_available_extensions where name in ('pg_trgm','btree_gin')" 2>/dev/null || echo 0)
    if [ "$ext" != 2 ]; then
        ptslog_log "WARNING: extensions pg_trgm/btree_gin are not available (install postgresql-contrib)"
    fi

    if [ "$(_pg_psql -d postgres -tAc "select 1 from pg_database where datname = '$PTSLOG_PG_DB'")" != 1 ]; then
        ptslog_log "creating database $PTSLOG_PG_DB"
        if ! _pg_psql -d postgres -c "create database \"$PTSLOG_PG_DB\""; then
            # lost a race with a concurrent creator?
            if [ "$(_pg_psql -d postgres -tAc "select 1 from pg_database where datname = '$PTSLOG_PG_DB'")" != 1 ]; then
                ptslog_err "cannot create database $PTSLOG_PG_DB"
                return 1
            fi
        fi
    fi
}

# start_postgres - start (or reuse) the private Postgres and export its URLs.
start_postgres() {
    _ptslog_init_paths || return 1
    _PG_DATA=""
    _pg_ensure_installed || return 1 # first: the package creates the postgres user
    _pg_choose_dir || return 1
    _pg_find_bindir || return 1 # again: match the major version of an existing cluster
    _pg_prepare_base || return 1
    _ptslog_with_lock _start_postgres_locked || return 1
    _pg_export_env
    ptslog_log "Postgres ready: $DATABASE_URL"
}

stop_postgres() {
    _ptslog_init_paths || return 1
    _pg_choose_dir || return 1
    if [ ! -f "$_PG_DATA/PG_VERSION" ]; then
        ptslog_log "no private Postgres cluster in $_PG_DATA"
        return 0
    fi
    _pg_find_bindir || { ptslog_err "Postgres binaries not found"; return 1; }
    if _pg_is_ours_running; then
        ptslog_log "stopping Postgres ($_PG_DATA)"
        if ! _pg_as_owner "$_PG_BIN/pg_ctl" -D "$_PG_DATA" -w -t "$PTSLOG_SERVICE_TIMEOUT" -m fast stop >/dev/null; then
            ptslog_err "pg_ctl stop failed"
            _ptslog_tail "$_PG_LOG"
            return 1
        fi
    else
        ptslog_log "private Postgres ($_PG_DATA) is not running"
    fi
}

# ---------------------------------------------------------------------------
# A primary and its streaming replica, for the read replica's tests (DATABASE_READ_URL)
# ---------------------------------------------------------------------------
# A pair of its own, beside the main instance: its replica then replays only the replica
# tests' writes, not the suite's hundreds of template copies, which would keep it behind.
#   PTSLOG_PG_PAIR_PORT   the pair's primary (default PTSLOG_PG_PORT + 2); its replica is on
#                         the next port
# Exports PTSLOG_TEST_PAIR_PRIMARY_URL and PTSLOG_TEST_PAIR_REPLICA_URL.

_pg_pair_paths() {
    PTSLOG_PG_PAIR_PORT=${PTSLOG_PG_PAIR_PORT:-$((PTSLOG_PG_PORT + 2))}
    _PAIR_REPLICA_PORT=$((PTSLOG_PG_PAIR_PORT + 1))
    _PAIR_BASE=${_PG_BASE}-pair
    _PAIR_REPLICA=$_PAIR_BASE/replica
}

_pair_system_id() { # PORT - the cluster's system identifier (a standby reports its primary's)
    "$_PG_BIN/psql" -X -q -tA -h 127.0.0.1 -p "$1" -U postgres -d postgres \
        -c "select system_identifier from pg_control_system()" 2>/dev/null
}

_start_pair_replica_locked() {
    local data=$_PAIR_REPLICA/data log=$_PAIR_REPLICA/postgres.log i primary_id
    primary_id=$(_pair_system_id "$PTSLOG_PG_PAIR_PORT")
    if [ -z "$primary_id" ]; then
        ptslog_err "the pair's primary on port $PTSLOG_PG_PAIR_PORT does not answer"
        return 1
    fi
    if _pg_as_owner "$_PG_BIN/pg_ctl" -D "$data" status >/dev/null 2>&1; then
        if [ "$(_pair_system_id "$_PAIR_REPLICA_PORT")" = "$primary_id" ]; then
            ptslog_log "Postgres replica already running (port $_PAIR_REPLICA_PORT) - reusing it"
            # A test that paused replay and then failed may have left it paused.
            "$_PG_BIN/psql" -X -q -tA -h 127.0.0.1 -p "$_PAIR_REPLICA_PORT" -U postgres -d postgres \
                -c "select pg_wal_replay_resume()" >/dev/null 2>&1 || true
            return 0
        fi
        _pg_as_owner "$_PG_BIN/pg_ctl" -D "$data" -w -m fast stop >/dev/null 2>&1 || true
    fi
    # Not a running copy of this primary: made anew (the pair's cluster is small).
    rm -rf "$_PAIR_REPLICA"
    mkdir -p "$_PAIR_REPLICA" || return 1
    if _ptslog_is_root; then chown "$PTSLOG_PG_OS_USER:" "$_PAIR_REPLICA" || return 1; fi
    ptslog_log "copying the pair's primary into a streaming replica ($data)"
    if ! _pg_as_owner "$_PG_BIN/pg_basebackup" -h 127.0.0.1 -p "$PTSLOG_PG_PAIR_PORT" -U postgres \
        -D "$data" -R -X stream -c fast >"$_PAIR_REPLICA/basebackup.log" 2>&1; then
        ptslog_err "pg_basebackup failed"
        _ptslog_tail "$_PAIR_REPLICA/basebackup.log"
        return 1
    fi
    # After the copied ptslog.conf, so its port wins; TCP only (the socket folder is the primary's).
    printf "port = %s\nunix_socket_directories = ''\nhot_standby = on\nhot_standby_feedback = on\n" \
        "$_PAIR_REPLICA_PORT" >"$data/ptslog-replica.conf"
    printf "include_if_exists = 'ptslog-replica.conf'\n" >>"$data/postgresql.conf"
    if _ptslog_is_root; then chown "$PTSLOG_PG_OS_USER:" "$data/ptslog-replica.conf"; fi
    if ! _ptslog_spawn _pg_as_owner "$_PG_BIN/pg_ctl" -D "$data" -l "$log" -w \
        -t "$PTSLOG_SERVICE_TIMEOUT" start >/dev/null; then
        ptslog_err "the Postgres replica failed to start (port $_PAIR_REPLICA_PORT in use?)"
        _ptslog_tail "$log"
        return 1
    fi
    for ((i = 0; i < PTSLOG_SERVICE_TIMEOUT * 2; i++)); do
        [ "$(_pair_system_id "$_PAIR_REPLICA_PORT")" = "$primary_id" ] && return 0
        sleep 0.5
    done
    ptslog_err "the Postgres replica did not answer on port $_PAIR_REPLICA_PORT"
    _ptslog_tail "$log"
    return 1
}

# start_postgres_pair - start (or reuse) the pair and export its URLs.
start_postgres_pair() {
    _ptslog_init_paths || return 1
    _pg_ensure_installed || return 1
    _pg_choose_dir || return 1
    _pg_find_bindir || return 1
    _pg_pair_paths
    (PTSLOG_PG_PORT=$PTSLOG_PG_PAIR_PORT PTSLOG_PG_DIR=$_PAIR_BASE/primary start_postgres) || return 1
    _ptslog_with_lock _start_pair_replica_locked || return 1
    PTSLOG_TEST_PAIR_PRIMARY_URL=postgres://postgres@127.0.0.1:$PTSLOG_PG_PAIR_PORT/postgres
    PTSLOG_TEST_PAIR_REPLICA_URL=postgres://postgres@127.0.0.1:$_PAIR_REPLICA_PORT/postgres
    export PTSLOG_TEST_PAIR_PRIMARY_URL PTSLOG_TEST_PAIR_REPLICA_URL
    ptslog_log "Postgres pair ready: primary $PTSLOG_TEST_PAIR_PRIMARY_URL, replica $PTSLOG_TEST_PAIR_REPLICA_URL"
}

stop_postgres_pair() {
    _ptslog_init_paths || return 1
    _pg_choose_dir || return 1
    _pg_find_bindir || return 1
    _pg_pair_paths
    if _pg_as_owner "$_PG_BIN/pg_ctl" -D "$_PAIR_REPLICA/data" status >/dev/null 2>&1; then
        ptslog_log "stopping the Postgres replica ($_PAIR_REPLICA/data)"
        _pg_as_owner "$_PG_BIN/pg_ctl" -D "$_PAIR_REPLICA/data" -w -t "$PTSLOG_SERVICE_TIMEOUT" -m fast stop >/dev/null || return 1
    fi
    (PTSLOG_PG_PORT=$PTSLOG_PG_PAIR_PORT PTSLOG_PG_DIR=$_PAIR_BASE/primary stop_postgres)
}

# ---------------------------------------------------------------------------
# Redis
# ---------------------------------------------------------------------------
# tools built once per machine, and the daemons started from them
# ---------------------------------------------------------------------------

# _ensure_cargo_tool ROOT NAME VERSION FEATURES - `cargo install` NAME into ROOT unless
# ROOT/bin/NAME is there, under a lock of its own (a build takes far longer than the
# services lock waits), so concurrent runs build it once.
_ensure_cargo_tool() {
    local root=$1 name=$2 version=$3 features=$4
    [ -x "$root/bin/$name" ] && return 0
    ensure_cargo || return 1
    mkdir -p "$root" || return 1
    (
        if command -v flock >/dev/null 2>&1; then
            exec 8>"$root/.build.lock" || exit 1
            flock -w 7200 8 || {
                ptslog_err "timed out waiting for another $name build"
                exit 1
            }
        fi
        [ -x "$root/bin/$name" ] && exit 0 # built by a concurrent run meanwhile
        ptslog_log "building $name $version into $root (once per machine; takes a while)"
        if ! nice cargo install "$name" --version "$version" --features "$features" --locked \
            --root "$root" >"$root/build.log" 2>&1; then
            ptslog_err "cargo install $name failed"
            _ptslog_tail "$root/build.log"
            exit 1
        fi
    )
}

# _port_open PORT - whether something listens on 127.0.0.1:PORT
_port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# _pidfile_pid PIDFILE COMM - the pid in PIDFILE, if that process is alive and its name holds COMM
_pidfile_pid() {
    local pid
    [ -r "$1" ] || return 1
    pid=$(cat "$1" 2>/dev/null)
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
    grep -q "$2" "/proc/$pid/comm" 2>/dev/null || return 1
    printf '%s\n' "$pid"
}

# _start_daemon LABEL PORT PIDFILE COMM LOG LAUNCH - reuse whatever serves 127.0.0.1:PORT, else
# run the function LAUNCH (which starts the daemon and writes PIDFILE) and wait until it listens.
_start_daemon() {
    local label=$1 port=$2 pidfile=$3 comm=$4 log=$5 launch=$6 i
    if _port_open "$port"; then
        if _pidfile_pid "$pidfile" "$comm" >/dev/null; then
            ptslog_log "$label already running on 127.0.0.1:$port - reusing it"
        else
            ptslog_log "something already serves 127.0.0.1:$port (not ours) - reusing it as $label"
        fi
        return 0
    fi
    rm -f "$pidfile"
    _ptslog_rotate_log "$log"
    ptslog_log "starting $label on 127.0.0.1:$port (log $log)"
    _ptslog_spawn "$launch" || return 1
    for ((i = 0; i < PTSLOG_SERVICE_TIMEOUT * 4; i++)); do
        _port_open "$port" && return 0
        # Only whether it lives: until `setsid` has exec'd the daemon the pid's name is still the
        # shell's or setsid's, and on a busy machine that window lasts long enough to be seen.
        if ! kill -0 "$(cat "$pidfile" 2>/dev/null)" 2>/dev/null; then
            ptslog_err "$label exited during startup"
            _ptslog_tail "$log"
            return 1
        fi
        sleep 0.25
    done
    ptslog_err "$label did not listen on 127.0.0.1:$port within ${PTSLOG_SERVICE_TIMEOUT}s"
    _ptslog_tail "$log"
    return 1
}

# _stop_daemon LABEL PIDFILE COMM - SIGTERM the daemon of PIDFILE, SIGKILL after 10 s.
_stop_daemon() {
    local label=$1 pidfile=$2 comm=$3 pid i
    if ! pid=$(_pidfile_pid "$pidfile" "$comm"); then
        ptslog_log "private $label is not running"
        return 0
    fi
    ptslog_log "stopping $label (pid $pid)"
    kill "$pid" 2>/dev/null || true
    for ((i = 0; i < 40; i++)); do
        kill -0 "$pid" 2>/dev/null || {
            rm -f "$pidfile"
            return 0
        }
        sleep 0.25
    done
    ptslog_log "$label (pid $pid) ignored SIGTERM - sending SIGKILL"
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$pidfile"
}

# ---------------------------------------------------------------------------

_redis_ensure_installed() {
    if command -v redis-server >/dev/null 2>&1 && command -v redis-cli >/dev/null 2>&1; then
        return 0
    fi
    ptslog_log "redis-server/redis-cli not found - installing the 'redis-server' package"
    ensure_apt_packages redis-server redis-tools || return 1
    command -v redis-server >/dev/null 2>&1 && command -v redis-cli >/dev/null 2>&1
}

_redis_paths() {
    _REDIS_DIR=$PTSLOG_DATA_DIR/redis
    _REDIS_LOG=$_REDIS_DIR/redis.log
    _REDIS_PID=$_REDIS_DIR/redis-$PTSLOG_REDIS_PORT.pid
}

_redis_ping() {
    [ "$(redis-cli -h 127.0.0.1 -p "$PTSLOG_REDIS_PORT" ping 2>/dev/null)" = PONG ]
}

# pid from our pidfile if that process is alive and is a redis-server
_redis_our_pid() {
    local pid
    [ -r "$_REDIS_PID" ] || return 1
    pid=$(cat "$_REDIS_PID" 2>/dev/null)
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
    grep -q redis "/proc/$pid/comm" 2>/dev/null || return 1
    printf '%s\n' "$pid"
}

_start_redis_locked() {
    if _redis_ping; then
        if _redis_our_pid >/dev/null; then
            ptslog_log "Redis already running on 127.0.0.1:$PTSLOG_REDIS_PORT - reusing it"
        else
            ptslog_log "something already serves Redis on 127.0.0.1:$PTSLOG_REDIS_PORT (not ours) - reusing it"
        fi
        return 0
    fi
    rm -f "$_REDIS_PID"
    _ptslog_rotate_log "$_REDIS_LOG"
    ptslog_log "starting Redis on 127.0.0.1:$PTSLOG_REDIS_PORT (dir $_REDIS_DIR, log $_REDIS_LOG)"
    if ! (cd "$_REDIS_DIR" && _ptslog_spawn redis-server \
        --port "$PTSLOG_REDIS_PORT" --bind 127.0.0.1 \
        --save "" --appendonly no \
        --daemonize yes \
        --dir "$_REDIS_DIR" \
        --logfile "$_REDIS_LOG" \
        --pidfile "$_REDIS_PID" >/dev/null 2>&1); then
        ptslog_err "redis-server failed to start"
        _ptslog_tail "$_REDIS_LOG"
        return 1
    fi
    local i
    for ((i = 0; i < PTSLOG_SERVICE_TIMEOUT * 4; i++)); do
        _redis_ping && return 0
        sleep 0.25
    done
    ptslog_err "Redis did not answer PING on 127.0.0.1:$PTSLOG_REDIS_PORT within ${PTSLOG_SERVICE_TIMEOUT}s"
    _ptslog_tail "$_REDIS_LOG"
    return 1
}

# start_redis - start (or reuse) the private Redis and export its URLs.
start_redis() {
    _ptslog_init_paths || return 1
    _redis_ensure_installed || return 1
    _redis_paths
    mkdir -p "$_REDIS_DIR" || return 1
    _ptslog_with_lock _start_redis_locked || return 1
    REDIS_URL=redis://127.0.0.1:$PTSLOG_REDIS_PORT
    PTSLOG_TEST_REDIS_URL=$REDIS_URL
    export REDIS_URL PTSLOG_TEST_REDIS_URL PTSLOG_REDIS_PORT
    ptslog_log "Redis ready: $REDIS_URL"
}

stop_redis() {
    _ptslog_init_paths || return 1
    _redis_paths
    local pid i
    if ! pid=$(_redis_our_pid); then
        ptslog_log "private Redis ($_REDIS_DIR) is not running"
        return 0
    fi
    ptslog_log "stopping Redis (pid $pid, port $PTSLOG_REDIS_PORT)"
    redis-cli -h 127.0.0.1 -p "$PTSLOG_REDIS_PORT" shutdown nosave >/dev/null 2>&1 || true
    for ((i = 0; i < 40; i++)); do
        kill -0 "$pid" 2>/dev/null || { rm -f "$_REDIS_PID"; return 0; }
        sleep 0.25
    done
    ptslog_log "Redis (pid $pid) ignored SHUTDOWN - sending SIGTERM"
    kill "$pid" 2>/dev/null || true
    for ((i = 0; i < 40; i++)); do
        kill -0 "$pid" 2>/dev/null || { rm -f "$_REDIS_PID"; return 0; }
        sleep 0.25
    done
    ptslog_err "could not stop Redis (pid $pid)"
    return 1
}

# ---------------------------------------------------------------------------
# Kafka (tansu)
# ---------------------------------------------------------------------------

# A private tansu broker (a Kafka-protocol broker written in Rust) for the
# tests of the Kafka path: in-memory storage (a restart starts empty, which is
# all tests need), on 127.0.0.1:$PTSLOG_KAFKA_PORT, with the topic pre-created.
# The broker binary is built once with `cargo install` and cached outside the
# work tree, so CI builds it only on a fresh machine.
#
#   PTSLOG_KAFKA_PORT        broker port                (default 59092)
#   PTSLOG_TOOLS_DIR         cache of built tools       (default ~/.cache/ptslog/tools)
#   PTSLOG_KAFKA_TOPIC       topic to pre-create        (default ptslog.user-updates)
#   PTSLOG_KAFKA_PARTITIONS  its partitions             (default 16)
#
# Exported after start:
#   PTSLOG_TEST_KAFKA_BROKERS  127.0.0.1:<port> (what tests pass as KAFKA_BROKERS)
#   PTSLOG_TEST_TANSU          the broker binary (tests start brokers of their own
#                              to stop and restart them)

PTSLOG_TANSU_VERSION=0.6.0

_kafka_paths() {
    PTSLOG_KAFKA_PORT=${PTSLOG_KAFKA_PORT:-59092}
    _TANSU_ROOT=${PTSLOG_TOOLS_DIR:-$HOME/.cache/ptslog/tools}/tansu-$PTSLOG_TANSU_VERSION
    _TANSU_BIN=$_TANSU_ROOT/bin/tansu
    _KAFKA_DIR=$PTSLOG_DATA_DIR/kafka
    _KAFKA_LOG=$_KAFKA_DIR/tansu.log
    _KAFKA_PID=$_KAFKA_DIR/tansu-$PTSLOG_KAFKA_PORT.pid
}

# ensure_tansu - the cached tansu binary; builds it if missing.
ensure_tansu() {
    _ptslog_init_paths || return 1
    _kafka_paths
    _ensure_cargo_tool "$_TANSU_ROOT" tansu "$PTSLOG_TANSU_VERSION" dynostore
}

_kafka_launch() {
    # setsid: the broker must not share the caller's process group (or its fate).
    setsid "$_TANSU_BIN" broker \
        --listener-url "tcp://127.0.0.1:$PTSLOG_KAFKA_PORT" \
        --advertised-listener-url "tcp://127.0.0.1:$PTSLOG_KAFKA_PORT" \
        --storage-engine "memory://tansu/" >>"$_KAFKA_LOG" 2>&1 &
    echo $! >"$_KAFKA_PID"
}

# _kafka_topic - pre-create the topic (tansu does not create topics on use).
_kafka_topic() {
    local topic=${PTSLOG_KAFKA_TOPIC:-ptslog.user-updates} partitions=${PTSLOG_KAFKA_PARTITIONS:-16} i
    local broker=tcp://127.0.0.1:$PTSLOG_KAFKA_PORT
    for ((i = 0; i < 20; i++)); do
        if "$_TANSU_BIN" topic list --broker "$broker" 2>/dev/null | grep -qF "$topic"; then
            return 0
        fi
        "$_TANSU_BIN" topic create --broker "$broker" --partitions "$partitions" "$topic" >>"$_KAFKA_LOG" 2>&1 || true
        sleep 0.5
    done
    ptslog_err "could not create topic $topic on $broker"
    _ptslog_tail "$_KAFKA_LOG"
    return 1
}

_start_kafka_locked() {
    _start_daemon tansu "$PTSLOG_KAFKA_PORT" "$_KAFKA_PID" tansu "$_KAFKA_LOG" _kafka_launch || return 1
    _kafka_topic
}

# start_kafka - start (or reuse) the private tansu broker and export its address.
start_kafka() {
    ensure_tansu || return 1
    mkdir -p "$_KAFKA_DIR" || return 1
    _ptslog_with_lock _start_kafka_locked || return 1
    PTSLOG_TEST_KAFKA_BROKERS=127.0.0.1:$PTSLOG_KAFKA_PORT
    PTSLOG_TEST_TANSU=$_TANSU_BIN
    export PTSLOG_TEST_KAFKA_BROKERS PTSLOG_TEST_TANSU PTSLOG_KAFKA_PORT
    ptslog_log "Kafka (tansu) ready: $PTSLOG_TEST_KAFKA_BROKERS"
}

# stop_kafka - stop the private broker (its in-memory data goes with it).
stop_kafka() {
    _ptslog_init_paths || return 1
    _kafka_paths
    _stop_daemon "tansu (port $PTSLOG_KAFKA_PORT)" "$_KAFKA_PID" tansu
}

# ---------------------------------------------------------------------------
# S3 (s3s-fs)
# ---------------------------------------------------------------------------

# A private S3-protocol server (s3s-fs, written in Rust: objects are files under
# a folder) for the tests of the S3 blob store, on 127.0.0.1:$PTSLOG_S3_PORT,
# with the test bucket pre-created and fixed test credentials. Built once with
# `cargo install` and cached outside the work tree, like tansu.
#
#   PTSLOG_S3_PORT           server port                (default 59014)
#   PTSLOG_TOOLS_DIR         cache of built tools       (default ~/.cache/ptslog/tools)
#
# Exported after start:
#   PTSLOG_TEST_S3_ENDPOINT    http://127.0.0.1:<port>
#   PTSLOG_TEST_S3_BUCKET      the test bucket (each test keeps its keys under a random
#                              prefix, PTSLOG_S3_PREFIX, so tests never see each other's)
#   PTSLOG_TEST_S3_ACCESS_KEY / PTSLOG_TEST_S3_SECRET_KEY
#   PTSLOG_TEST_S3_ROOT        the server's data folder (a bucket is a folder in it)

# 0.14.1: the newest release that builds with the workspace's toolchain (0.15+ need Rust 1.96).
PTSLOG_S3S_VERSION=0.14.1
PTSLOG_TEST_S3_ACCESS_KEY=${PTSLOG_TEST_S3_ACCESS_KEY:-ptslog-test}
PTSLOG_TEST_S3_SECRET_KEY=${PTSLOG_TEST_S3_SECRET_KEY:-ptslog-test-secret}
PTSLOG_TEST_S3_BUCKET=${PTSLOG_TEST_S3_BUCKET:-ptslog-test}

_s3_paths() {
    PTSLOG_S3_PORT=${PTSLOG_S3_PORT:-59014}
    _S3S_ROOT=${PTSLOG_TOOLS_DIR:-$HOME/.cache/ptslog/tools}/s3s-fs-$PTSLOG_S3S_VERSION
    _S3S_BIN=$_S3S_ROOT/bin/s3s-fs
    _S3_DIR=$PTSLOG_DATA_DIR/s3
    _S3_DATA=$_S3_DIR/data
    _S3_LOG=$_S3_DIR/s3s-fs.log
    _S3_PID=$_S3_DIR/s3s-fs-$PTSLOG_S3_PORT.pid
}

# ensure_s3s - the cached s3s-fs binary; builds it if missing.
ensure_s3s() {
    _ptslog_init_paths || return 1
    _s3_paths
    _ensure_cargo_tool "$_S3S_ROOT" s3s-fs "$PTSLOG_S3S_VERSION" binary
}

_s3_launch() {
    setsid "$_S3S_BIN" --host 127.0.0.1 --port "$PTSLOG_S3_PORT" \
        --access-key "$PTSLOG_TEST_S3_ACCESS_KEY" --secret-key "$PTSLOG_TEST_S3_SECRET_KEY" \
        "$_S3_DATA" >>"$_S3_LOG" 2>&1 &
    echo $! >"$_S3_PID"
}

_start_s3_locked() {
    # A bucket is a folder of the server's root.
    mkdir -p "$_S3_DATA/$PTSLOG_TEST_S3_BUCKET" || return 1
    _start_daemon s3s-fs "$PTSLOG_S3_PORT" "$_S3_PID" s3s "$_S3_LOG" _s3_launch
}

# start_s3 - start (or reuse) the private S3 server and export its address and credentials.
start_s3() {
    ensure_s3s || return 1
    mkdir -p "$_S3_DIR" || return 1
    _ptslog_with_lock _start_s3_locked || return 1
    PTSLOG_TEST_S3_ENDPOINT=http://127.0.0.1:$PTSLOG_S3_PORT
    PTSLOG_TEST_S3_ROOT=$_S3_DATA
    export PTSLOG_TEST_S3_ENDPOINT PTSLOG_TEST_S3_BUCKET PTSLOG_TEST_S3_ACCESS_KEY \
        PTSLOG_TEST_S3_SECRET_KEY PTSLOG_TEST_S3_ROOT PTSLOG_S3_PORT
    ptslog_log "S3 (s3s-fs) ready: $PTSLOG_TEST_S3_ENDPOINT"
}

# stop_s3 - stop the private S3 server (its data folder is kept).
stop_s3() {
    _ptslog_init_paths || return 1
    _s3_paths
    _stop_daemon "s3s-fs (port $PTSLOG_S3_PORT)" "$_S3_PID" s3s
}

# ---------------------------------------------------------------------------
# all services
# ---------------------------------------------------------------------------

start_services() {
    start_postgres || return 1
    start_redis || return 1
    start_kafka || return 1
    start_s3 || return 1
}

stop_services() {
    local rc=0
    stop_s3 || rc=1
    stop_kafka || rc=1
    stop_redis || rc=1
    stop_postgres || rc=1
    return "$rc"
}

print_service_env() {
    local v
    for v in DATABASE_URL PTSLOG_TEST_DATABASE_URL PTSLOG_TEST_PG_SSLROOTCERT REDIS_URL PTSLOG_TEST_REDIS_URL PTSLOG_TEST_KAFKA_BROKERS PTSLOG_TEST_TANSU PTSLOG_TEST_S3_ENDPOINT PTSLOG_TEST_S3_BUCKET PTSLOG_TEST_S3_ACCESS_KEY PTSLOG_TEST_S3_SECRET_KEY PTSLOG_TEST_S3_ROOT; do
        if [ -n "${!v:-}" ]; then printf 'export %s=%q\n' "$v" "${!v}"; fi
    done
}

services_status() {
    _ptslog_init_paths || return 1
    _pg_choose_dir || return 1
    _redis_paths
    local pg="not running" redis="not running"
    if _pg_find_bindir 2>/dev/null; then
        if _pg_is_ours_running; then
            pg="running (private, $_PG_DATA)"
        elif _pg_ready; then
            pg="answering, but not the private cluster $_PG_DATA"
        fi
    else
        pg="binaries not installed"
    fi
    if command -v redis-cli >/dev/null 2>&1 && _redis_ping; then
        if _redis_our_pid >/dev/null; then redis="running (private, $_REDIS_DIR)"; else redis="answering, but not ours"; fi
    fi
    printf 'data dir : %s\n' "$PTSLOG_DATA_DIR"
    printf 'postgres : 127.0.0.1:%s  %s  (log %s)\n' "$PTSLOG_PG_PORT" "$pg" "$_PG_LOG"
    printf 'redis    : 127.0.0.1:%s  %s  (log %s)\n' "$PTSLOG_REDIS_PORT" "$redis" "$_REDIS_LOG"
    _kafka_paths
    local kafka="not running"
    if _port_open "$PTSLOG_KAFKA_PORT"; then
        if _pidfile_pid "$_KAFKA_PID" tansu >/dev/null; then kafka="running (private tansu)"; else kafka="answering, but not ours"; fi
    fi
    printf 'kafka    : 127.0.0.1:%s  %s  (log %s)\n' "$PTSLOG_KAFKA_PORT" "$kafka" "$_KAFKA_LOG"
    _s3_paths
    local s3="not running"
    if _port_open "$PTSLOG_S3_PORT"; then
        if _pidfile_pid "$_S3_PID" s3s >/dev/null; then s3="running (private s3s-fs)"; else s3="answering, but not ours"; fi
    fi
    printf 's3       : 127.0.0.1:%s  %s  (log %s)\n' "$PTSLOG_S3_PORT" "$s3" "$_S3_LOG"
}
