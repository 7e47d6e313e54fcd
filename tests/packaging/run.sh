#!/usr/bin/env bash
# Installs the packages .ci/package made as a user without a Rust toolchain would, and runs each:
#   - the wheel into a fresh virtualenv (`pip install dist/thinkledger-*.whl`, no index);
#   - the two npm tarballs into an empty npm project (`npm install` of the local files only);
# then, for each, the official Python MCP SDK starts `thinkledger serve` (`npx thinkledger serve`)
# with a PATH that holds no cargo or rustc, records a three-thought session (client.py), and
# `thinkledger verify` must pass on the ledger it wrote. The wheel must be at most 20 MB.
#
# Usage: tests/packaging/run.sh [DIST]   (default: dist/). Needs python3 >= 3.10 with venv, and
# Node >= 18 with npm. The SDK client comes from tests/sdk/python/.venv (made here from
# tests/sdk/python/requirements.txt when missing, as tests/sdk/run.sh makes it).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
dist=$(cd "${1:-$root/dist}" && pwd)
say() { printf '[packaging] %s\n' "$*" >&2; }
fail() { say "FAIL: $*"; exit 1; }

max_wheel_bytes=20000000
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$root/Cargo.toml" | head -n 1)
wheel=$(ls "$dist"/thinkledger-"$version"-*.whl)
npm_main=$dist/thinkledger-$version.tgz
npm_platform=$(ls "$dist"/thinkledger-*-"$version".tgz | grep -v "/thinkledger-$version.tgz$")
for f in "$wheel" "$npm_main" "$npm_platform"; do [[ -f "$f" ]] || fail "no $f"; done
(cd "$dist" && sha256sum --quiet -c SHA256SUMS) || fail "SHA256SUMS does not match dist/"

wheel_bytes=$(stat -c %s "$wheel")
say "wheel $(basename "$wheel"): $wheel_bytes bytes (at most $max_wheel_bytes)"
((wheel_bytes <= max_wheel_bytes)) || fail "the wheel is $wheel_bytes bytes, over $max_wheel_bytes"

sdk=$root/tests/sdk/python/.venv
if [[ ! -f "$sdk/.installed" || "$root/tests/sdk/python/requirements.txt" -nt "$sdk/.installed" ]]; then
  say "installing the Python SDK into tests/sdk/python/.venv"
  python3 -m venv "$sdk"
  "$sdk/bin/pip" install --quiet --disable-pip-version-check -r "$root/tests/sdk/python/requirements.txt"
  touch "$sdk/.installed"
fi

# A PATH a user without Rust has: the system's directories and node's, never cargo's.
node_dir=$(dirname "$(command -v node)")
clean_path=/usr/bin:/bin
[[ ":$clean_path:" == *":$node_dir:"* ]] || clean_path=$clean_path:$node_dir
for tool in cargo rustc rustup; do
  if found=$(env PATH="$clean_path" bash -c "command -v $tool"); then
    fail "the clean PATH $clean_path still finds $tool ($found)"
  fi
done
# Runs a command as the user would: nothing of this environment but HOME and that PATH, with
# DIR in front of it when one is given (`as_user DIR COMMAND…`, `as_user - COMMAND…`).
as_user() {
  local path=$clean_path
  [[ "$1" == - ]] || path=$1:$clean_path
  shift
  env -i HOME="$HOME" LANG=C.UTF-8 PATH="$path" "$@"
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# --- the wheel, in a fresh virtualenv ----------------------------------------------------------
started=$SECONDS
python3 -m venv "$work/venv"
as_user "$work/venv/bin" pip install --quiet --disable-pip-version-check --no-index "$wheel"
found=$(as_user "$work/venv/bin" bash -c 'command -v thinkledger')
[[ "$found" == "$work/venv/bin/thinkledger" ]] || fail "pip put thinkledger at '$found'"
as_user "$work/venv/bin" thinkledger --version
as_user "$work/venv/bin" "$sdk/bin/python" "$here/client.py" \
  thinkledger --data-dir "$work/wheel-data" serve || fail "the wheel's thinkledger serve"
as_user "$work/venv/bin" thinkledger --data-dir "$work/wheel-data" verify >"$work/verify.txt" ||
  { cat "$work/verify.txt"; fail "verify of the wheel's ledger"; }
grep -q 'intact: 3 events' "$work/verify.txt" || { cat "$work/verify.txt"; fail "not 3 events"; }
say "wheel: installed, served a three-thought session, verified ($((SECONDS - started)) s)"

# --- the npm packages, in an empty npm project -------------------------------------------------
# Only the two local tarballs: the main package's optional dependency on the platform package is
# met by the platform tarball installed beside it, so no registry is asked for either.
started=$SECONDS
mkdir "$work/project"
cd "$work/project"
as_user - npm init -y >/dev/null
as_user - npm install --no-audit --no-fund --loglevel=error --offline "$npm_platform" "$npm_main"
[[ -x node_modules/.bin/thinkledger ]] || fail "npm put no node_modules/.bin/thinkledger"
as_user - npx --offline thinkledger --version
# The launcher passes the binary's exit status back: clap's 2 for an unknown option.
rc=0
as_user - npx --offline thinkledger --no-such-option 2>/dev/null || rc=$?
((rc == 2)) || fail "npx thinkledger --no-such-option exited $rc, not the binary's 2"
as_user - "$sdk/bin/python" "$here/client.py" \
  npx --offline thinkledger --data-dir "$work/npm-data" serve || fail "npx thinkledger serve"
as_user - npx --offline thinkledger --data-dir "$work/npm-data" verify >"$work/verify.txt" ||
  { cat "$work/verify.txt"; fail "verify of npx's ledger"; }
grep -q 'intact: 3 events' "$work/verify.txt" || { cat "$work/verify.txt"; fail "not 3 events"; }
say "npm: installed, served a three-thought session, verified ($((SECONDS - started)) s)"
